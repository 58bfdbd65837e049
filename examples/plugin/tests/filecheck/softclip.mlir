// The example plugin's lowering of com.mlconv.example.SoftClip (alpha * tanh(x / alpha)) to core.
// RUN: mlconv-opt %s --pass-pipeline='builtin.module(onnx-to-core)' | mlconv-opt | filecheck %s

// CHECK-LABEL: func.func @softclip
// CHECK:         %[[A:.*]] = core.Constant {value = dense<2.500000e-01> : tensor<f32>} : tensor<f32>
// CHECK:         %[[D:.*]] = "core.Divide"(%{{.*}}, %[[A]]) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK:         %[[T:.*]] = "core.Tanh"(%[[D]]) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK:         %[[M:.*]] = "core.Multiply"(%[[T]], %[[A]]) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK:         func.return %[[M]]
module attributes {onnx.opset_import = {"" = 17 : i64, "com.mlconv.example" = 1 : i64}} {
  func.func @softclip(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %y = "onnx.Custom"(%x) {domain = "com.mlconv.example", op_type = "SoftClip", version = 1 : i64, attrs = {alpha = 2.500000e-01 : f32}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %y : tensor<2x3xf32>
  }
}
