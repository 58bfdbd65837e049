// RUN: mlconv-opt %s --pass-pipeline='builtin.module(core-fuse)' --split-input-file | filecheck %s

// Keras' ZeroPadding2D before a valid strided convolution: the Pad's spatial pads become the
// convolution's (auto_pad valid ignores its own).

// CHECK-LABEL: func.func @pad_into_convolution
// CHECK:         %[[C:.*]] = "core.Convolution"(%[[X:.*]], %{{.*}}) {strides = array<i64: 2, 2>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 1, 1>, auto_pad = "explicit", dilations = array<i64: 1, 1>}
// CHECK-NOT:     core.Pad
// CHECK:         func.return %[[C]]
func.func @pad_into_convolution(%x: tensor<1x2x8x8xf32>) -> tensor<1x4x4x4xf32> {
  %b = core.Constant {value = dense<[0, 0, 0, 0]> : tensor<4xi64>} : tensor<4xi64>
  %e = core.Constant {value = dense<[0, 0, 1, 1]> : tensor<4xi64>} : tensor<4xi64>
  %w = core.Constant {value = dense<0.5> : tensor<4x2x3x3xf32>} : tensor<4x2x3x3xf32>
  %p = "core.Pad"(%x, %b, %e) {pad_mode = "constant"} : (tensor<1x2x8x8xf32>, tensor<4xi64>, tensor<4xi64>) -> tensor<1x2x9x9xf32>
  %y = "core.Convolution"(%p, %w) {strides = array<i64: 2, 2>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, auto_pad = "valid", dilations = array<i64: 1, 1>} : (tensor<1x2x9x9xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x4x4xf32>
  func.return %y : tensor<1x4x4x4xf32>
}

// -----

// A Pad before a convolution that pads too: the pads add up per side and per axis.

// CHECK-LABEL: func.func @pad_into_padded_convolution
// CHECK:         %[[C:.*]] = "core.Convolution"(%[[X:.*]], %{{.*}}) {strides = array<i64: 1, 1>, pads_begin = array<i64: 2, 4>, pads_end = array<i64: 2, 1>, dilations = array<i64: 1, 1>, auto_pad = "explicit"}
// CHECK-NOT:     core.Pad
// CHECK:         func.return %[[C]]
func.func @pad_into_padded_convolution(%x: tensor<1x2x6x6xf32>) -> tensor<1x1x8x9xf32> {
  %b = core.Constant {value = dense<[0, 0, 1, 2]> : tensor<4xi64>} : tensor<4xi64>
  %e = core.Constant {value = dense<[0, 0, 1, 1]> : tensor<4xi64>} : tensor<4xi64>
  %w = core.Constant {value = dense<[[[[0.5, -1.0, 0.25], [2.0, 0.0, -0.5], [1.0, 0.75, -2.0]], [[-0.25, 1.5, 0.5], [0.0, -1.0, 1.0], [0.5, 0.5, -1.5]]]]> : tensor<1x2x3x3xf32>} : tensor<1x2x3x3xf32>
  %p = "core.Pad"(%x, %b, %e) {pad_mode = "constant"} : (tensor<1x2x6x6xf32>, tensor<4xi64>, tensor<4xi64>) -> tensor<1x2x8x9xf32>
  %y = "core.Convolution"(%p, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 1, 2>, pads_end = array<i64: 1, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x8x9xf32>, tensor<1x2x3x3xf32>) -> tensor<1x1x8x9xf32>
  func.return %y : tensor<1x1x8x9xf32>
}

// -----

// A zero Pad before an AvgPool that excluded no padding: the padding is counted.

// CHECK-LABEL: func.func @pad_into_avg_pool
// CHECK:         %[[A:.*]] = "core.AvgPool"(%[[X:.*]]) {strides = array<i64: 1, 1>, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, kernel = array<i64: 3, 3>, exclude_pad = false, auto_pad = "explicit"}
// CHECK-NOT:     core.Pad
// CHECK:         func.return %[[A]]
func.func @pad_into_avg_pool(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %b = core.Constant {value = dense<[0, 0, 1, 1]> : tensor<4xi64>} : tensor<4xi64>
  %p = "core.Pad"(%x, %b, %b) {pad_mode = "constant"} : (tensor<1x2x4x4xf32>, tensor<4xi64>, tensor<4xi64>) -> tensor<1x2x6x6xf32>
  %y = "core.AvgPool"(%p) {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, exclude_pad = true} : (tensor<1x2x6x6xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// A -inf Pad before a MaxPool: padded positions never win either way.

// CHECK-LABEL: func.func @pad_into_max_pool
// CHECK:         %[[M:.*]] = "core.MaxPool"(%[[X:.*]]) {{{.*}}pads_begin = array<i64: 1, 0>, pads_end = array<i64: 0, 1>
// CHECK-NOT:     core.Pad
// CHECK:         func.return %[[M]]
func.func @pad_into_max_pool(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %b = core.Constant {value = dense<[0, 0, 1, 0]> : tensor<4xi64>} : tensor<4xi64>
  %e = core.Constant {value = dense<[0, 0, 0, 1]> : tensor<4xi64>} : tensor<4xi64>
  %v = core.Constant {value = dense<0xFF800000> : tensor<f32>} : tensor<f32>
  %p = "core.Pad"(%x, %b, %e, %v) {pad_mode = "constant"} : (tensor<1x2x4x4xf32>, tensor<4xi64>, tensor<4xi64>, tensor<f32>) -> tensor<1x2x5x5xf32>
  %y = "core.MaxPool"(%p) {kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// Negative: a zero Pad before a MaxPool (zeros can win where the input is negative).

// CHECK-LABEL: func.func @no_zero_pad_into_max_pool
// CHECK:         core.Pad
// CHECK:         core.MaxPool
func.func @no_zero_pad_into_max_pool(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x5x5xf32> {
  %b = core.Constant {value = dense<[0, 0, 1, 1]> : tensor<4xi64>} : tensor<4xi64>
  %p = "core.Pad"(%x, %b, %b) {pad_mode = "constant"} : (tensor<1x2x4x4xf32>, tensor<4xi64>, tensor<4xi64>) -> tensor<1x2x6x6xf32>
  %y = "core.MaxPool"(%p) {kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>} : (tensor<1x2x6x6xf32>) -> tensor<1x2x5x5xf32>
  func.return %y : tensor<1x2x5x5xf32>
}

// -----

// Negative: a Pad of value 1 and a Pad of the channel dim stay.

// CHECK-LABEL: func.func @no_pad_fusion
// CHECK:         core.Pad
// CHECK:         core.Pad
// CHECK:         core.Convolution
func.func @no_pad_fusion(%x: tensor<1x2x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %b = core.Constant {value = dense<[0, 0, 1, 1]> : tensor<4xi64>} : tensor<4xi64>
  %c = core.Constant {value = dense<[0, 1, 0, 0]> : tensor<4xi64>} : tensor<4xi64>
  %z = core.Constant {value = dense<[0, 0, 0, 0]> : tensor<4xi64>} : tensor<4xi64>
  %one = core.Constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %w = core.Constant {value = dense<0.5> : tensor<4x3x3x3xf32>} : tensor<4x3x3x3xf32>
  %p = "core.Pad"(%x, %b, %b, %one) {pad_mode = "constant"} : (tensor<1x2x8x8xf32>, tensor<4xi64>, tensor<4xi64>, tensor<f32>) -> tensor<1x2x10x10xf32>
  %q = "core.Pad"(%p, %c, %z) {pad_mode = "constant"} : (tensor<1x2x10x10xf32>, tensor<4xi64>, tensor<4xi64>) -> tensor<1x3x10x10xf32>
  %y = "core.Convolution"(%q, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x10x10xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return %y : tensor<1x4x8x8xf32>
}
