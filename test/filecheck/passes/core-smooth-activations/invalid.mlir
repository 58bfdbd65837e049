// RUN: not mlconv-opt %s -p core-smooth-activations --split-input-file 2>&1 | filecheck %s
// RUN: not mlconv-opt %s -p 'core-smooth-activations{alpha=1.5}' 2>&1 | filecheck %s --check-prefix=ALPHA

// ALPHA: error: core-smooth-activations: alpha must be within [0, 1], got 1.5

// CHECK: loc("conv1"): error: 'core.Convolution' op mlconv.channel_ranges must be a 2x2 dense f32 tensor (min row, max row)
func.func @wrong_channels(%x: tensor<1x2x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %w = core.Constant {value = dense<[[[[0.5]], [[-1.0]]]]> : tensor<1x2x1x1xf32>} : tensor<1x2x1x1xf32>
  %y = "core.Convolution"(%x, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>, mlconv.channel_ranges = dense<[[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]> : tensor<2x3xf32>} : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x4x4xf32> loc("conv1")
  func.return %y : tensor<1x1x4x4xf32>
}

// -----

// CHECK: loc("fc"): error: 'core.MatMul' op mlconv.channel_ranges has a channel whose min is above its max
func.func @inverted_range(%x: tensor<1x2xf32>) -> tensor<1x1xf32> {
  %w = core.Constant {value = dense<[[0.5], [-1.0]]> : tensor<2x1xf32>} : tensor<2x1xf32>
  %y = "core.MatMul"(%x, %w) {mlconv.channel_ranges = dense<[[2.0, 0.0], [1.0, 1.0]]> : tensor<2x2xf32>} : (tensor<1x2xf32>, tensor<2x1xf32>) -> tensor<1x1xf32> loc("fc")
  func.return %y : tensor<1x1xf32>
}

// -----

// CHECK: loc("fc2"): error: 'core.MatMul' op mlconv.channel_means must be a dense f32 tensor of 2 values (one per channel)
func.func @wrong_means(%x: tensor<1x2xf32>) -> tensor<1x1xf32> {
  %w = core.Constant {value = dense<[[0.5], [-1.0]]> : tensor<2x1xf32>} : tensor<2x1xf32>
  %y = "core.MatMul"(%x, %w) {mlconv.channel_ranges = dense<[[0.0, 0.0], [1.0, 1.0]]> : tensor<2x2xf32>, mlconv.channel_means = dense<[1.0]> : tensor<1xf32>} : (tensor<1x2xf32>, tensor<2x1xf32>) -> tensor<1x1xf32> loc("fc2")
  func.return %y : tensor<1x1xf32>
}
