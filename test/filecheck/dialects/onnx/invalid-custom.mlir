// Verifier messages of onnx.Custom (dialects/onnx.py).
// RUN: mlconv-opt %s --split-input-file --verify-diagnostics

func.func @empty_type(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'onnx.Custom' op onnx.Custom needs a non-empty op_type}}
  %y = "onnx.Custom"(%x) {domain = "com.acme", op_type = "", version = 1 : i64, attrs = {}} : (tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}
