// RUN: mlconv-opt %s --pass-pipeline='builtin.module(core-to-openvino)' | filecheck %s
// RUN: not mlconv-opt %s --pass-pipeline='builtin.module(core-to-openvino{target-opset=3})' 2>&1 | filecheck %s --check-prefix=OPSET3

// What export_openvino (mlconv-translate --export-openvino) runs on core IR before writing:
// core-infer-shapes gives the `?` types their static shapes, core-fold-constants folds the
// scaled weights (0.5 * 2), core-fuse turns x * sigmoid(x) into Swish, core-op-versions writes
// each op's lowest opset; with target-opset=3 the Swish (opset4) is refused.
// CHECK-LABEL: func.func @main
// CHECK-NOT:     core.Multiply
// CHECK:         %[[W:.*]] = core.Constant {value = dense<1.000000e+00> : tensor<2x3x1x1xf32>, opset = 1 : i64}
// CHECK:         %[[CONV:.*]] = "core.Convolution"(%{{.*}}, %[[W]]) {{.*}}opset = 1 : i64} {{.*}} -> tensor<1x2x4x4xf32>
// CHECK-NOT:     core.Sigmoid
// CHECK:         %[[SWISH:.*]] = "core.Swish"(%[[CONV]]) {opset = 4 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK:         %[[K:.*]] = core.Constant {value = dense<2> : tensor<i64>, opset = 1 : i64}
// CHECK:         %[[TOP:.*]], %{{.*}} = "core.TopK"(%[[SWISH]], %[[K]]) {{.*}}opset = 1 : i64} {{.*}} -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi32>)
// CHECK:         func.return %[[TOP]] : tensor<1x2x4x4xf32>
// OPSET3: error: 1 op(s) are newer than opset3: core.Swish needs opset4 at loc("swish")
func.func @main(%x: tensor<1x3x4x4xf32>) -> tensor<?x?x?x?xf32> {
  %w = "core.Constant"() {value = dense<0.5> : tensor<2x3x1x1xf32>} : () -> tensor<2x3x1x1xf32>
  %two = "core.Constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %w2 = "core.Multiply"(%w, %two) : (tensor<2x3x1x1xf32>, tensor<f32>) -> tensor<2x3x1x1xf32>
  %c = "core.Convolution"(%x, %w2) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) -> tensor<?x?x?x?xf32>
  %s = "core.Sigmoid"(%c) : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32> loc("swish")
  %m = "core.Multiply"(%c, %s) : (tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32> loc("swish")
  %k = "core.Constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
  %t, %i = "core.TopK"(%m, %k) {axis = 1 : i64, mode = "max", sort = "value"} : (tensor<?x?x?x?xf32>, tensor<i64>) -> (tensor<?x?x?x?xf32>, tensor<?x?x?x?xi64>)
  func.return %t : tensor<?x?x?x?xf32>
}
