func.func @main(%x: tensor<?x6xf32>) -> tensor<?x5xf32> {
  %r = "core.Relu"(%x) : (tensor<?x6xf32>) -> tensor<?x5xf32> loc("relu")
  func.return %r : tensor<?x5xf32>
}
