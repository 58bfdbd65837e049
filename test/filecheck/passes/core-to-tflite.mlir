// RUN: mlconv-opt %s --pass-pipeline='builtin.module(core-to-tflite)' --split-input-file | filecheck %s

// The NHWC -> NCHW -> NHWC transposes around a convolution cancel; bias and ReLU fuse.
// CHECK-LABEL: func.func @main
// CHECK-NOT:     "tflite.TRANSPOSE"
// CHECK:         %[[CONV:.*]] = "tflite.CONV_2D"(%{{.*}}, %{{.*}}, %{{.*}}) {{.*}}padding = "SAME"{{.*}}fused_activation_function = "RELU"
// CHECK-NOT:     "tflite.TRANSPOSE"
// CHECK:         func.return %[[CONV]] : tensor<1x4x4x3xf32>
func.func @main(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x3xf32> {
  %p1 = "core.Constant"() {value = dense<[0, 3, 1, 2]> : tensor<4xi64>} : () -> tensor<4xi64>
  %t = "core.Transpose"(%x, %p1) : (tensor<1x4x4x2xf32>, tensor<4xi64>) -> tensor<1x2x4x4xf32>
  %w = "core.Constant"() {value = dense<0.5> : tensor<3x2x3x3xf32>} : () -> tensor<3x2x3x3xf32>
  %c = "core.Convolution"(%t, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  %b = "core.Constant"() {value = dense<[[[1.0]], [[2.0]], [[3.0]]]> : tensor<3x1x1xf32>} : () -> tensor<3x1x1xf32>
  %a = "core.Add"(%c, %b) : (tensor<1x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32>
  %r = "core.Relu"(%a) : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %p2 = "core.Constant"() {value = dense<[0, 2, 3, 1]> : tensor<4xi64>} : () -> tensor<4xi64>
  %y = "core.Transpose"(%r, %p2) : (tensor<1x3x4x4xf32>, tensor<4xi64>) -> tensor<1x4x4x3xf32>
  func.return %y : tensor<1x4x4x3xf32>
}

// -----

// CHECK-LABEL: func.func @main
// CHECK:         %[[FC:.*]] = "tflite.FULLY_CONNECTED"(%{{.*}}, %{{.*}}, %{{.*}})
// CHECK:         %[[SM:.*]] = "tflite.SOFTMAX"(%[[FC]]) {{.*}}beta = 1.000000e+00
// CHECK:         func.return %[[SM]]
func.func @main(%x: tensor<1x4xf32>) -> tensor<1x2xf32> {
  %w = "core.Constant"() {value = dense<0.25> : tensor<2x4xf32>} : () -> tensor<2x4xf32>
  %m = "core.MatMul"(%x, %w) {transpose_b = true} : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32>
  %b = "core.Constant"() {value = dense<[1.0, -1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %a = "core.Add"(%m, %b) : (tensor<1x2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  %s = "core.Softmax"(%a) {axis = 1 : i64} : (tensor<1x2xf32>) -> tensor<1x2xf32>
  func.return %s : tensor<1x2xf32>
}

// -----

// core.Custom becomes a CUSTOM operator: a tflite-domain op keeps its code, another domain's is
// named `<domain>.<op_type>`; attributes become the options, `raw_options` stays bytes. The
// NHWC -> NCHW transpose before it is materialized (custom ops take the layout they are given).
// CHECK-LABEL: func.func @main
// CHECK:         %[[T:.*]] = "tflite.TRANSPOSE"
// CHECK:         %[[A:.*]] = "tflite.CUSTOM"(%[[T]]) {version = 1 : i32, custom_code = "ApproximateGelu", custom_options = {T = 0 : i64, scale = 5.000000e-01 : f64}} : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
// CHECK:         %[[B:.*]] = "tflite.CUSTOM"(%[[A]]) {version = 1 : i32, custom_code = "com.acme.Packed", custom_options = {}, raw_options = dense<[1, 2]> : tensor<2xui8>} : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
// CHECK:         func.return %[[B]]
func.func @main(%x: tensor<1x2x2x3xf32>) -> tensor<1x3x2x2xf32> {
  %p = "core.Constant"() {value = dense<[0, 3, 1, 2]> : tensor<4xi64>} : () -> tensor<4xi64>
  %t = "core.Transpose"(%x, %p) : (tensor<1x2x2x3xf32>, tensor<4xi64>) -> tensor<1x3x2x2xf32>
  %a = "core.Custom"(%t) {domain = "tflite", op_type = "ApproximateGelu", attrs = {T = 0 : i64, scale = 5.000000e-01 : f64}} : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  %b = "core.Custom"(%a) {domain = "com.acme", op_type = "Packed", attrs = {raw_options = dense<[1, 2]> : tensor<2xui8>}} : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  func.return %b : tensor<1x3x2x2xf32>
}
