// RUN: not mlconv-opt %s -p 'core-quantize{mode=static}' --split-input-file 2>&1 | filecheck %s
// RUN: not mlconv-opt %s -p 'core-quantize{mode=int4}' 2>&1 | filecheck %s --check-prefix=MODE

// MODE: error: core-quantize: mode must be one of static, dynamic, weight-only, got 'int4'

// CHECK: loc("conv1"): error: 'core.Convolution' op has no calibrated input range (mlconv.input_range): calibrate first (mlconv-convert's quantization_options, or mlconv.converter.calibration)
func.func @uncalibrated(%x: tensor<1x2x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %w = core.Constant {value = dense<[[[[0.5]], [[-1.0]]]]> : tensor<1x2x1x1xf32>} : tensor<1x2x1x1xf32>
  %y = "core.Convolution"(%x, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x4x4xf32> loc("conv1")
  func.return %y : tensor<1x1x4x4xf32>
}

// -----

// CHECK: loc("fc"): error: 'core.MatMul' op mlconv.input_range has min 2.0 above max 1.0
func.func @inverted_range(%x: tensor<1x2xf32>) -> tensor<1x1xf32> {
  %w = core.Constant {value = dense<[[0.5], [-1.0]]> : tensor<2x1xf32>} : tensor<2x1xf32>
  %y = "core.MatMul"(%x, %w) {mlconv.input_range = array<f32: 2.0, 1.0>} : (tensor<1x2xf32>, tensor<2x1xf32>) -> tensor<1x1xf32> loc("fc")
  func.return %y : tensor<1x1xf32>
}

// -----

// CHECK: loc("conv2"): error: 'core.Convolution' op mlconv.channel_means must be a dense f32 tensor of 2 values (one per channel)
func.func @wrong_means(%x: tensor<1x2x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %w = core.Constant {value = dense<[[[[0.5]], [[-1.0]]]]> : tensor<1x2x1x1xf32>} : tensor<1x2x1x1xf32>
  %y = "core.Convolution"(%x, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>, mlconv.input_range = array<f32: 0.0, 1.0>, mlconv.channel_means = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x4x4xf32> loc("conv2")
  func.return %y : tensor<1x1x4x4xf32>
}
