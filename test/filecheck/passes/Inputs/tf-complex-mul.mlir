// A complex product: core has no complex multiply, so tf-to-core refuses it (tf-to-core.mlir).
func.func @complex_mul(%x: tensor<3x8xf32>) -> tensor<3x5xf32> {
  %n = "tf.Const"() {value = dense<8> : tensor<1xi32>} : () -> tensor<1xi32>
  %s = "tf.RFFT"(%x, %n) : (tensor<3x8xf32>, tensor<1xi32>) -> tensor<3x5xcomplex<f32>>
  %m = "tf.Mul"(%s, %s) : (tensor<3x5xcomplex<f32>>, tensor<3x5xcomplex<f32>>) -> tensor<3x5xcomplex<f32>> loc("product")
  %a = "tf.ComplexAbs"(%m) : (tensor<3x5xcomplex<f32>>) -> tensor<3x5xf32>
  func.return %a : tensor<3x5xf32>
}
