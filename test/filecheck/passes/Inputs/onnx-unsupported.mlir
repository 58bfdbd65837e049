// ONNX ops without a lowering to core: two Bernoulli nodes and one RandomUniformLike,
// besides a Relu that has one.
builtin.module attributes {onnx.opset_import = {"" = 20 : i64}} {
  func.func @main(%x: tensor<1x64x1xf32>, %p: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<1x64x1xf32>, tensor<1x64x1xf32>) {
    %r = "onnx.Relu"(%x) : (tensor<1x64x1xf32>) -> tensor<1x64x1xf32> loc("relu")
    %a = "onnx.Bernoulli"(%p) : (tensor<16xf32>) -> tensor<16xf32> loc("coin_a")
    %b = "onnx.Bernoulli"(%p) : (tensor<16xf32>) -> tensor<16xf32> loc("coin_b")
    %m = "onnx.RandomUniformLike"(%x) : (tensor<1x64x1xf32>) -> tensor<1x64x1xf32> loc("noise")
    func.return %a, %b, %m, %r : tensor<16xf32>, tensor<16xf32>, tensor<1x64x1xf32>, tensor<1x64x1xf32>
  }
}
