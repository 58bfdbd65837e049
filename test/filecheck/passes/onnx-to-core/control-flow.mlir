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

// A trip count known only at run time: the scan output's rows come from the shape the model
// declares for a Cast of it (ONNX's expanded Range functions for f16/bf16 cast it so).
// CHECK-LABEL: func.func @loop_scan_output_behind_cast
// CHECK:         %{{.*}}, %[[YS:.*]] = "core.Loop"
// CHECK:         max_iterations = 2 : i64
// CHECK:         "core.Convert"(%[[YS]]) {destination_type = f16} {{.*}} -> tensor<2xf16>
builtin.module attributes {onnx.opset_import = {"" = 17 : i64}} {
  func.func @loop_scan_output_behind_cast(%n: tensor<i64>, %y0: tensor<f32>) -> tensor<2xf16> {
    %yf, %ys = "onnx.Loop"(%n, %y0) ({
    ^bb0(%i: tensor<i64>, %cond: tensor<i1>, %y: tensor<f32>):
      %next = "onnx.Add"(%y, %y) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "onnx.Yield"(%cond, %next, %y) : (tensor<i1>, tensor<f32>, tensor<f32>) -> ()
    }) {operandSegmentSizes = array<i32: 1, 0, 1>} : (tensor<i64>, tensor<f32>) -> (tensor<f32>, tensor<?xf32>)
    %out = "onnx.Cast"(%ys) {to = 10 : i64} : (tensor<?xf32>) -> tensor<2xf16>
    func.return %out : tensor<2xf16>
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

// -----

// Scan-8: a batch axis before the sequence axis. An outer Scan over the batch (no state,
// everything sliced on axis 0) runs a Scan-9 of the body per batch entry; `directions`
// becomes the inner scan's scan_input_directions.
// CHECK-LABEL: func.func @scan8_batch
// CHECK-SAME:    (%[[S0:.*]]: tensor<2x3xf32>, %[[XS:.*]]: tensor<2x4x3xf32>)
// CHECK:         "core.Scan"(%[[S0]], %[[XS]]) <{operandSegmentSizes = array<i32: 0, 2, 0>}> ({
// CHECK-NEXT:    ^{{.*}}(%[[S:.*]]: tensor<3xf32>, %[[X:.*]]: tensor<4x3xf32>):
// CHECK-NEXT:      %[[IS:.*]], %[[IYS:.*]] = "core.Scan"(%[[S]], %[[X]]) <{operandSegmentSizes = array<i32: 1, 1, 0>}> ({
// CHECK:             "core.Add"
// CHECK:           }) {scan_input_directions = array<i64: 1>} : (tensor<3xf32>, tensor<4x3xf32>) -> (tensor<3xf32>, tensor<4x3xf32>)
// CHECK-NEXT:      core.Yield %[[IS]], %[[IYS]] : tensor<3xf32>, tensor<4x3xf32>
// CHECK-NEXT:    }) : (tensor<2x3xf32>, tensor<2x4x3xf32>) -> (tensor<2x3xf32>, tensor<2x4x3xf32>)
builtin.module attributes {onnx.opset_import = {"" = 8 : i64}} {
  func.func @scan8_batch(%s0: tensor<2x3xf32>, %xs: tensor<2x4x3xf32>) -> (tensor<2x3xf32>, tensor<2x4x3xf32>) {
    %s, %ys = "onnx.Scan"(%s0, %xs) ({
    ^bb0(%acc: tensor<3xf32>, %x: tensor<3xf32>):
      %next = "onnx.Add"(%acc, %x) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      "onnx.Yield"(%next, %next) : (tensor<3xf32>, tensor<3xf32>) -> ()
    }) {num_scan_inputs = 1 : i64, directions = [1], operandSegmentSizes = array<i32: 2, 0>} : (tensor<2x3xf32>, tensor<2x4x3xf32>) -> (tensor<2x3xf32>, tensor<2x4x3xf32>)
    func.return %s, %ys : tensor<2x3xf32>, tensor<2x4x3xf32>
  }
}
