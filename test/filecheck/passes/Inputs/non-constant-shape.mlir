// A Reshape whose target shape is computed at run time (ShapeOf not folded).
func.func @main(%x: tensor<2x3x4xf32>) -> tensor<24xf32> {
  %shape = "core.ShapeOf"(%x) : (tensor<2x3x4xf32>) -> tensor<3xi64>
  %axes = core.Constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %n = "core.ReduceProd"(%shape, %axes) {keep_dims = true} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
  %r = "core.Reshape"(%x, %n) : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<24xf32>
  func.return %r : tensor<24xf32>
}
