// RUN: mlconv-opt %s --pass-pipeline='builtin.module(core-fuse)' --split-input-file | filecheck %s

// Convolution + BatchNormInference with constant statistics: one convolution with rescaled
// filters (gamma / sqrt(var + eps) = 2 here) and a per-channel bias (beta - mean * scale).

// CHECK-LABEL: func.func @conv_bn
// CHECK:         %[[W:.*]] = core.Constant {value = dense<2.000000e+00> : tensor<2x1x1x1xf32>}
// CHECK:         %[[B:.*]] = core.Constant {value = dense<{{\[\[\[}}-1.000000e+00]], {{\[\[}}3.000000e+00]]]> : tensor<2x1x1xf32>}
// CHECK:         %[[C:.*]] = "core.Convolution"(%{{.*}}, %[[W]])
// CHECK:         %[[Y:.*]] = "core.Add"(%[[C]], %[[B]])
// CHECK-NOT:     core.BatchNormInference
// CHECK:         func.return %[[Y]]
func.func @conv_bn(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = core.Constant {value = dense<1.0> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %c = "core.Convolution"(%x, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %gamma = core.Constant {value = dense<2.0> : tensor<2xf32>} : tensor<2xf32>
  %beta = core.Constant {value = dense<[0.0, 4.0]> : tensor<2xf32>} : tensor<2xf32>
  %mean = core.Constant {value = dense<[0.5, 0.5]> : tensor<2xf32>} : tensor<2xf32>
  %var = core.Constant {value = dense<1.0> : tensor<2xf32>} : tensor<2xf32>
  %y = "core.BatchNormInference"(%c, %gamma, %beta, %mean, %var) {epsilon = 0.0 : f64} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// Keras' batch norm after a convolution (tf-to-core): Convolution * scale + shift. The scale
// goes into the filters, per output channel.

// CHECK-LABEL: func.func @multiply_into_convolution
// CHECK:         %[[W:.*]] = core.Constant {value = dense<{{\[\[\[\[}}1.000000e+00]]], {{\[\[\[}}-1.500000e+00]]]]> : tensor<2x1x1x1xf32>}
// CHECK:         %[[C:.*]] = "core.Convolution"(%{{.*}}, %[[W]])
// CHECK:         %[[Y:.*]] = "core.Add"(%[[C]], %{{.*}})
// CHECK-NOT:     core.Multiply
// CHECK:         func.return %[[Y]]
func.func @multiply_into_convolution(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = core.Constant {value = dense<0.5> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %s = core.Constant {value = dense<[[[2.0]], [[-3.0]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
  %b = core.Constant {value = dense<[[[1.0]], [[0.5]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
  %c = "core.Convolution"(%x, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %m = "core.Multiply"(%c, %s) : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %y = "core.Add"(%m, %b) : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// Negative: a scale that varies along a spatial dim cannot go into the filters.

// CHECK-LABEL: func.func @no_multiply_spatial_scale
// CHECK:         core.Convolution
// CHECK:         "core.Multiply"
func.func @no_multiply_spatial_scale(%x: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %w = core.Constant {value = dense<1.0> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %s = core.Constant {value = dense<[[2.0], [3.0]]> : tensor<2x1xf32>} : tensor<2x1xf32>
  %c = "core.Convolution"(%x, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %y = "core.Multiply"(%c, %s) : (tensor<1x2x2x2xf32>, tensor<2x1xf32>) -> tensor<1x2x2x2xf32>
  func.return %y : tensor<1x2x2x2xf32>
}

// -----

// Negative: the convolution's result is used elsewhere as well (an extra use).

// CHECK-LABEL: func.func @no_multiply_extra_use
// CHECK:         core.Convolution
// CHECK:         "core.Multiply"
func.func @no_multiply_extra_use(%x: tensor<1x1x2x2xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %w = core.Constant {value = dense<1.0> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %s = core.Constant {value = dense<[[[2.0]], [[3.0]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
  %c = "core.Convolution"(%x, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %y = "core.Multiply"(%c, %s) : (tensor<1x2x2x2xf32>, tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32>
  func.return %y, %c : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}

// -----

// A column scale after a MatMul with transposed weights scales the weights' rows.

// CHECK-LABEL: func.func @multiply_into_matmul
// CHECK:         %[[W:.*]] = core.Constant {value = dense<{{\[\[}}1.000000e+00, 1.000000e+00], [1.500000e+00, 1.500000e+00], [2.000000e+00, 2.000000e+00]]> : tensor<3x2xf32>}
// CHECK:         %[[Y:.*]] = "core.MatMul"(%{{.*}}, %[[W]]) {transpose_a = false, transpose_b = true}
// CHECK:         func.return %[[Y]]
func.func @multiply_into_matmul(%x: tensor<4x2xf32>) -> tensor<4x3xf32> {
  %w = core.Constant {value = dense<0.5> : tensor<3x2xf32>} : tensor<3x2xf32>
  %s = core.Constant {value = dense<[2.0, 3.0, 4.0]> : tensor<3xf32>} : tensor<3xf32>
  %m = "core.MatMul"(%x, %w) {transpose_a = false, transpose_b = true} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xf32>
  %y = "core.Multiply"(%m, %s) : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  func.return %y : tensor<4x3xf32>
}

// -----

// A batch norm after a biased convolution: (conv + b) * scale + shift, then the scale goes
// into the filters and the two shifts add up: one Convolution and one Add remain.

// CHECK-LABEL: func.func @batch_norm_after_bias
// CHECK:         %[[C:.*]] = "core.Convolution"
// CHECK:         %[[Y:.*]] = "core.Add"(%[[C]], %{{.*}})
// CHECK-NOT:     core.Multiply
// CHECK-NOT:     core.BatchNormInference
// CHECK:         func.return %[[Y]]
func.func @batch_norm_after_bias(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = core.Constant {value = dense<0.5> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %b = core.Constant {value = dense<[[[1.0]], [[2.0]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
  %c = "core.Convolution"(%x, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %cb = "core.Add"(%c, %b) : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %gamma = core.Constant {value = dense<2.0> : tensor<2xf32>} : tensor<2xf32>
  %beta = core.Constant {value = dense<[0.0, 4.0]> : tensor<2xf32>} : tensor<2xf32>
  %mean = core.Constant {value = dense<[0.5, 0.5]> : tensor<2xf32>} : tensor<2xf32>
  %var = core.Constant {value = dense<1.0> : tensor<2xf32>} : tensor<2xf32>
  %y = "core.BatchNormInference"(%cb, %gamma, %beta, %mean, %var) {epsilon = 0.0 : f64} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// Negative: a batch norm after something other than a convolution or MatMul stays.

// CHECK-LABEL: func.func @no_batch_norm_after_relu
// CHECK:         core.BatchNormInference
func.func @no_batch_norm_after_relu(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %r = "core.Relu"(%x) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %gamma = core.Constant {value = dense<2.0> : tensor<2xf32>} : tensor<2xf32>
  %beta = core.Constant {value = dense<[0.0, 4.0]> : tensor<2xf32>} : tensor<2xf32>
  %mean = core.Constant {value = dense<[0.5, 0.5]> : tensor<2xf32>} : tensor<2xf32>
  %var = core.Constant {value = dense<1.0> : tensor<2xf32>} : tensor<2xf32>
  %y = "core.BatchNormInference"(%r, %gamma, %beta, %mean, %var) {epsilon = 0.0 : f64} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// Negative: whole-number weights are an exact integer computation (the int8 TFLite lowering);
// the requantizing scale and the bias stay where they are.

// CHECK-LABEL: func.func @no_fold_integer_weights
// CHECK:         %[[C:.*]] = "core.Convolution"
// CHECK:         %[[A:.*]] = "core.Add"(%[[C]], %{{.*}})
// CHECK:         "core.Multiply"(%[[A]], %{{.*}})
func.func @no_fold_integer_weights(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = core.Constant {value = dense<[[[[3.0]]], [[[-7.0]]]]> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %b = core.Constant {value = dense<[[[5.0]], [[-2.0]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
  %s = core.Constant {value = dense<[[[0.013]], [[0.021]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
  %c = "core.Convolution"(%x, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %a = "core.Add"(%c, %b) : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %y = "core.Multiply"(%a, %s) : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}
