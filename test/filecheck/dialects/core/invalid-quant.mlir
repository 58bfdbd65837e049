// Verifier messages of core.FakeQuantize (dialects/core_quant.py).
// RUN: mlconv-opt %s --split-input-file --verify-diagnostics

func.func @fake_quantize_one_level(%x: tensor<1x8xf32>, %lo: tensor<f32>, %hi: tensor<f32>) -> tensor<1x8xf32> {
  // expected-error @+1 {{'core.FakeQuantize' op levels must be at least 2, got 1}}
  %y = "core.FakeQuantize"(%x, %lo, %hi, %lo, %hi) {levels = 1 : i64} : (tensor<1x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<1x8xf32>
  func.return %y : tensor<1x8xf32>
}
