// Verifier messages of the tflite dialect (dialects/tflite.py).
// RUN: mlconv-opt %s --split-input-file --verify-diagnostics

func.func @version_zero(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  // expected-error @+1 {{'tflite.SOFTMAX' op version must be at least 1, got 0}}
  %y = "tflite.SOFTMAX"(%x) {beta = 1.0 : f32, version = 0 : i32} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}

// -----

func.func @missing_version(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  // expected-error @+1 {{'tflite.SOFTMAX' op attribute 'version' expected in operation 'tflite.SOFTMAX'}}
  %y = "tflite.SOFTMAX"(%x) {beta = 1.0 : f32} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}

// -----

func.func @unknown_enum_value(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x8x8x4xf32> {
  // expected-error @+1 {{'tflite.CONV_2D' op padding must be one of SAME, VALID (the Padding enum)}}
  %y = "tflite.CONV_2D"(%x, %w) {padding = "FULL", version = 1 : i32} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>) -> tensor<1x8x8x4xf32>
  func.return %y : tensor<1x8x8x4xf32>
}

// -----

func.func @enum_not_a_string(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x8x8x4xf32> {
  // expected-error @+1 {{'tflite.CONV_2D' op fused_activation_function must be one of}}
  %y = "tflite.CONV_2D"(%x, %w) {fused_activation_function = 1 : i8, version = 1 : i32} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>) -> tensor<1x8x8x4xf32>
  func.return %y : tensor<1x8x8x4xf32>
}

// -----

func.func @int_option_not_int(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x8x8x4xf32> {
  // expected-error @+1 {{'tflite.CONV_2D' op stride_w must be an integer attribute}}
  %y = "tflite.CONV_2D"(%x, %w) {stride_w = 1.0 : f32, version = 1 : i32} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>) -> tensor<1x8x8x4xf32>
  func.return %y : tensor<1x8x8x4xf32>
}

// -----

func.func @float_option_not_float(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  // expected-error @+1 {{'tflite.SOFTMAX' op beta must be a float attribute}}
  %y = "tflite.SOFTMAX"(%x) {beta = 1 : i32, version = 1 : i32} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}

// -----

func.func @vector_option_not_array(%x: tensor<1x2x3xf32>) -> tensor<1x6xf32> {
  // expected-error @+1 {{'tflite.RESHAPE' op new_shape must be a dense array}}
  %y = "tflite.RESHAPE"(%x) {new_shape = [1 : i32, -1 : i32], version = 1 : i32} : (tensor<1x2x3xf32>) -> tensor<1x6xf32>
  func.return %y : tensor<1x6xf32>
}

// -----

func.func @const_shape_mismatch() -> tensor<2x2xf32> {
  // expected-error @+1 {{'tflite.CONST' op value and result must have the same shape}}
  %c = "tflite.CONST"() {value = dense<1.0> : tensor<4xf32>} : () -> tensor<2x2xf32>
  func.return %c : tensor<2x2xf32>
}

// -----

func.func @custom_code_empty(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'tflite.CUSTOM' op custom_code must not be empty}}
  %y = "tflite.CUSTOM"(%x) {custom_code = "", custom_options = {}, version = 1 : i32} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// -----

func.func @custom_code_is_a_builtin(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'tflite.CUSTOM' op custom_code 'RELU' is the name of a builtin operator}}
  %y = "tflite.CUSTOM"(%x) {custom_code = "RELU", custom_options = {}, version = 1 : i32} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// -----

func.func @if_condition_not_boolean(%c: tensor<f32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tflite.IF' op the condition (input #0) must be a boolean tensor}}
  %r = "tflite.IF"(%c, %x) ({
  ^bb0(%a: tensor<4xf32>):
    "tflite.YIELD"(%a) : (tensor<4xf32>) -> ()
  }, {
  ^bb0(%a: tensor<4xf32>):
    "tflite.YIELD"(%a) : (tensor<4xf32>) -> ()
  }) {version = 1 : i32} : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @if_region_without_yield(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tflite.IF' op region 'else_branch' must end with tflite.YIELD}}
  %r = "tflite.IF"(%c, %x) ({
  ^bb0(%a: tensor<4xf32>):
    "tflite.YIELD"(%a) : (tensor<4xf32>) -> ()
  }, {
  ^bb0(%a: tensor<4xf32>):
    core.Yield %a : tensor<4xf32>
  }) {version = 1 : i32} : (tensor<i1>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @if_argument_count(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tflite.IF' op region 'then_branch' has 2 arguments for 1 inputs}}
  %r = "tflite.IF"(%c, %x) ({
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    "tflite.YIELD"(%a) : (tensor<4xf32>) -> ()
  }, {
  ^bb0(%a: tensor<4xf32>):
    "tflite.YIELD"(%a) : (tensor<4xf32>) -> ()
  }) {version = 1 : i32} : (tensor<i1>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @if_argument_element_type(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tflite.IF' op region 'then_branch': argument #0 has element type i32, its input f32}}
  %r = "tflite.IF"(%c, %x) ({
  ^bb0(%a: tensor<4xi32>):
    "tflite.YIELD"(%x) : (tensor<4xf32>) -> ()
  }, {
  ^bb0(%a: tensor<4xf32>):
    "tflite.YIELD"(%a) : (tensor<4xf32>) -> ()
  }) {version = 1 : i32} : (tensor<i1>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @if_yield_count(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tflite.IF' op region 'else_branch' yields 2 values for 1 results}}
  %r = "tflite.IF"(%c, %x) ({
  ^bb0(%a: tensor<4xf32>):
    "tflite.YIELD"(%a) : (tensor<4xf32>) -> ()
  }, {
  ^bb0(%a: tensor<4xf32>):
    "tflite.YIELD"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> ()
  }) {version = 1 : i32} : (tensor<i1>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @if_yield_element_type(%c: tensor<i1>, %x: tensor<4xf32>, %y: tensor<4xi32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tflite.IF' op region 'then_branch' yields i32 for a f32 result}}
  %r = "tflite.IF"(%c, %x) ({
  ^bb0(%a: tensor<4xf32>):
    %z = "tflite.CONST"() {value = dense<0> : tensor<4xi32>} : () -> tensor<4xi32>
    "tflite.YIELD"(%z) : (tensor<4xi32>) -> ()
  }, {
  ^bb0(%a: tensor<4xf32>):
    "tflite.YIELD"(%a) : (tensor<4xf32>) -> ()
  }) {version = 1 : i32} : (tensor<i1>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @while_result_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tflite.WHILE' op has 2 results for 1 inputs (one per value)}}
  %r, %s = "tflite.WHILE"(%x) ({
  ^bb0(%a: tensor<4xf32>):
    %t = "tflite.CONST"() {value = dense<true> : tensor<i1>} : () -> tensor<i1>
    "tflite.YIELD"(%t) : (tensor<i1>) -> ()
  }, {
  ^bb0(%a: tensor<4xf32>):
    "tflite.YIELD"(%a) : (tensor<4xf32>) -> ()
  }) {version = 1 : i32} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  func.return %r : tensor<4xf32>
}

// -----

func.func @while_cond_not_boolean(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tflite.WHILE' op region 'cond' must yield a boolean tensor}}
  %r = "tflite.WHILE"(%x) ({
  ^bb0(%a: tensor<4xf32>):
    "tflite.YIELD"(%a) : (tensor<4xf32>) -> ()
  }, {
  ^bb0(%a: tensor<4xf32>):
    "tflite.YIELD"(%a) : (tensor<4xf32>) -> ()
  }) {version = 1 : i32} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @while_body_element_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tflite.WHILE' op region 'body' yields i32 for a f32 value}}
  %r = "tflite.WHILE"(%x) ({
  ^bb0(%a: tensor<4xf32>):
    %t = "tflite.CONST"() {value = dense<true> : tensor<i1>} : () -> tensor<i1>
    "tflite.YIELD"(%t) : (tensor<i1>) -> ()
  }, {
  ^bb0(%a: tensor<4xf32>):
    %z = "tflite.CONST"() {value = dense<0> : tensor<4xi32>} : () -> tensor<4xi32>
    "tflite.YIELD"(%z) : (tensor<4xi32>) -> ()
  }) {version = 1 : i32} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
