// Verifier messages of the onnx dialect.
// RUN: mlconv-opt %s --split-input-file --verify-diagnostics

func.func @wrong_attribute_type(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'onnx.Softmax' op attribute 'axis' must be an i64 integer, got 1.000000e+00 : f32}}
  %y = "onnx.Softmax"(%x) {axis = 1.000000e+00 : f32} : (tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// -----

func.func @wrong_int_width(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'onnx.Softmax' op attribute 'axis' must be an i64 integer, got 1 : i32}}
  %y = "onnx.Softmax"(%x) {axis = 1 : i32} : (tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// -----

func.func @too_few_operands(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'onnx.Add' op Expected 2 operands, but got 1}}
  %y = "onnx.Add"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// -----

func.func @too_many_operands(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'onnx.Relu' op Expected 1 operand, but got 2}}
  %y = "onnx.Relu"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// -----

func.func @missing_segment_sizes(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'onnx.Dropout' op Expected operandSegmentSizes attribute}}
  %y = "onnx.Dropout"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @not_a_tensor(%x: f32) -> f32 {
  // expected-error @+1 {{'onnx.Relu' op operand 'X' at position 0 does not verify: Unexpected attribute f32}}
  %y = "onnx.Relu"(%x) : (f32) -> f32
  func.return %y : f32
}

// -----

func.func @region_without_yield(%c: tensor<i1>, %x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'onnx.If' op region 'else_branch' must end with onnx.Yield}}
  %y = "onnx.If"(%c) ({
    "onnx.Yield"(%x) : (tensor<2xf32>) -> ()
  }, {
  ^bb0:
  }) : (tensor<i1>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// -----

func.func @cast_to_is_int_or_string(%x: tensor<2xf32>) -> tensor<2xi32> {
  // expected-error @+1 {{'onnx.Cast' op attribute 'to' must be an i64 integer or a string, got 6.000000e+00 : f32}}
  %y = "onnx.Cast"(%x) {to = 6.0 : f32} : (tensor<2xf32>) -> tensor<2xi32>
  func.return %y : tensor<2xi32>
}

// -----

func.func @ints_attribute(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error @+1 {{'onnx.MaxPool' op attribute 'kernel_shape' must be an array of i64 integers, got [2 : i32, 2 : i32]}}
  %y = "onnx.MaxPool"(%x) {kernel_shape = [2 : i32, 2 : i32]} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  func.return %y : tensor<1x1x2x2xf32>
}
