// An ONNX model whose input "x" has a dynamic batch.
builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @main(%x: tensor<?x4xf32> {mlconv.name = "x"}) -> (tensor<?x4xf32> {mlconv.name = "y"}) {
    %y = "onnx.Relu"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32> loc("relu")
    func.return %y : tensor<?x4xf32>
  }
}
