// RUN: mlconv-opt %s --pass-pipeline='builtin.module(onnx-decompose)' --split-input-file | filecheck %s
// RUN: mlconv-opt %s --pass-pipeline='builtin.module(onnx-decompose{all=true})' --split-input-file | filecheck %s --check-prefix=ALL

// A function op with a native lowering is kept, unless all=true.
// CHECK-LABEL: func.func @celu
// CHECK:         "onnx.Celu"
// ALL-LABEL:   func.func @celu
// ALL:           %[[ALPHA:.*]] = "onnx.Constant"() {value = dense<2.000000e+00> : tensor<1xf32>}
// ALL:           %[[DIV:.*]] = "onnx.Div"(%{{.*}}, %[[ALPHA]])
// ALL:           %[[ELU:.*]] = "onnx.Elu"(%[[DIV]]) {alpha = 1.000000e+00 : f32}
// ALL:           %[[Y:.*]] = "onnx.Mul"(%[[ALPHA]], %[[ELU]])
// ALL:           func.return %[[Y]]
builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @celu(%x: tensor<3xf32>) -> tensor<3xf32> {
    %y = "onnx.Celu"(%x) {alpha = 2.0 : f32} : (tensor<3xf32>) -> tensor<3xf32>
    func.return %y : tensor<3xf32>
  }
}

// -----

// A plain function body (MeanVarianceNormalization-13, no native lowering: expanded under
// the default too), the schema's default axes spelled out.
// CHECK-LABEL: func.func @mvn
// CHECK:         "onnx.ReduceMean"(%{{.*}}) {axes = [0 : i64, 2 : i64, 3 : i64]}
// CHECK-NOT:     "onnx.MeanVarianceNormalization"
// ALL-LABEL:   func.func @mvn
// ALL:           "onnx.ReduceMean"
// ALL:           "onnx.Sqrt"
// ALL:           %[[Y:.*]] = "onnx.Div"
// ALL:           func.return %[[Y]]
builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @mvn(%x: tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32> {
    %y = "onnx.MeanVarianceNormalization"(%x) : (tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
    func.return %y : tensor<2x3x4x4xf32>
  }
}

// -----

// A context-dependent body whose ops include another function op, expanded in turn.
// ALL-LABEL:   func.func @softmax_cross_entropy
// ALL:           "onnx.LogSoftmax"
// ALL-NOT:       "onnx.NegativeLogLikelihoodLoss"
// ALL:           "onnx.GatherElements"
// ALL:           %[[Y:.*]] = "onnx.ReduceMean"
// ALL:           func.return %[[Y]] : tensor<f32>
builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @softmax_cross_entropy(%x: tensor<3x5xf32>, %t: tensor<3xi64>) -> tensor<f32> {
    %y = "onnx.SoftmaxCrossEntropyLoss"(%x, %t) {reduction = "mean", operandSegmentSizes = array<i32: 1, 1, 0>, resultSegmentSizes = array<i32: 1, 0>} : (tensor<3x5xf32>, tensor<3xi64>) -> tensor<f32>
    func.return %y : tensor<f32>
  }
}
