// A model with a dynamic batch dimension, input named "x".
func.func @main(%x: tensor<?x3x8x8xf32> {mlconv.name = "x"}) -> tensor<?x3x8x8xf32> {
  %r = "core.Relu"(%x) : (tensor<?x3x8x8xf32>) -> tensor<?x3x8x8xf32>
  func.return %r : tensor<?x3x8x8xf32>
}
