// A model whose input "image" has a dynamic batch dimension.
func.func @main(%x: tensor<?x3x8x8xf32> {mlconv.name = "image"}) -> tensor<?x3x8x8xf32> {
  %r = "core.Relu"(%x) : (tensor<?x3x8x8xf32>) -> tensor<?x3x8x8xf32>
  func.return %r : tensor<?x3x8x8xf32>
}
