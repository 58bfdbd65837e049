// ONNX ops without a lowering to core: two STFT nodes and one MelWeightMatrix, besides a
// Relu that has one.
builtin.module attributes {onnx.opset_import = {"" = 17 : i64}} {
  func.func @main(%x: tensor<1x64x1xf32>, %step: tensor<i64>, %n: tensor<i64>, %lo: tensor<f32>) -> (tensor<1x7x9x2xf32>, tensor<1x7x9x2xf32>, tensor<9x4xf32>, tensor<1x64x1xf32>) {
    %r = "onnx.Relu"(%x) : (tensor<1x64x1xf32>) -> tensor<1x64x1xf32> loc("relu")
    %a = "onnx.STFT"(%r, %step) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (tensor<1x64x1xf32>, tensor<i64>) -> tensor<1x7x9x2xf32> loc("stft_a")
    %b = "onnx.STFT"(%r, %step) {operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (tensor<1x64x1xf32>, tensor<i64>) -> tensor<1x7x9x2xf32> loc("stft_b")
    %m = "onnx.MelWeightMatrix"(%n, %n, %n, %lo, %lo) : (tensor<i64>, tensor<i64>, tensor<i64>, tensor<f32>, tensor<f32>) -> tensor<9x4xf32> loc("mel")
    func.return %a, %b, %m, %r : tensor<1x7x9x2xf32>, tensor<1x7x9x2xf32>, tensor<9x4xf32>, tensor<1x64x1xf32>
  }
}
