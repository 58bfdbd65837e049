// RUN: mlconv-run %s --inputs %S/Inputs/x-1x1x4x4.npz --print-outputs | filecheck %s
// RUN: mlconv-opt %s -p core-fuse | mlconv-run - --interpret --inputs %S/Inputs/x-1x1x4x4.npz --print-outputs | filecheck %s
// RUN: mlconv-opt %s -p core-fuse | filecheck %s --check-prefix=FUSED

// Values, not only text: Convolution + BatchNormInference computes 2x - 1 (channel 0) and
// 2x + 3 (channel 1) of x = [0, 0.25, ..., 3.75]. Compiled as a whole (first RUN) and as
// core-fuse leaves it, interpreted op by op (second RUN), the numbers are the same.

// FUSED-NOT:  core.BatchNormInference
// CHECK:      {{output0|result0}}: tensor<1x2x4x4xf32>
// CHECK-NEXT: {{\[\[\[\[}}-1.0000, -0.5000,  0.0000,  0.5000],
// CHECK-NEXT:    [ 1.0000,  1.5000,  2.0000,  2.5000],
// CHECK-NEXT:    [ 3.0000,  3.5000,  4.0000,  4.5000],
// CHECK-NEXT:    [ 5.0000,  5.5000,  6.0000,  6.5000]],
// CHECK-EMPTY:
// CHECK-NEXT:   {{\[\[}} 3.0000,  3.5000,  4.0000,  4.5000],
// CHECK:         [ 9.0000,  9.5000, 10.0000, 10.5000]]]]
func.func @main(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = core.Constant {value = dense<1.0> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %c = "core.Convolution"(%x, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %gamma = core.Constant {value = dense<2.0> : tensor<2xf32>} : tensor<2xf32>
  %beta = core.Constant {value = dense<[0.0, 4.0]> : tensor<2xf32>} : tensor<2xf32>
  %mean = core.Constant {value = dense<[0.5, 0.5]> : tensor<2xf32>} : tensor<2xf32>
  %var = core.Constant {value = dense<1.0> : tensor<2xf32>} : tensor<2xf32>
  %y = "core.BatchNormInference"(%c, %gamma, %beta, %mean, %var) {epsilon = 0.0 : f64} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}
