// Verifier messages of core.Custom (dialects/core_custom.py).
// RUN: mlconv-opt %s --split-input-file --verify-diagnostics

func.func @empty_type(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'core.Custom' op core.Custom needs a non-empty op_type}}
  %y = "core.Custom"(%x) {domain = "com.example", op_type = ""} : (tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// -----

func.func @missing_type(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'core.Custom' op missing required attribute 'op_type'}}
  %y = "core.Custom"(%x) {domain = "com.example"} : (tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}
