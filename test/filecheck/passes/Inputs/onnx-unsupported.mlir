// ONNX ops without a lowering to core: two TfIdfVectorizer nodes and one MelWeightMatrix,
// besides a Relu that has one.
builtin.module attributes {onnx.opset_import = {"" = 17 : i64}} {
  func.func @main(%x: tensor<1x64x1xf32>, %ids: tensor<2x6xi64>, %n: tensor<i64>, %lo: tensor<f32>) -> (tensor<2x7xf32>, tensor<2x7xf32>, tensor<9x4xf32>, tensor<1x64x1xf32>) {
    %r = "onnx.Relu"(%x) : (tensor<1x64x1xf32>) -> tensor<1x64x1xf32> loc("relu")
    %a = "onnx.TfIdfVectorizer"(%ids) : (tensor<2x6xi64>) -> tensor<2x7xf32> loc("tfidf_a")
    %b = "onnx.TfIdfVectorizer"(%ids) : (tensor<2x6xi64>) -> tensor<2x7xf32> loc("tfidf_b")
    %m = "onnx.MelWeightMatrix"(%n, %n, %n, %lo, %lo) : (tensor<i64>, tensor<i64>, tensor<i64>, tensor<f32>, tensor<f32>) -> tensor<9x4xf32> loc("mel")
    func.return %a, %b, %m, %r : tensor<2x7xf32>, tensor<2x7xf32>, tensor<9x4xf32>, tensor<1x64x1xf32>
  }
}
