// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tflite-op-versions)' --split-input-file | filecheck %s

// Dilation needs DEPTHWISE_CONV_2D version 2 (seed 002's example); none needs 1.
// CHECK-LABEL: func.func @depthwise_dilation
// CHECK:         "tflite.DEPTHWISE_CONV_2D"({{.*}}dilation_w_factor = 2 : i32{{.*}}version = 2 : i32}
// CHECK:         "tflite.DEPTHWISE_CONV_2D"({{.*}}version = 1 : i32}
func.func @depthwise_dilation(%x: tensor<1x9x9x3xf32>, %w: tensor<1x3x3x3xf32>, %b: tensor<3xf32>) -> tensor<1x9x9x3xf32> {
  %y = "tflite.DEPTHWISE_CONV_2D"(%x, %w, %b) {padding = "SAME", depth_multiplier = 1 : i32, dilation_w_factor = 2 : i32, dilation_h_factor = 2 : i32, version = 1 : i32} : (tensor<1x9x9x3xf32>, tensor<1x3x3x3xf32>, tensor<3xf32>) -> tensor<1x9x9x3xf32>
  %z = "tflite.DEPTHWISE_CONV_2D"(%y, %w, %b) {padding = "SAME", depth_multiplier = 1 : i32, version = 7 : i32} : (tensor<1x9x9x3xf32>, tensor<1x3x3x3xf32>, tensor<3xf32>) -> tensor<1x9x9x3xf32>
  func.return %z : tensor<1x9x9x3xf32>
}

// -----

// int8 inputs: CONV_2D 3, SOFTMAX 2; FULLY_CONNECTED with keep_num_dims: 5.
// CHECK-LABEL: func.func @int8_types
// CHECK:         "tflite.CONV_2D"({{.*}}version = 3 : i32}
// CHECK:         "tflite.SOFTMAX"({{.*}}version = 2 : i32}
// CHECK:         "tflite.FULLY_CONNECTED"({{.*}}version = 5 : i32}
func.func @int8_types(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:0>>, %w: tensor<2x1x1x2x!quant.uniform<i8:f32:0, {0.1:0, 0.2:0}>>, %f: tensor<1x8xf32>, %fw: tensor<4x8xf32>, %fb: tensor<4xf32>) -> (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.00390625:-128>>, tensor<1x4xf32>) {
  %b = "tflite.NO_VALUE"() : () -> none
  %c = "tflite.CONV_2D"(%x, %w, %b) {padding = "VALID", stride_w = 1 : i32, stride_h = 1 : i32, version = 1 : i32} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:0>>, tensor<2x1x1x2x!quant.uniform<i8:f32:0, {0.1:0, 0.2:0}>>, none) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:0>>
  %s = "tflite.SOFTMAX"(%c) {beta = 1.0 : f32, version = 1 : i32} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:0>>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.00390625:-128>>
  %y = "tflite.FULLY_CONNECTED"(%f, %fw, %fb) {keep_num_dims = true, version = 1 : i32} : (tensor<1x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<1x4xf32>
  func.return %s, %y : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.00390625:-128>>, tensor<1x4xf32>
}
