// A CUSTOM operator between int8 tensors (as TFLite_Detection_PostProcess takes uint8 inputs
// in quantized SSD models).
func.func @main(%x: tensor<1x4x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<1x4x!quant.uniform<i8:f32, 0.25:3>> {
  %y = "tflite.CUSTOM"(%x) {custom_code = "Scale", custom_options = {factor = 2.0 : f64}, version = 1 : i32} : (tensor<1x4x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<1x4x!quant.uniform<i8:f32, 0.25:3>> loc("scale")
  func.return %y : tensor<1x4x!quant.uniform<i8:f32, 0.25:3>>
}
