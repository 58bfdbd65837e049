// RUN: mlconv-opt %s --pass-pipeline='builtin.module(onnx-to-core)' --split-input-file | filecheck %s

// ai.onnx.ml Scaler: (x - offset) * scale.
// CHECK-LABEL: func.func @scaler
// CHECK:         %[[OFFSET:.*]] = core.Constant {value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>}
// CHECK:         %[[SUB:.*]] = "core.Subtract"(%{{.*}}, %[[OFFSET]])
// CHECK:         %[[SCALE:.*]] = core.Constant {value = dense<[5.000000e-01, 4.000000e+00]> : tensor<2xf32>}
// CHECK:         "core.Multiply"(%[[SUB]], %[[SCALE]]) : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>

builtin.module attributes {onnx.opset_import = {"" = 17 : i64, "ai.onnx.ml" = 3 : i64}} {
  func.func @scaler(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
    %y = "onnx.Custom"(%x) {domain = "ai.onnx.ml", op_type = "Scaler", version = 3 : i64, attrs = {offset = [1.0 : f32, 2.0 : f32], scale = [0.5 : f32, 4.0 : f32]}} : (tensor<?x2xf32>) -> tensor<?x2xf32>
    func.return %y : tensor<?x2xf32>
  }
}

// -----

// A tree ensemble is a vectorized traversal: one step per level of the deepest tree (here
// two: a root, one inner node, three leaves), each a GatherElements of the samples' features
// at the current nodes, a comparison and a Select of the next nodes; then the leaves' weights
// are gathered per (sample, tree) and summed over the trees.
// CHECK-LABEL: func.func @tree_regressor
// CHECK-COUNT-2: "core.GatherElements"
// CHECK:         %[[LEAF:.*]] = "core.Select"
// CHECK:         %[[W:.*]] = "core.Gather"(%{{.*}}, %[[LEAF]], %{{.*}}) {{.*}} -> tensor<?x1x1xf32>
// CHECK:         "core.ReduceSum"(%[[W]], %{{.*}}) {keep_dims = false} : (tensor<?x1x1xf32>, tensor<1xi64>) -> tensor<?x1xf32>

builtin.module attributes {onnx.opset_import = {"" = 17 : i64, "ai.onnx.ml" = 3 : i64}} {
  func.func @tree_regressor(%x: tensor<?x3xf32>) -> tensor<?x1xf32> {
    %y = "onnx.Custom"(%x) {domain = "ai.onnx.ml", op_type = "TreeEnsembleRegressor", version = 3 : i64, attrs = {
      n_targets = 1 : i64,
      nodes_treeids = [0 : i64, 0 : i64, 0 : i64, 0 : i64, 0 : i64],
      nodes_nodeids = [0 : i64, 1 : i64, 2 : i64, 3 : i64, 4 : i64],
      nodes_featureids = [0 : i64, 2 : i64, 0 : i64, 0 : i64, 0 : i64],
      nodes_modes = ["BRANCH_LEQ", "BRANCH_LT", "LEAF", "LEAF", "LEAF"],
      nodes_values = [0.5 : f32, -1.0 : f32, 0.0 : f32, 0.0 : f32, 0.0 : f32],
      nodes_truenodeids = [1 : i64, 3 : i64, 0 : i64, 0 : i64, 0 : i64],
      nodes_falsenodeids = [2 : i64, 4 : i64, 0 : i64, 0 : i64, 0 : i64],
      target_treeids = [0 : i64, 0 : i64, 0 : i64],
      target_nodeids = [2 : i64, 3 : i64, 4 : i64],
      target_ids = [0 : i64, 0 : i64, 0 : i64],
      target_weights = [10.0 : f32, 20.0 : f32, 30.0 : f32]}} : (tensor<?x3xf32>) -> tensor<?x1xf32>
    func.return %y : tensor<?x1xf32>
  }
}
