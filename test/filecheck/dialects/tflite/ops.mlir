// RUN: mlconv-opt %s | mlconv-opt | filecheck %s

// CHECK-LABEL: func.func @conv_int8
// CHECK:         %[[W:.*]] = "tflite.CONST"() {value = dense<1> : tensor<4x3x3x3xi8>} : () -> tensor<4x3x3x3x!quant.uniform<i8:f32:0, {0.1:0, 0.2:0, 0.3:0, 0.4:0}>>
// CHECK:         %[[B:.*]] = "tflite.NO_VALUE"() : () -> none
// CHECK:         "tflite.CONV_2D"(%{{.*}}, %[[W]], %[[B]]) {padding = "SAME", stride_w = 1 : i32, stride_h = 1 : i32, fused_activation_function = "RELU6", version = 3 : i32} : (tensor<1x8x8x3x!quant.uniform<i8:f32, 0.5:-1>>, tensor<4x3x3x3x!quant.uniform<i8:f32:0, {0.1:0, 0.2:0, 0.3:0, 0.4:0}>>, none) -> tensor<1x8x8x4x!quant.uniform<i8:f32, 0.0235:-128>>
func.func @conv_int8(%x: tensor<1x8x8x3x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<1x8x8x4x!quant.uniform<i8:f32, 0.0235:-128>> {
  %w = "tflite.CONST"() {value = dense<1> : tensor<4x3x3x3xi8>} : () -> tensor<4x3x3x3x!quant.uniform<i8:f32:0, {0.1:0, 0.2:0, 0.3:0, 0.4:0}>>
  %b = "tflite.NO_VALUE"() : () -> none
  %y = "tflite.CONV_2D"(%x, %w, %b) {padding = "SAME", stride_w = 1 : i32, stride_h = 1 : i32, fused_activation_function = "RELU6", version = 3 : i32} : (tensor<1x8x8x3x!quant.uniform<i8:f32, 0.5:-1>>, tensor<4x3x3x3x!quant.uniform<i8:f32:0, {0.1:0, 0.2:0, 0.3:0, 0.4:0}>>, none) -> tensor<1x8x8x4x!quant.uniform<i8:f32, 0.0235:-128>>
  func.return %y : tensor<1x8x8x4x!quant.uniform<i8:f32, 0.0235:-128>>
}

// CHECK-LABEL: func.func @reshape_softmax
// CHECK:         %[[R:.*]] = "tflite.RESHAPE"(%{{.*}}) {new_shape = array<i32: 1, -1>, version = 1 : i32} : (tensor<1x2x3xf32>) -> tensor<1x6xf32>
// CHECK:         "tflite.SOFTMAX"(%[[R]]) {beta = 1.000000e+00 : f32, version = 1 : i32} : (tensor<1x6xf32>) -> tensor<1x6xf32>
func.func @reshape_softmax(%x: tensor<1x2x3xf32>) -> tensor<1x6xf32> {
  %r = "tflite.RESHAPE"(%x) {new_shape = array<i32: 1, -1>, version = 1 : i32} : (tensor<1x2x3xf32>) -> tensor<1x6xf32>
  %s = "tflite.SOFTMAX"(%r) {beta = 1.0 : f32, version = 1 : i32} : (tensor<1x6xf32>) -> tensor<1x6xf32>
  func.return %s : tensor<1x6xf32>
}

// CHECK-LABEL: func.func @custom
// CHECK:         %[[E:.*]] = "tflite.CUSTOM"(%{{.*}}, %{{.*}}) {custom_code = "ApproximateEqual", custom_options = {T = 0 : i64, tolerance = 3.000000e-01 : f64}, version = 1 : i32} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xi1>
// CHECK:         "tflite.CUSTOM"(%[[E]]) {custom_code = "Packed", custom_options = {}, raw_options = dense<[0, 0, 192, 63]> : tensor<4xui8>, version = 2 : i32} : (tensor<2x4xi1>) -> tensor<2x4xf32>
func.func @custom(%x: tensor<2x4xf32>, %y: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %e = "tflite.CUSTOM"(%x, %y) {custom_code = "ApproximateEqual", custom_options = {T = 0 : i64, tolerance = 3.000000e-01 : f64}, version = 1 : i32} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xi1>
  %p = "tflite.CUSTOM"(%e) {custom_code = "Packed", custom_options = {}, raw_options = dense<[0, 0, 192, 63]> : tensor<4xui8>, version = 2 : i32} : (tensor<2x4xi1>) -> tensor<2x4xf32>
  func.return %p : tensor<2x4xf32>
}

// IF and WHILE hold their subgraphs as regions ending in tflite.YIELD.
// CHECK-LABEL: func.func @control_flow
// CHECK:         %[[R:.*]] = "tflite.IF"(%{{.*}}, %{{.*}}) ({
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: tensor<?x4xf32>):
// CHECK-NEXT:      "tflite.YIELD"(%[[A]]) : (tensor<?x4xf32>) -> ()
// CHECK-NEXT:    }, {
// CHECK:           %[[N:.*]] = "tflite.NEG"
// CHECK-NEXT:      "tflite.YIELD"(%[[N]]) : (tensor<?x4xf32>) -> ()
// CHECK-NEXT:    }) {version = 1 : i32} : (tensor<i1>, tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK:         "tflite.WHILE"(%{{.*}}, %[[R]]) ({
// CHECK:           %[[LT:.*]] = "tflite.LESS"
// CHECK-NEXT:      "tflite.YIELD"(%[[LT]]) : (tensor<i1>) -> ()
// CHECK:           "tflite.YIELD"(%{{.*}}, %{{.*}}) : (tensor<i32>, tensor<?x4xf32>) -> ()
// CHECK-NEXT:    }) {version = 1 : i32} : (tensor<i32>, tensor<?x4xf32>) -> (tensor<i32>, tensor<?x4xf32>)
func.func @control_flow(%c: tensor<i1>, %x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = "tflite.IF"(%c, %x) ({
  ^bb0(%a: tensor<?x4xf32>):
    "tflite.YIELD"(%a) : (tensor<?x4xf32>) -> ()
  }, {
  ^bb0(%a: tensor<?x4xf32>):
    %n = "tflite.NEG"(%a) {version = 1 : i32} : (tensor<?x4xf32>) -> tensor<?x4xf32>
    "tflite.YIELD"(%n) : (tensor<?x4xf32>) -> ()
  }) {version = 1 : i32} : (tensor<i1>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %i0 = "tflite.CONST"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
  %n, %v = "tflite.WHILE"(%i0, %r) ({
  ^bb0(%i: tensor<i32>, %w: tensor<?x4xf32>):
    %ten = "tflite.CONST"() {value = dense<10> : tensor<i32>} : () -> tensor<i32>
    %lt = "tflite.LESS"(%i, %ten) {version = 1 : i32} : (tensor<i32>, tensor<i32>) -> tensor<i1>
    "tflite.YIELD"(%lt) : (tensor<i1>) -> ()
  }, {
  ^bb0(%i: tensor<i32>, %w: tensor<?x4xf32>):
    %one = "tflite.CONST"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>
    %i1 = "tflite.ADD"(%i, %one) {fused_activation_function = "NONE", version = 1 : i32} : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %w1 = "tflite.ADD"(%w, %w) {fused_activation_function = "NONE", version = 1 : i32} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    "tflite.YIELD"(%i1, %w1) : (tensor<i32>, tensor<?x4xf32>) -> ()
  }) {version = 1 : i32} : (tensor<i32>, tensor<?x4xf32>) -> (tensor<i32>, tensor<?x4xf32>)
  func.return %v : tensor<?x4xf32>
}
