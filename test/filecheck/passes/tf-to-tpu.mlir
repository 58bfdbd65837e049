// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tf-to-tpu)' | filecheck %s

// A TF graph all the way to tpu ops: tf-to-core, core-fold-constants, core-layout-nchw (the
// NHWC transposes meet only at the input and the output), core-to-tpu-pipeline. The HWIO
// filter arrives OIHW and the bias broadcasts over NCHW channels.
// CHECK-LABEL: func.func @main
// CHECK-NOT:     tf.
// CHECK-NOT:     core.
// CHECK:         %[[R:.*]] = "tpu.region"(%{{.*}}) ({
// CHECK:           %[[NCHW:.*]] = "tpu.transpose"(%{{.*}}) {permutation = array<i64: 0, 3, 1, 2>}
// CHECK:           %[[W:.*]] = tpu.constant {{.*}} : tensor<2x3x3x3xf32>
// CHECK:           %[[CONV:.*]] = "tpu.conv_general_dilated"(%[[NCHW]], %[[W]]) {{.*}} -> tensor<1x2x4x4xf32>
// CHECK:           %[[B:.*]] = tpu.constant {{.*}} : tensor<1x2x1x1xf32>
// CHECK:           %[[BIAS:.*]] = "tpu.add"(%[[CONV]], %[[B]])
// CHECK:           "tpu.max"
// CHECK:           %[[MIN:.*]] = "tpu.min"
// CHECK:           %[[NHWC:.*]] = "tpu.transpose"(%[[MIN]]) {permutation = array<i64: 0, 2, 3, 1>}
// CHECK-NOT:       "tpu.transpose"
// CHECK:           tpu.yield %[[NHWC]] : tensor<1x4x4x2xf32>
// CHECK:         func.return %[[R]] : tensor<1x4x4x2xf32>
func.func @main(%x: tensor<1x8x8x3xf32>) -> tensor<1x4x4x2xf32> {
  %w = "tf.Const"() {value = dense<1.0> : tensor<3x3x3x2xf32>} : () -> tensor<3x3x3x2xf32>
  %b = "tf.Const"() {value = dense<[0.5, -0.5]> : tensor<2xf32>} : () -> tensor<2xf32>
  %c = "tf.Conv2D"(%x, %w) {strides = [1, 2, 2, 1], padding = "SAME"} : (tensor<1x8x8x3xf32>, tensor<3x3x3x2xf32>) -> tensor<1x4x4x2xf32> loc("conv")
  %a = "tf.BiasAdd"(%c, %b) : (tensor<1x4x4x2xf32>, tensor<2xf32>) -> tensor<1x4x4x2xf32>
  %r = "tf.Relu6"(%a) : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  func.return %r : tensor<1x4x4x2xf32>
}
