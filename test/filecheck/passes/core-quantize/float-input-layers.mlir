// RUN: mlconv-opt %s -p 'core-quantize{mode=static float-input-layers=true}' --split-input-file | filecheck %s --check-prefix=STATIC
// RUN: mlconv-opt %s -p 'core-quantize{mode=dynamic float-input-layers=true}' --split-input-file | filecheck %s --check-prefix=DYNAMIC
// RUN: mlconv-opt %s -p 'core-quantize{mode=static}' --split-input-file | filecheck %s --check-prefix=ALL

// The input layer reads the model input through a layout change, a preprocessing scale and
// zero padding: its data stays float (weights int8, no calibrated range needed). The next
// convolution reads a computed value and is quantized as usual.

// STATIC-LABEL: func.func @input_layer
// STATIC:         %[[W1:.*]] = "core.FakeQuantize"(%w1, {{.*}}) {levels = 255 : i64}
// STATIC-NOT:     levels = 256
// STATIC:         %[[C1:.*]] = "core.Convolution"(%p, %[[W1]])
// STATIC:         %[[R:.*]] = "core.Relu"(%[[C1]])
// STATIC:         %[[W2:.*]] = "core.FakeQuantize"(%w2, {{.*}}) {levels = 255 : i64}
// STATIC:         %[[X2:.*]] = "core.FakeQuantize"(%[[R]], {{.*}}) {levels = 256 : i64}
// STATIC:         "core.Convolution"(%[[X2]], %[[W2]])

// DYNAMIC-LABEL: func.func @input_layer
// DYNAMIC-NOT:     "core.ReduceMin"(%p
// DYNAMIC:         "core.Convolution"(%p, %{{.*}})
// DYNAMIC:         %[[R:.*]] = "core.Relu"
// DYNAMIC:         "core.ReduceMin"(%[[R]], %{{.*}})

// Without the option every data input is quantized, the input layer's too.
// ALL-LABEL: func.func @input_layer
// ALL:         %[[X1:.*]] = "core.FakeQuantize"(%p, {{.*}}) {levels = 256 : i64}
// ALL:         "core.Convolution"(%[[X1]], %{{.*}})
func.func @input_layer(%x: tensor<1x4x4x2xf32>) -> tensor<1x2x6x6xf32> {
  %order = core.Constant {value = dense<[0, 3, 1, 2]> : tensor<4xi64>} : tensor<4xi64>
  %t = "core.Transpose"(%x, %order) : (tensor<1x4x4x2xf32>, tensor<4xi64>) -> tensor<1x2x4x4xf32>
  %scale = core.Constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %s = "core.Multiply"(%t, %scale) : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %begin = core.Constant {value = dense<[0, 0, 1, 1]> : tensor<4xi64>} : tensor<4xi64>
  %end = core.Constant {value = dense<[0, 0, 1, 1]> : tensor<4xi64>} : tensor<4xi64>
  %p = "core.Pad"(%s, %begin, %end) {pad_mode = "constant"} : (tensor<1x2x4x4xf32>, tensor<4xi64>, tensor<4xi64>) -> tensor<1x2x6x6xf32>
  %w1 = core.Constant {value = dense<[[[[0.5]], [[-1.0]]], [[[0.25]], [[0.125]]]]> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
  %c1 = "core.Convolution"(%p, %w1) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>, mlconv.input_range = array<f32: -2.0, 2.0>} : (tensor<1x2x6x6xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x6x6xf32>
  %r = "core.Relu"(%c1) : (tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  %w2 = core.Constant {value = dense<[[[[1.0]], [[-0.5]]], [[[0.75]], [[2.0]]]]> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
  %c2 = "core.Convolution"(%r, %w2) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>, mlconv.input_range = array<f32: 0.0, 3.0>} : (tensor<1x2x6x6xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x6x6xf32>
  func.return %c2 : tensor<1x2x6x6xf32>
}

// -----

// A product of two model inputs is no input layer of one: an op with two varying operands
// ends the walk back, and the MatMul's data is quantized.

// STATIC-LABEL: func.func @two_inputs
// STATIC:         %[[S:.*]] = "core.Add"(%a, %b)
// STATIC:         %[[X:.*]] = "core.FakeQuantize"(%[[S]], {{.*}}) {levels = 256 : i64}
// STATIC:         "core.MatMul"(%[[X]], %{{.*}})
func.func @two_inputs(%a: tensor<1x3xf32>, %b: tensor<1x3xf32>) -> tensor<1x2xf32> {
  %s = "core.Add"(%a, %b) : (tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
  %w = core.Constant {value = dense<[[1.0, -2.0], [0.5, 4.0], [1.0, -3.0]]> : tensor<3x2xf32>} : tensor<3x2xf32>
  %y = "core.MatMul"(%s, %w) {mlconv.input_range = array<f32: -1.0, 5.0>} : (tensor<1x3xf32>, tensor<3x2xf32>) -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}
