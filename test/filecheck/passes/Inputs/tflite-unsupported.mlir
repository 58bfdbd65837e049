// TFLite operators without a lowering to core: one CUMSUM and two ELUs, besides a RELU that
// has one.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = "tflite.CUMSUM"(%x) {version = 1 : i32} : (tensor<4xf32>) -> tensor<4xf32> loc("first")
  %b = "tflite.RELU"(%a) {version = 1 : i32} : (tensor<4xf32>) -> tensor<4xf32> loc("relu")
  %c = "tflite.ELU"(%b) {version = 1 : i32} : (tensor<4xf32>) -> tensor<4xf32> loc("second")
  %d = "tflite.ELU"(%c) {version = 1 : i32} : (tensor<4xf32>) -> tensor<4xf32> loc("third")
  func.return %d : tensor<4xf32>
}
