// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tflite-to-tpu{input-shapes=x:2,4,4,2})' | filecheck %s

// A .tflite graph all the way to tpu ops: tflite-to-core, then core-to-tpu-pipeline with the
// dynamic batch bound. The OHWI filter arrives OIHW, folded at lowering time; the fused RELU6
// is a clamp (max then min).
// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%{{.*}}: tensor<2x4x4x2xf32> {mlconv.name = "x"}) -> tensor<2x4x4x3xf32>
// CHECK-NOT:     tflite.
// CHECK-NOT:     core.
// CHECK:         %[[R:.*]] = "tpu.region"(%{{.*}}) ({
// CHECK:           %[[NCHW:.*]] = "tpu.transpose"(%{{.*}}) {permutation = array<i64: 0, 3, 1, 2>}
// CHECK:           %[[W:.*]] = tpu.constant {{.*}} : tensor<3x2x1x1xf32>
// CHECK:           %[[CONV:.*]] = "tpu.conv_general_dilated"(%[[NCHW]], %[[W]]) {{.*}} -> tensor<2x3x4x4xf32>
// CHECK:           %[[BIAS:.*]] = "tpu.add"(%[[CONV]], %{{.*}})
// CHECK:           %[[MAX:.*]] = "tpu.max"(%{{.*}}, %[[BIAS]])
// CHECK:           %[[MIN:.*]] = "tpu.min"(%{{.*}}, %[[MAX]])
// CHECK:           %[[NHWC:.*]] = "tpu.transpose"(%[[MIN]]) {permutation = array<i64: 0, 2, 3, 1>}
// CHECK:           tpu.yield %[[NHWC]] : tensor<2x4x4x3xf32>
// CHECK:         func.return %[[R]] : tensor<2x4x4x3xf32>
func.func @main(%x: tensor<?x4x4x2xf32> {mlconv.name = "x"}) -> tensor<?x4x4x3xf32> {
  %w = "tflite.CONST"() {value = dense<0.5> : tensor<3x1x1x2xf32>} : () -> tensor<3x1x1x2xf32>
  %b = "tflite.CONST"() {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : () -> tensor<3xf32>
  %y = "tflite.CONV_2D"(%x, %w, %b) {padding = "SAME", stride_w = 1 : i32, stride_h = 1 : i32, fused_activation_function = "RELU6", version = 1 : i32} : (tensor<?x4x4x2xf32>, tensor<3x1x1x2xf32>, tensor<3xf32>) -> tensor<?x4x4x3xf32>
  func.return %y : tensor<?x4x4x3xf32>
}
