// ONNX ops without a lowering to core: two Bernoulli nodes and one MelWeightMatrix,
// besides a Relu that has one.
builtin.module attributes {onnx.opset_import = {"" = 20 : i64}} {
  func.func @main(%x: tensor<1x64x1xf32>, %p: tensor<16xf32>, %n: tensor<i64>, %lo: tensor<f32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<9x4xf32>, tensor<1x64x1xf32>) {
    %r = "onnx.Relu"(%x) : (tensor<1x64x1xf32>) -> tensor<1x64x1xf32> loc("relu")
    %a = "onnx.Bernoulli"(%p) : (tensor<16xf32>) -> tensor<16xf32> loc("coin_a")
    %b = "onnx.Bernoulli"(%p) : (tensor<16xf32>) -> tensor<16xf32> loc("coin_b")
    %m = "onnx.MelWeightMatrix"(%n, %n, %n, %lo, %lo) : (tensor<i64>, tensor<i64>, tensor<i64>, tensor<f32>, tensor<f32>) -> tensor<9x4xf32> loc("mel")
    func.return %a, %b, %m, %r : tensor<16xf32>, tensor<16xf32>, tensor<9x4xf32>, tensor<1x64x1xf32>
  }
}
