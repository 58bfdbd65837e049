// TFLite CUSTOM operators (as `allow_custom_ops=True` writes them): a custom code with its
// flexbuffer options decoded, one whose options are not a flexbuffer (kept as bytes), and a
// builtin CAST that has a lowering.
func.func @main(%x: tensor<2x4xf32>, %y: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %e = "tflite.CUSTOM"(%x, %y) {custom_code = "ApproximateEqual", custom_options = {T = 0 : i64, tolerance = 3.000000e-01 : f64}, version = 1 : i32} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xi1> loc("approx")
  %c = "tflite.CAST"(%e) {version = 1 : i32} : (tensor<2x4xi1>) -> tensor<2x4xf32> loc("cast")
  %p = "tflite.CUSTOM"(%c) {custom_code = "Packed", custom_options = {}, raw_options = dense<[0, 0, 192, 63]> : tensor<4xui8>, version = 2 : i32} : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("packed")
  func.return %p : tensor<2x4xf32>
}
