// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tflite-check-runtime{version="2.21.0"})' | filecheck %s --check-prefix=OK
// RUN: not mlconv-opt %s --pass-pipeline='builtin.module(tflite-check-runtime{version="2.3.0"})' 2>&1 | filecheck %s

// Every too-new op is listed in one error: GELU 1 needs 2.9.0, CONV_2D 6 needs 2.9.0.
// CHECK: error: 2 op(s) need a newer TFLite runtime than 2.3.0: GELU version 1 needs runtime 2.9.0 at loc("gelu"); CONV_2D version 6 needs runtime 2.9.0 at loc("grouped")

// OK-LABEL: func.func @main
func.func @main(%x: tensor<1x4x4x4xf32>, %w: tensor<4x1x1x2xf32>, %b: tensor<4xf32>) -> tensor<1x4x4x4xf32> {
  %g = "tflite.GELU"(%x) {approximate = false, version = 1 : i32} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> loc("gelu")
  %s = "tflite.SOFTMAX"(%g) {beta = 1.0 : f32, version = 1 : i32} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> loc("softmax")
  %c = "tflite.CONV_2D"(%s, %w, %b) {padding = "SAME", stride_w = 1 : i32, stride_h = 1 : i32, version = 6 : i32} : (tensor<1x4x4x4xf32>, tensor<4x1x1x2xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32> loc("grouped")
  func.return %c : tensor<1x4x4x4xf32>
}
