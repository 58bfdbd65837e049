// RUN: mlconv-opt %s --pass-pipeline='builtin.module(core-to-tflite-pipeline)' | filecheck %s

// What export_tflite runs on core IR: core-infer-shapes gives the `?` types their static
// shapes, core-fold-constants folds the scaled weights (0.5 * 2), core-to-tflite cancels the
// layout transposes and fuses the ReLU, tflite-op-versions sets each op's version.
// CHECK-LABEL: func.func @main
// CHECK-NOT:     core.
// CHECK:         %[[W:.*]] = "tflite.CONST"() {value = dense<1.000000e+00> : tensor<3x3x3x2xf32>}
// CHECK-NOT:     "tflite.TRANSPOSE"
// CHECK:         %[[CONV:.*]] = "tflite.CONV_2D"(%{{.*}}, %[[W]], %{{.*}}) {version = 1 : i32, padding = "SAME"{{.*}}fused_activation_function = "RELU"} {{.*}} -> tensor<1x4x4x3xf32>
// CHECK-NOT:     "tflite.TRANSPOSE"
// CHECK:         func.return %[[CONV]] : tensor<1x4x4x3xf32>
func.func @main(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x3xf32> {
  %p1 = "core.Constant"() {value = dense<[0, 3, 1, 2]> : tensor<4xi64>} : () -> tensor<4xi64>
  %t = "core.Transpose"(%x, %p1) : (tensor<1x4x4x2xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  %w = "core.Constant"() {value = dense<0.5> : tensor<3x2x3x3xf32>} : () -> tensor<3x2x3x3xf32>
  %two = "core.Constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %w2 = "core.Multiply"(%w, %two) : (tensor<3x2x3x3xf32>, tensor<f32>) -> tensor<3x2x3x3xf32>
  %c = "core.Convolution"(%t, %w2) {strides = array<i64: 1, 1>, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (tensor<?x?x?x?xf32>, tensor<3x2x3x3xf32>) -> tensor<?x?x?x?xf32>
  %r = "core.Relu"(%c) : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %p2 = "core.Constant"() {value = dense<[0, 2, 3, 1]> : tensor<4xi64>} : () -> tensor<4xi64>
  %y = "core.Transpose"(%r, %p2) : (tensor<?x?x?x?xf32>, tensor<4xi64>) -> tensor<1x4x4x3xf32>
  func.return %y : tensor<1x4x4x3xf32>
}
