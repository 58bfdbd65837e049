// core-to-tpu on core.Custom: the op becomes tpu.custom_call (the host-callback primitive of
// mlconv.custom_ops) with its attributes and result shapes as parameters; the output parses back.
// RUN: mlconv-opt %s --pass-pipeline='builtin.module(core-to-tpu)' | mlconv-opt | filecheck %s

// CHECK-LABEL: func.func @main
// CHECK:         %[[R:.*]] = "tpu.region"
// CHECK:           %[[C:.*]] = "tpu.custom_call"(%{{.*}}) {domain = "com.example", op_type = "SoftClip", attrs = {{\[\["alpha", 2.000000e\+00 : f64\]\]}}, result_shapes = [array<i64: 2, 3>], result_dtypes = [f32]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK:           %[[M:.*]] = "tpu.max"(%[[C]], %{{.*}})
// CHECK:           tpu.yield %[[M]]
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "core.Custom"(%x) {domain = "com.example", op_type = "SoftClip", attrs = {alpha = 2.0 : f64}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %z = "core.Relu"(%y) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %z : tensor<2x3xf32>
}
