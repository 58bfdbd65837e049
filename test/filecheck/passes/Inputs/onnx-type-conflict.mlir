builtin.module attributes {onnx.opset_import = {"" = 17 : i64}} {
  func.func @main(%x: tensor<?x24xf32>) -> tensor<?x3x8xf32> {
    %shape = "onnx.Constant"() {value = dense<[0, 4, 6]> : tensor<3xi64>} : () -> tensor<3xi64>
    %r = "onnx.Reshape"(%x, %shape) : (tensor<?x24xf32>, tensor<3xi64>) -> tensor<?x3x8xf32> loc("wrong_type")
    func.return %r : tensor<?x3x8xf32>
  }
}
