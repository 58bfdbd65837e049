// RUN: mlconv-opt %s -p 'core-quantize{mode=static}' --split-input-file | filecheck %s --check-prefix=STATIC
// RUN: mlconv-opt %s -p 'core-quantize{mode=dynamic}' --split-input-file | filecheck %s --check-prefix=DYNAMIC
// RUN: mlconv-opt %s -p 'core-quantize{mode=weight-only}' --split-input-file | filecheck %s --check-prefix=WEIGHTS

// Weights per output channel, symmetric, 255 levels; the data over its calibrated range,
// widened to hold 0 and nudged so 0 is a level ([-1, 3] -> [-1.0039, 2.9961]).

// STATIC-LABEL: func.func @conv
// STATIC:         %[[LW:.*]] = core.Constant {value = dense<{{\[}}[{{\[}}[-1.000000e+00]]], [{{\[}}[-2.500000e-01]]], [{{\[}}[-1.000000e+00]]]]> : tensor<3x1x1x1xf32>}
// STATIC:         %[[HW:.*]] = core.Constant {value = dense<{{\[}}[{{\[}}[1.000000e+00]]], [{{\[}}[2.500000e-01]]], [{{\[}}[1.000000e+00]]]]> : tensor<3x1x1x1xf32>}
// STATIC:         %[[W:.*]] = "core.FakeQuantize"(%w, %[[LW]], %[[HW]], %[[LW]], %[[HW]]) {levels = 255 : i64}
// STATIC:         %[[LX:.*]] = core.Constant {value = dense<-1.00392163> : tensor<1xf32>}
// STATIC:         %[[HX:.*]] = core.Constant {value = dense<2.99607849> : tensor<1xf32>}
// STATIC:         %[[X:.*]] = "core.FakeQuantize"(%x, %[[LX]], %[[HX]], %[[LX]], %[[HX]]) {levels = 256 : i64}
// STATIC:         "core.Convolution"(%[[X]], %[[W]])
// STATIC-NOT:     mlconv.input_range

// DYNAMIC-LABEL: func.func @conv
// DYNAMIC:         %[[W:.*]] = "core.FakeQuantize"(%w, {{.*}}) {levels = 255 : i64}
// DYNAMIC:         %[[MIN:.*]] = "core.ReduceMin"(%x, %{{.*}}) {keep_dims = false}
// DYNAMIC:         %[[MAX:.*]] = "core.ReduceMax"(%x, %{{.*}}) {keep_dims = false}
// DYNAMIC:         %[[LO:.*]] = "core.Minimum"(%[[MIN]], %{{.*}})
// DYNAMIC:         %[[HI:.*]] = "core.Maximum"(%[[MAX]], %{{.*}})
// DYNAMIC:         %[[X:.*]] = "core.FakeQuantize"(%x, %[[LO]], %[[HI]], %[[LO]], %[[HI]]) {levels = 256 : i64}
// DYNAMIC:         "core.Convolution"(%[[X]], %[[W]])

// WEIGHTS-LABEL: func.func @conv
// WEIGHTS:         %[[W:.*]] = "core.FakeQuantize"(%w, {{.*}}) {levels = 255 : i64}
// WEIGHTS-NOT:     levels = 256
// WEIGHTS:         "core.Convolution"(%x, %[[W]])
func.func @conv(%x: tensor<1x2x4x4xf32>) -> tensor<1x3x4x4xf32> {
  %w = core.Constant {value = dense<[[[[0.5]], [[-1.0]]], [[[0.25]], [[0.125]]], [[[0.0]], [[0.0]]]]> : tensor<3x2x1x1xf32>} : tensor<3x2x1x1xf32>
  %y = "core.Convolution"(%x, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>, mlconv.input_range = array<f32: -1.0, 3.0>} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32>
  func.return %y : tensor<1x3x4x4xf32>
}

// -----

// MatMul with transposed weights: one range per row of b (an output column); a range that
// stays above 0 is widened down to 0 (post-ReLU data).

// STATIC-LABEL: func.func @matmul_transposed
// STATIC:         %[[LW:.*]] = core.Constant {value = dense<{{\[}}[-2.000000e+00], [-4.000000e+00]]> : tensor<2x1xf32>}
// STATIC:         %[[LX:.*]] = core.Constant {value = dense<0.000000e+00> : tensor<1xf32>}
// STATIC:         %[[HX:.*]] = core.Constant {value = dense<5.000000e+00> : tensor<1xf32>}
// STATIC:         "core.MatMul"(%{{.*}}, %{{.*}}) {transpose_b = true}

// WEIGHTS-LABEL: func.func @matmul_transposed
// WEIGHTS:         core.Constant {value = dense<{{\[}}[-2.000000e+00], [-4.000000e+00]]> : tensor<2x1xf32>}
func.func @matmul_transposed(%x: tensor<1x3xf32>) -> tensor<1x2xf32> {
  %w = core.Constant {value = dense<[[1.0, -2.0, 0.5], [4.0, 1.0, -3.0]]> : tensor<2x3xf32>} : tensor<2x3xf32>
  %y = "core.MatMul"(%x, %w) {transpose_b = true, mlconv.input_range = array<f32: 1.0, 5.0>} : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}

// -----

// Weights that are not constants are left alone (nothing to calibrate either).

// STATIC-LABEL: func.func @matmul_of_values
// STATIC-NOT:     core.FakeQuantize
// DYNAMIC-LABEL: func.func @matmul_of_values
// DYNAMIC-NOT:     core.FakeQuantize
func.func @matmul_of_values(%x: tensor<1x3xf32>, %w: tensor<3x2xf32>) -> tensor<1x2xf32> {
  %y = "core.MatMul"(%x, %w) : (tensor<1x3xf32>, tensor<3x2xf32>) -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}

// -----

// Bias correction: with the data's per-channel means (2 and 1), the mean shift of int8 weights
// is subtracted after the op (0.5 -> 0.496063 and 0.125 -> 0.124016: +0.00787 = 0.00394 * 2
// and +0.000984; the exact third channel needs none).

// STATIC-LABEL: func.func @bias_correction
// STATIC:         %[[Y:.*]] = "core.Convolution"
// STATIC:         %[[C:.*]] = core.Constant {value = dense<{{\[\[\[\[}}0.00787401199]], {{\[\[}}0.000984251499]], {{\[\[}}0.000000e+00]]]]> : tensor<1x3x1x1xf32>}
// STATIC:         %[[B:.*]] = "core.Add"(%[[Y]], %[[C]])
// STATIC:         "core.Relu"(%[[B]])
// STATIC-NOT:     mlconv.channel_means

// DYNAMIC-LABEL: func.func @bias_correction
// DYNAMIC:         "core.Add"

// WEIGHTS-LABEL: func.func @bias_correction
// WEIGHTS:         %[[Y:.*]] = "core.Convolution"
// WEIGHTS:         %[[B:.*]] = "core.Add"(%[[Y]], %{{.*}})
// WEIGHTS:         "core.Relu"(%[[B]])
func.func @bias_correction(%x: tensor<1x2x4x4xf32>) -> tensor<1x3x4x4xf32> {
  %w = core.Constant {value = dense<[[[[0.5]], [[-1.0]]], [[[0.25]], [[0.125]]], [[[0.0]], [[0.0]]]]> : tensor<3x2x1x1xf32>} : tensor<3x2x1x1xf32>
  %y = "core.Convolution"(%x, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>, mlconv.input_range = array<f32: -1.0, 3.0>, mlconv.channel_means = dense<[2.0, 1.0]> : tensor<2xf32>} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32>
  %r = "core.Relu"(%y) : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  func.return %r : tensor<1x3x4x4xf32>
}
