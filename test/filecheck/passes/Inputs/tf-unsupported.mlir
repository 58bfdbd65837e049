func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = "tf.Cumsum"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("cumsum_a")
  %b = "tf.Cumsum"(%a, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("cumsum_b")
  %c = "tf.BesselI0e"(%b) : (tensor<4xf32>) -> tensor<4xf32> loc("bessel")
  %d = "tf.Relu"(%c) : (tensor<4xf32>) -> tensor<4xf32> loc("relu")
  func.return %d : tensor<4xf32>
}
