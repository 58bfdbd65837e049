// RUN: mlconv-opt %s --pass-pipeline='builtin.module(onnx-to-core)' --split-input-file | filecheck %s

// If: the branches' outer reference %x becomes a captured operand and a block argument of
// both branches; onnx.Yield becomes core.Yield.
// CHECK-LABEL: func.func @if_captures
// CHECK-SAME:    (%[[C:.*]]: tensor<i1>, %[[X:.*]]: tensor<2xf32>)
// CHECK:         %[[Y:.*]] = "core.If"(%[[C]], %[[X]]) ({
// CHECK-NEXT:    ^{{.*}}(%[[T:.*]]: tensor<2xf32>):
// CHECK-NEXT:      %[[SUM:.*]] = "core.Add"(%[[T]], %[[T]])
// CHECK-NEXT:      core.Yield %[[SUM]] : tensor<2xf32>
// CHECK:         ^{{.*}}(%[[E:.*]]: tensor<2xf32>):
// CHECK-NEXT:      %[[NEG:.*]] = "core.Negative"(%[[E]])
// CHECK-NEXT:      core.Yield %[[NEG]] : tensor<2xf32>
// CHECK:         }) : (tensor<i1>, tensor<2xf32>) -> tensor<2xf32>
// CHECK:         func.return %[[Y]]
builtin.module attributes {onnx.opset_import = {"" = 17 : i64}} {
  func.func @if_captures(%c: tensor<i1>, %x: tensor<2xf32>) -> tensor<2xf32> {
    %y = "onnx.If"(%c) ({
      %t = "onnx.Add"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      "onnx.Yield"(%t) : (tensor<2xf32>) -> ()
    }, {
      %e = "onnx.Neg"(%x) : (tensor<2xf32>) -> tensor<2xf32>
      "onnx.Yield"(%e) : (tensor<2xf32>) -> ()
    }) : (tensor<i1>) -> tensor<2xf32>
    func.return %y : tensor<2xf32>
  }
}

// -----

// Loop with a constant trip count and no condition: the condition becomes a constant true,
// the scan output is sized by the trip count (max_iterations), %d is captured.
// CHECK-LABEL: func.func @loop_scan_output
// CHECK-SAME:    (%[[Y0:.*]]: tensor<1xf32>, %[[D:.*]]: tensor<1xf32>)
// CHECK-DAG:     %[[N:.*]] = core.Constant {value = dense<3> : tensor<i64>}
// CHECK-DAG:     %[[TRUE:.*]] = core.Constant {value = dense<true> : tensor<i1>}
// CHECK:         {{.*}} = "core.Loop"(%[[N]], %[[TRUE]], %[[Y0]], %[[D]]) {{.*}}({
// CHECK-NEXT:    ^{{.*}}(%{{.*}}: tensor<i64>, %[[COND:.*]]: tensor<i1>, %[[Y:.*]]: tensor<1xf32>, %[[DD:.*]]: tensor<1xf32>):
// CHECK-NEXT:      %[[NEXT:.*]] = "core.Add"(%[[Y]], %[[DD]])
// CHECK-NEXT:      core.Yield %[[COND]], %[[NEXT]], %[[Y]] : tensor<i1>, tensor<1xf32>, tensor<1xf32>
// CHECK:         max_iterations = 3 : i64
// CHECK-SAME:    -> (tensor<1xf32>, tensor<3x1xf32>)
builtin.module attributes {onnx.opset_import = {"" = 17 : i64}} {
  func.func @loop_scan_output(%y0: tensor<1xf32>, %d: tensor<1xf32>) -> (tensor<1xf32>, tensor<3x1xf32>) {
    %n = "onnx.Constant"() {value = dense<3> : tensor<i64>} : () -> tensor<i64>
    %yf, %ys = "onnx.Loop"(%n, %y0) ({
    ^bb0(%i: tensor<i64>, %cond: tensor<i1>, %y: tensor<1xf32>):
      %next = "onnx.Add"(%y, %d) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
      "onnx.Yield"(%cond, %next, %y) : (tensor<i1>, tensor<1xf32>, tensor<1xf32>) -> ()
    }) {operandSegmentSizes = array<i32: 1, 0, 1>} : (tensor<i64>, tensor<1xf32>) -> (tensor<1xf32>, tensor<3x1xf32>)
    func.return %yf, %ys : tensor<1xf32>, tensor<3x1xf32>
  }
}

// -----

// Scan-9: one state, one scan input; the axes/directions attributes carry over.
// CHECK-LABEL: func.func @scan_sum
// CHECK-SAME:    (%[[S0:.*]]: tensor<2xf32>, %[[XS:.*]]: tensor<3x2xf32>)
// CHECK:         {{.*}} = "core.Scan"(%[[S0]], %[[XS]]) {{.*}}({
// CHECK-NEXT:    ^{{.*}}(%[[S:.*]]: tensor<2xf32>, %[[X:.*]]: tensor<2xf32>):
// CHECK-NEXT:      %[[SUM:.*]] = "core.Add"(%[[S]], %[[X]])
// CHECK-NEXT:      core.Yield %[[SUM]], %[[SUM]] : tensor<2xf32>, tensor<2xf32>
// CHECK:         scan_input_directions = array<i64: 1>
// CHECK-SAME:    -> (tensor<2xf32>, tensor<3x2xf32>)
builtin.module attributes {onnx.opset_import = {"" = 17 : i64}} {
  func.func @scan_sum(%s0: tensor<2xf32>, %xs: tensor<3x2xf32>) -> (tensor<2xf32>, tensor<3x2xf32>) {
    %s, %ys = "onnx.Scan"(%s0, %xs) ({
    ^bb0(%st: tensor<2xf32>, %x: tensor<2xf32>):
      %sum = "onnx.Add"(%st, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      "onnx.Yield"(%sum, %sum) : (tensor<2xf32>, tensor<2xf32>) -> ()
    }) {operandSegmentSizes = array<i32: 2, 0>, num_scan_inputs = 1 : i64, scan_input_directions = [1 : i64]} : (tensor<2xf32>, tensor<3x2xf32>) -> (tensor<2xf32>, tensor<3x2xf32>)
    func.return %s, %ys : tensor<2xf32>, tensor<3x2xf32>
  }
}
