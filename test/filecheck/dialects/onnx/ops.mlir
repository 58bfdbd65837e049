// Round trip of the onnx dialect in the generic format: parse, verify, print, parse again.
// RUN: mlconv-opt %s --split-input-file | mlconv-opt --split-input-file | filecheck %s
// Locations (the source node names) survive the round trip too.
// RUN: mlconv-opt %s --split-input-file --mlir-print-debuginfo | mlconv-opt --split-input-file --mlir-print-debuginfo | filecheck %s --check-prefix=LOC
// LOC: "onnx.Conv"{{.*}} loc("conv1")
// LOC: "onnx.Constant"{{.*}} loc("weights")

// CHECK-LABEL: func.func @conv
// CHECK-SAME:    (%[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK:         %[[Y:.*]] = "onnx.Conv"(%[[X]], %[[W]], %[[B]]) {group = 1 : i64, pads = [1 : i64, 1 : i64, 1 : i64, 1 : i64], auto_pad = "NOTSET"} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
// CHECK:         func.return %[[Y]]
func.func @conv(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x8x8xf32> {
  %y = "onnx.Conv"(%x, %w, %b) {group = 1 : i64, pads = [1 : i64, 1 : i64, 1 : i64, 1 : i64], auto_pad = "NOTSET"} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32> loc("conv1")
  func.return %y : tensor<1x4x8x8xf32>
}

// -----

// CHECK-LABEL: func.func @gemm
// CHECK:         "onnx.Gemm"(%{{.*}}, %{{.*}}) {alpha = 1.000000e+00 : f32, transB = 1 : i64}
func.func @gemm(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> tensor<2x4xf32> {
  %y = "onnx.Gemm"(%a, %b) {alpha = 1.000000e+00 : f32, transB = 1 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @if
// CHECK-SAME:    (%[[C:.*]]: tensor<i1>, %[[X:.*]]: tensor<2xf32>)
// CHECK:         %{{.*}} = "onnx.If"(%[[C]]) ({
// CHECK-NEXT:      %[[T:.*]] = "onnx.Neg"(%[[X]])
// CHECK-NEXT:      "onnx.Yield"(%[[T]]) : (tensor<2xf32>) -> ()
// CHECK-NEXT:    }, {
// CHECK-NEXT:      "onnx.Yield"(%[[X]]) : (tensor<2xf32>) -> ()
// CHECK-NEXT:    }) : (tensor<i1>) -> tensor<2xf32>
func.func @if(%c: tensor<i1>, %x: tensor<2xf32>) -> tensor<2xf32> {
  %y = "onnx.If"(%c) ({
    %t = "onnx.Neg"(%x) : (tensor<2xf32>) -> tensor<2xf32>
    "onnx.Yield"(%t) : (tensor<2xf32>) -> ()
  }, {
    "onnx.Yield"(%x) : (tensor<2xf32>) -> ()
  }) : (tensor<i1>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @loop
// CHECK-SAME:    (%[[N:.*]]: tensor<i64>, %[[C:.*]]: tensor<i1>, %[[V:.*]]: tensor<2xf32>)
// CHECK:         "onnx.Loop"(%[[N]], %[[C]], %[[V]]) ({
// CHECK-NEXT:    ^{{.*}}(%{{.*}}: tensor<i64>, %[[COND:.*]]: tensor<i1>, %[[ACC:.*]]: tensor<2xf32>):
// CHECK-NEXT:      %[[S:.*]] = "onnx.Add"(%[[ACC]], %[[V]])
// CHECK-NEXT:      "onnx.Yield"(%[[COND]], %[[S]])
// CHECK-NEXT:    }) {operandSegmentSizes = array<i32: 1, 1, 1>}
func.func @loop(%n: tensor<i64>, %c: tensor<i1>, %v: tensor<2xf32>) -> tensor<2xf32> {
  %r = "onnx.Loop"(%n, %c, %v) ({
  ^bb0(%i: tensor<i64>, %cond: tensor<i1>, %acc: tensor<2xf32>):
    %s = "onnx.Add"(%acc, %v) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    "onnx.Yield"(%cond, %s) : (tensor<i1>, tensor<2xf32>) -> ()
  }) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<i64>, tensor<i1>, tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @concat
// CHECK-SAME:    (%[[A:.*]]: tensor<1x2xf32>, %[[B:.*]]: tensor<3x2xf32>, %[[C:.*]]: tensor<?x2xf32>)
// CHECK:         "onnx.Concat"(%[[A]], %[[B]], %[[C]]) {axis = 0 : i64} : (tensor<1x2xf32>, tensor<3x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
func.func @concat(%a: tensor<1x2xf32>, %b: tensor<3x2xf32>, %c: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %y = "onnx.Concat"(%a, %b, %c) {axis = 0 : i64} : (tensor<1x2xf32>, tensor<3x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %y : tensor<?x2xf32>
}

// -----

// CHECK-LABEL: func.func @dropout
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[R:.*]]: tensor<f32>)
// CHECK:         "onnx.Dropout"(%[[X]]) {operandSegmentSizes = array<i32: 1, 0, 0>, resultSegmentSizes = array<i32: 1, 0>} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %{{.*}}, %[[MASK:.*]] = "onnx.Dropout"(%[[X]], %[[R]]) {seed = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, resultSegmentSizes = array<i32: 1, 1>}
// CHECK:         func.return %{{.*}}, %[[MASK]]
func.func @dropout(%x: tensor<4xf32>, %r: tensor<f32>) -> (tensor<4xf32>, tensor<4xi1>) {
  %y = "onnx.Dropout"(%x) {operandSegmentSizes = array<i32: 1, 0, 0>, resultSegmentSizes = array<i32: 1, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  %z, %mask = "onnx.Dropout"(%x, %r) {seed = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, resultSegmentSizes = array<i32: 1, 1>} : (tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xi1>)
  func.return %z, %mask : tensor<4xf32>, tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @batchnorm
// CHECK:         "onnx.BatchNormalization"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {epsilon = 1.000000e-05 : f32, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0>}
func.func @batchnorm(%x: tensor<1x2x3x3xf32>, %s: tensor<2xf32>, %b: tensor<2xf32>, %m: tensor<2xf32>, %v: tensor<2xf32>) -> tensor<1x2x3x3xf32> {
  %y = "onnx.BatchNormalization"(%x, %s, %b, %m, %v) {epsilon = 9.99999974E-6 : f32, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0>} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_v1_attribute
// CHECK:         "onnx.Reshape"(%{{.*}}) {shape = [6 : i64]} : (tensor<2x3xf32>) -> tensor<6xf32>
func.func @reshape_v1_attribute(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  %y = "onnx.Reshape"(%x) {shape = [6 : i64]} : (tensor<2x3xf32>) -> tensor<6xf32>
  func.return %y : tensor<6xf32>
}

// CHECK-LABEL: func.func @reshape_v5_operand
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>, %[[SHAPE:.*]]: tensor<1xi64>)
// CHECK:         "onnx.Reshape"(%[[X]], %[[SHAPE]]) : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<6xf32>
func.func @reshape_v5_operand(%x: tensor<2x3xf32>, %shape: tensor<1xi64>) -> tensor<6xf32> {
  %y = "onnx.Reshape"(%x, %shape) : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<6xf32>
  func.return %y : tensor<6xf32>
}

// -----

// CHECK-LABEL: func.func @constant
// CHECK:         "onnx.Constant"() {value = dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
func.func @constant() -> tensor<2x2xf32> {
  %c = "onnx.Constant"() {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32> loc("weights")
  func.return %c : tensor<2x2xf32>
}
