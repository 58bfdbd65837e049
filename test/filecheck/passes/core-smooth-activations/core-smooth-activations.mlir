// RUN: mlconv-opt %s -p core-smooth-activations --split-input-file | filecheck %s
// RUN: mlconv-opt %s -p 'core-smooth-activations{alpha=1.0}' --split-input-file | filecheck %s --check-prefix=ALPHA1

// Channel maxima 4 and 1, weights of both input channels at most 1: s = [sqrt 2, 1/sqrt 2]
// (alpha 0.5, geometric mean 1). The data is multiplied by 1/s, each input channel's weights
// by s, and the per-tensor range becomes that of x / s.

// CHECK-LABEL: func.func @conv
// CHECK:         %[[W:.*]] = core.Constant {value = dense<{{\[\[\[\[}}1.41421354]], {{\[\[}}-0.707106769]]], {{\[\[\[}}0.707106769]], {{\[\[}}0.176776692]]], {{\[\[\[}}0.000000e+00]], {{\[\[}}0.707106769]]]]> : tensor<3x2x1x1xf32>}
// CHECK:         %[[S:.*]] = core.Constant {value = dense<{{\[\[\[\[}}0.707106769]], {{\[\[}}1.41421354]]]]> : tensor<1x2x1x1xf32>}
// CHECK:         %[[X:.*]] = "core.Multiply"(%x, %[[S]])
// CHECK:         "core.Convolution"(%[[X]], %[[W]]) {{{.*}}mlconv.input_range = array<f32: 0.000000e+00, 2.82842708>}
// CHECK-NOT:     mlconv.channel_ranges

// alpha 1: s is the channel reach alone ([2, 1/2]); x / s spans [0, 2].
// ALPHA1-LABEL: func.func @conv
// ALPHA1:         core.Constant {value = dense<{{\[\[\[\[}}5.000000e-01]], {{\[\[}}2.000000e+00]]]]> : tensor<1x2x1x1xf32>}
// ALPHA1:         "core.Convolution"({{.*}}mlconv.input_range = array<f32: 0.000000e+00, 2.000000e+00>}
func.func @conv(%x: tensor<1x2x8x8xf32>) -> tensor<1x3x8x8xf32> {
  %w = core.Constant {value = dense<[[[[1.0]], [[-1.0]]], [[[0.5]], [[0.25]]], [[[0.0]], [[1.0]]]]> : tensor<3x2x1x1xf32>} : tensor<3x2x1x1xf32>
  %y = "core.Convolution"(%x, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>, mlconv.input_range = array<f32: 0.0, 4.0>, mlconv.channel_ranges = dense<[[0.0, 0.0], [4.0, 1.0]]> : tensor<2x2xf32>} : (tensor<1x2x8x8xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x8x8xf32>
  func.return %y : tensor<1x3x8x8xf32>
}

// -----

// Depthwise (G x 1 x 1 x k x k): channel c's factor scales group c's filter; negative minima
// count by their magnitude (reach 2 and 8, weights 1 and 1: s = [1/sqrt 2, sqrt 2]).

// CHECK-LABEL: func.func @depthwise
// CHECK:         %[[W:.*]] = core.Constant {value = dense<{{\[\[\[\[\[}}0.707106769]]]], {{\[\[\[\[}}-1.41421354]]]]]> : tensor<2x1x1x1x1xf32>}
// CHECK:         %[[S:.*]] = core.Constant {value = dense<{{\[\[\[\[}}1.41421354]], {{\[\[}}0.707106769]]]]> : tensor<1x2x1x1xf32>}
// CHECK:         %[[X:.*]] = "core.Multiply"(%x, %[[S]])
// CHECK:         "core.GroupConvolution"(%[[X]], %[[W]]) {{{.*}}mlconv.input_range = array<f32: -5.65685415, 5.65685415>}
func.func @depthwise(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = core.Constant {value = dense<[[[[[1.0]]]], [[[[-1.0]]]]]> : tensor<2x1x1x1x1xf32>} : tensor<2x1x1x1x1xf32>
  %y = "core.GroupConvolution"(%x, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>, mlconv.input_range = array<f32: -8.0, 8.0>, mlconv.channel_ranges = dense<[[-2.0, -8.0], [1.0, 8.0]]> : tensor<2x2xf32>} : (tensor<1x2x4x4xf32>, tensor<2x1x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// MatMul with transposed weights ([N, K]): the factors scale b's columns, a's last axis.
// Reach 9 and 1, weight maxima per input channel 1 and 4: s = sqrt([9/1, 1/4]) scaled to a
// geometric mean of 1 = [sqrt 6, 1/sqrt 6]; x / s reaches 9 / sqrt 6.

// CHECK-LABEL: func.func @matmul_transposed
// CHECK:         %[[W:.*]] = core.Constant {value = dense<{{\[\[}}2.44948983, -1.63299322], {{\[}}1.22474492, 0.816496611]]> : tensor<2x2xf32>}
// CHECK:         %[[S:.*]] = core.Constant {value = dense<{{\[\[}}0.408248305, 2.44948983]]> : tensor<1x2xf32>}
// CHECK:         %[[X:.*]] = "core.Multiply"(%x, %[[S]])
// CHECK:         "core.MatMul"(%[[X]], %[[W]]) {transpose_b = true, mlconv.input_range = array<f32: 0.000000e+00, 3.67423463>}
func.func @matmul_transposed(%x: tensor<1x2xf32>) -> tensor<1x2xf32> {
  %w = core.Constant {value = dense<[[1.0, -4.0], [0.5, 2.0]]> : tensor<2x2xf32>} : tensor<2x2xf32>
  %y = "core.MatMul"(%x, %w) {transpose_b = true, mlconv.input_range = array<f32: 0.0, 9.0>, mlconv.channel_ranges = dense<[[0.0, 0.0], [9.0, 1.0]]> : tensor<2x2xf32>} : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}

// -----

// Without channel ranges (not calibrated for smoothing) nothing changes.

// CHECK-LABEL: func.func @uncalibrated
// CHECK-NOT:     core.Multiply
// CHECK:         "core.MatMul"(%x, %w) {mlconv.input_range = array<f32: 0.000000e+00, 9.000000e+00>}
func.func @uncalibrated(%x: tensor<1x2xf32>) -> tensor<1x2xf32> {
  %w = core.Constant {value = dense<[[1.0, -4.0], [0.5, 2.0]]> : tensor<2x2xf32>} : tensor<2x2xf32>
  %y = "core.MatMul"(%x, %w) {mlconv.input_range = array<f32: 0.0, 9.0>} : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}
