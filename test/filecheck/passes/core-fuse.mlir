// RUN: mlconv-opt %s --pass-pipeline='builtin.module(core-fuse)' --split-input-file | filecheck %s

// Convolution + BatchNormInference with constant statistics: one convolution with rescaled
// filters (gamma / sqrt(var + eps) = 2 here) and a per-channel bias (beta - mean * scale).

// CHECK-LABEL: func.func @conv_bn
// CHECK:         %[[W:.*]] = core.Constant {value = dense<2.000000e+00> : tensor<2x1x1x1xf32>}
// CHECK:         %[[B:.*]] = core.Constant {value = dense<{{\[\[\[}}-1.000000e+00]], {{\[\[}}3.000000e+00]]]> : tensor<2x1x1xf32>}
// CHECK:         %[[C:.*]] = "core.Convolution"(%{{.*}}, %[[W]])
// CHECK:         %[[Y:.*]] = "core.Add"(%[[C]], %[[B]])
// CHECK-NOT:     core.BatchNormInference
// CHECK:         func.return %[[Y]]
func.func @conv_bn(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = core.Constant {value = dense<1.0> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %c = "core.Convolution"(%x, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %gamma = core.Constant {value = dense<2.0> : tensor<2xf32>} : tensor<2xf32>
  %beta = core.Constant {value = dense<[0.0, 4.0]> : tensor<2xf32>} : tensor<2xf32>
  %mean = core.Constant {value = dense<[0.5, 0.5]> : tensor<2xf32>} : tensor<2xf32>
  %var = core.Constant {value = dense<1.0> : tensor<2xf32>} : tensor<2xf32>
  %y = "core.BatchNormInference"(%c, %gamma, %beta, %mean, %var) {epsilon = 0.0 : f64} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// x * sigmoid(x) is Swish without beta.

// CHECK-LABEL: func.func @swish_sigmoid
// CHECK:         %[[S:.*]] = "core.Swish"(%[[X:.*]]) : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NOT:     core.Sigmoid
// CHECK:         func.return %[[S]]
func.func @swish_sigmoid(%x: tensor<8xf32>) -> tensor<8xf32> {
  %s = "core.Sigmoid"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %y = "core.Multiply"(%x, %s) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// Seed 000's x / (1 + e^(-beta*x)) is Swish with beta.

// CHECK-LABEL: func.func @swish_division
// CHECK:         %[[BETA:.*]] = core.Constant {value = dense<1.500000e+00> : tensor<f32>}
// CHECK:         %[[S:.*]] = "core.Swish"(%[[X:.*]], %[[BETA]])
// CHECK-NOT:     core.Exp
// CHECK:         func.return %[[S]]
func.func @swish_division(%x: tensor<8xf32>) -> tensor<8xf32> {
  %beta = core.Constant {value = dense<1.5> : tensor<f32>} : tensor<f32>
  %one = core.Constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %bx = "core.Multiply"(%beta, %x) : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %n = "core.Negative"(%bx) : (tensor<8xf32>) -> tensor<8xf32>
  %e = "core.Exp"(%n) : (tensor<8xf32>) -> tensor<8xf32>
  %d = "core.Add"(%one, %e) : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %y = "core.Divide"(%x, %d) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}
