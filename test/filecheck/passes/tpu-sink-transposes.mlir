// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-sink-transposes)' --split-input-file | filecheck %s

// Between two NHWC convolutions: the bias add (constant transposed at compile time), the
// ReLU and the max pool move above the NHWC->NCHW transpose, which then cancels against the
// next NCHW->NHWC one. Bias, activation and pool stay next to the convolution.

// CHECK-LABEL: func.func @conv_bias_relu_pool
// CHECK:         %[[C:.*]] = "tpu.conv_general_dilated"
// CHECK:         %[[B:.*]] = tpu.constant {value = dense<{{\[\[\[\[}}1.000000e+00, 2.000000e+00]]]]> : tensor<1x1x1x2xf32>}
// CHECK:         %[[A:.*]] = "tpu.add"(%[[C]], %[[B]]) : (tensor<1x4x4x2xf32>, tensor<1x1x1x2xf32>) -> tensor<1x4x4x2xf32>
// CHECK:         %[[R:.*]] = "tpu.max"(%[[A]], %{{.*}}) : (tensor<1x4x4x2xf32>, tensor<f32>) -> tensor<1x4x4x2xf32>
// CHECK:         %[[P:.*]] = "tpu.reduce_window_max"(%[[R]]) {window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>
// CHECK-SAME:      -> tensor<1x2x2x2xf32>
// CHECK-NOT:     tpu.transpose
// CHECK:         tpu.yield %[[P]]
func.func @conv_bias_relu_pool(%x: tensor<1x4x4x2xf32>, %w: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %0 = "tpu.region"(%x, %w) ({
  ^bb0(%a: tensor<1x4x4x2xf32>, %k: tensor<1x1x2x2xf32>):
    %c = "tpu.conv_general_dilated"(%a, %k) {window_strides = array<i64: 1, 1>, padding = [array<i64: 0, 0>, array<i64: 0, 0>], lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, dimension_numbers = {__class__ = "ConvDimensionNumbers", lhs_spec = array<i64: 0, 3, 1, 2>, rhs_spec = array<i64: 3, 2, 0, 1>, out_spec = array<i64: 0, 3, 1, 2>}, feature_group_count = 1 : i64, batch_group_count = 1 : i64, precision, preferred_element_type = f32, out_sharding} : (tensor<1x4x4x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x4x4x2xf32>
    %t = "tpu.transpose"(%c) {permutation = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x2xf32>) -> tensor<1x2x4x4xf32>
    %b = tpu.constant {value = dense<[[[[1.0]], [[2.0]]]]> : tensor<1x2x1x1xf32>} : tensor<1x2x1x1xf32>
    %s = "tpu.add"(%t, %b) : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %z = tpu.constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
    %r = "tpu.max"(%s, %z) : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
    %ninf = tpu.constant {value = dense<0xFF800000> : tensor<f32>} : tensor<f32>
    %p = "tpu.reduce_window_max"(%r) {window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 2, 2>, padding = [array<i64: 0, 0>, array<i64: 0, 0>, array<i64: 0, 0>, array<i64: 0, 0>], base_dilation = array<i64: 1, 1, 1, 1>, window_dilation = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
    %back = "tpu.transpose"(%p) {permutation = array<i64: 0, 2, 3, 1>} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    tpu.yield %back : tensor<1x2x2x2xf32>
  }) {device = "tpu"} : (tensor<1x4x4x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32>
  func.return %0 : tensor<1x2x2x2xf32>
}

// -----

// Concatenation of two transposed values (a DenseNet block) concatenates on the NHWC channel
// axis; a residual add of two transposed values adds them untransposed.

// CHECK-LABEL: func.func @concat_and_residual
// CHECK:         %[[C:.*]] = "tpu.concatenate"(%[[A:.*]], %[[B:.*]]) {dimension = 3 : i64} : (tensor<1x3x3x2xf32>, tensor<1x3x3x2xf32>) -> tensor<1x3x3x4xf32>
// CHECK:         %[[T1:.*]] = "tpu.transpose"(%[[C]]) {permutation = array<i64: 0, 3, 1, 2>}
// CHECK:         %[[S:.*]] = "tpu.add"(%[[A]], %[[B]]) : (tensor<1x3x3x2xf32>, tensor<1x3x3x2xf32>) -> tensor<1x3x3x2xf32>
// CHECK:         %[[T2:.*]] = "tpu.transpose"(%[[S]]) {permutation = array<i64: 0, 3, 1, 2>}
// CHECK:         tpu.yield %[[T1]], %[[T2]]
func.func @concat_and_residual(%x: tensor<1x3x3x2xf32>, %y: tensor<1x3x3x2xf32>) -> (tensor<1x4x3x3xf32>, tensor<1x2x3x3xf32>) {
  %0, %1 = "tpu.region"(%x, %y) ({
  ^bb0(%a: tensor<1x3x3x2xf32>, %b: tensor<1x3x3x2xf32>):
    %ta = "tpu.transpose"(%a) {permutation = array<i64: 0, 3, 1, 2>} : (tensor<1x3x3x2xf32>) -> tensor<1x2x3x3xf32>
    %tb = "tpu.transpose"(%b) {permutation = array<i64: 0, 3, 1, 2>} : (tensor<1x3x3x2xf32>) -> tensor<1x2x3x3xf32>
    %c = "tpu.concatenate"(%ta, %tb) {dimension = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x4x3x3xf32>
    %s = "tpu.add"(%ta, %tb) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    tpu.yield %c, %s : tensor<1x4x3x3xf32>, tensor<1x2x3x3xf32>
  }) {device = "tpu"} : (tensor<1x3x3x2xf32>, tensor<1x3x3x2xf32>) -> (tensor<1x4x3x3xf32>, tensor<1x2x3x3xf32>)
  func.return %0, %1 : tensor<1x4x3x3xf32>, tensor<1x2x3x3xf32>
}

// -----

// Global average pooling and flatten: the reduction runs over the NHWC spatial axes and the
// result needs no transpose at all.

// CHECK-LABEL: func.func @global_pool_flatten
// CHECK:         %[[R:.*]] = "tpu.reduce_sum"(%{{.*}}) {axes = array<i64: 1, 2>, out_sharding} : (tensor<1x3x3x4xf32>) -> tensor<1x4xf32>
// CHECK-NOT:     tpu.transpose
// CHECK:         tpu.yield %[[R]]
func.func @global_pool_flatten(%x: tensor<1x3x3x4xf32>) -> tensor<1x4xf32> {
  %0 = "tpu.region"(%x) ({
  ^bb0(%a: tensor<1x3x3x4xf32>):
    %t = "tpu.transpose"(%a) {permutation = array<i64: 0, 3, 1, 2>} : (tensor<1x3x3x4xf32>) -> tensor<1x4x3x3xf32>
    %r = "tpu.reduce_sum"(%t) {axes = array<i64: 2, 3>, out_sharding} : (tensor<1x4x3x3xf32>) -> tensor<1x4xf32>
    tpu.yield %r : tensor<1x4xf32>
  }) {device = "tpu"} : (tensor<1x3x3x4xf32>) -> tensor<1x4xf32>
  func.return %0 : tensor<1x4xf32>
}

// -----

// Channel shuffle (ShuffleNet: reshape to groups, swap, merge) on an NHWC value: one small
// transpose of the two channel factors remains, in NHWC.

// CHECK-LABEL: func.func @channel_shuffle
// CHECK:         %[[R:.*]] = "tpu.reshape"(%{{.*}}) {new_sizes = array<i64: 1, 2, 2, 2, 3>, dimensions, sharding} : (tensor<1x2x2x6xf32>) -> tensor<1x2x2x2x3xf32>
// CHECK:         %[[S:.*]] = "tpu.transpose"(%[[R]]) {permutation = array<i64: 0, 1, 2, 4, 3>}
// CHECK:         %[[M:.*]] = "tpu.reshape"(%[[S]]) {new_sizes = array<i64: 1, 2, 2, 6>, dimensions, sharding} : (tensor<1x2x2x3x2xf32>) -> tensor<1x2x2x6xf32>
// CHECK:         %[[T:.*]] = "tpu.transpose"(%[[M]]) {permutation = array<i64: 0, 3, 1, 2>}
// CHECK:         tpu.yield %[[T]]
func.func @channel_shuffle(%x: tensor<1x2x2x6xf32>) -> tensor<1x6x2x2xf32> {
  %0 = "tpu.region"(%x) ({
  ^bb0(%a: tensor<1x2x2x6xf32>):
    %t = "tpu.transpose"(%a) {permutation = array<i64: 0, 3, 1, 2>} : (tensor<1x2x2x6xf32>) -> tensor<1x6x2x2xf32>
    %r = "tpu.reshape"(%t) {new_sizes = array<i64: 1, 2, 3, 2, 2>, dimensions, sharding} : (tensor<1x6x2x2xf32>) -> tensor<1x2x3x2x2xf32>
    %s = "tpu.transpose"(%r) {permutation = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x3x2x2xf32>) -> tensor<1x3x2x2x2xf32>
    %m = "tpu.reshape"(%s) {new_sizes = array<i64: 1, 6, 2, 2>, dimensions, sharding} : (tensor<1x3x2x2x2xf32>) -> tensor<1x6x2x2xf32>
    tpu.yield %m : tensor<1x6x2x2xf32>
  }) {device = "tpu"} : (tensor<1x2x2x6xf32>) -> tensor<1x6x2x2xf32>
  func.return %0 : tensor<1x6x2x2xf32>
}
