// A version of com.mlconv.example.SoftClip the example plugin does not lower: onnx-to-core's
// one-line report names it and the node; with allow-custom it stays as core.Custom.
// RUN: not mlconv-opt %s --pass-pipeline='builtin.module(onnx-to-core)' 2>&1 | filecheck %s --check-prefix=ERR
// RUN: mlconv-opt %s --pass-pipeline='builtin.module(onnx-to-core{allow-custom=true})' | mlconv-opt | filecheck %s

// ERR: error: no lowering to core for 1 onnx op type(s) at opset 17: onnx.com.mlconv.example.SoftClip-2 (1 node: clip)

// CHECK-LABEL: func.func @softclip_v2
// CHECK:         %[[Y:.*]] = "core.Custom"(%{{.*}}) {domain = "com.mlconv.example", op_type = "SoftClip", attrs = {alpha = 2.500000e-01 : f32}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK:         func.return %[[Y]]
module attributes {onnx.opset_import = {"" = 17 : i64, "com.mlconv.example" = 2 : i64}} {
  func.func @softclip_v2(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %y = "onnx.Custom"(%x) {domain = "com.mlconv.example", op_type = "SoftClip", version = 2 : i64, attrs = {alpha = 2.500000e-01 : f32}} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("clip")
    func.return %y : tensor<2x3xf32>
  }
}
