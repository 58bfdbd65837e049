// RUN: mlconv-opt %s --pass-pipeline='builtin.module(onnx-to-core)' --split-input-file | filecheck %s

// Versioned tensor lowerings: attribute forms of old opsets vs input forms of new ones.

// Reshape-1: the target shape is an attribute, materialized as a constant.
// CHECK-LABEL: func.func @reshape_v1
// CHECK:         %[[SHAPE:.*]] = core.Constant {value = dense<[6, 4]> : tensor<2xi64>}
// CHECK:         "core.Reshape"(%{{.*}}, %[[SHAPE]]) {special_zero = true}
// CHECK-NOT:     "onnx.

builtin.module attributes {onnx.opset_import = {"" = 1 : i64}} {
  func.func @reshape_v1(%x: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
    %r = "onnx.Reshape"(%x) {shape = [6 : i64, 4 : i64]} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
    func.return %r : tensor<6x4xf32>
  }
}

// -----

// Reshape-5: the target shape is an input, passed through (bound at call time); its static
// length still gives the result's rank.
// CHECK-LABEL: func.func @reshape_v5
// CHECK-SAME:    %[[SHAPE:[a-z0-9]+]]: tensor<2xi64>
// CHECK-SAME:    -> tensor<?x?xf32>
// CHECK:         "core.Reshape"(%{{.*}}, %[[SHAPE]]) {special_zero = true} : {{.*}} -> tensor<?x?xf32>

builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @reshape_v5(%x: tensor<2x3x4xf32>, %shape: tensor<2xi64>) -> tensor<*xf32> {
    %r = "onnx.Reshape"(%x, %shape) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<*xf32>
    func.return %r : tensor<*xf32>
  }
}

// -----

// Slice-1: starts/ends/axes attributes become constants, steps are ones.
// CHECK-LABEL: func.func @slice_v1
// CHECK:         %[[START:.*]] = core.Constant {value = dense<1> : tensor<1xi64>}
// CHECK:         %[[STOP:.*]] = core.Constant {value = dense<3> : tensor<1xi64>}
// CHECK:         %[[STEP:.*]] = core.Constant {value = dense<1> : tensor<1xi64>}
// CHECK:         %[[AXES:.*]] = core.Constant {value = dense<0> : tensor<1xi64>}
// CHECK:         "core.Slice"(%{{.*}}, %[[START]], %[[STOP]], %[[STEP]], %[[AXES]]) {{.*}} -> tensor<2x10xf32>

builtin.module attributes {onnx.opset_import = {"" = 9 : i64}} {
  func.func @slice_v1(%x: tensor<20x10xf32>) -> tensor<2x10xf32> {
    %s = "onnx.Slice"(%x) {axes = [0 : i64], ends = [3 : i64], starts = [1 : i64], operandSegmentSizes = array<i32: 1, 0, 0, 0, 0>} : (tensor<20x10xf32>) -> tensor<2x10xf32>
    func.return %s : tensor<2x10xf32>
  }
}

// -----

// Slice-10: starts/ends/axes are inputs; absent steps are ones, one per start.
// CHECK-LABEL: func.func @slice_v10
// CHECK-SAME:    %[[STARTS:[a-z0-9]+]]: tensor<2xi64>, %[[ENDS:[a-z0-9]+]]: tensor<2xi64>, %[[AXES:[a-z0-9]+]]: tensor<2xi64>
// CHECK:         %[[STEPS:.*]] = core.Constant {value = dense<1> : tensor<2xi64>}
// CHECK:         "core.Slice"(%{{.*}}, %[[STARTS]], %[[ENDS]], %[[STEPS]], %[[AXES]])

builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @slice_v10(%x: tensor<20x10xf32>, %starts: tensor<2xi64>, %ends: tensor<2xi64>, %axes: tensor<2xi64>) -> tensor<*xf32> {
    %s = "onnx.Slice"(%x, %starts, %ends, %axes) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (tensor<20x10xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<*xf32>
    func.return %s : tensor<*xf32>
  }
}

// -----

// Squeeze-11: axes attribute.
// CHECK-LABEL: func.func @squeeze_v11
// CHECK:         %[[AXES:.*]] = core.Constant {value = dense<[0, 2]> : tensor<2xi64>}
// CHECK:         "core.Squeeze"(%{{.*}}, %[[AXES]]) {{.*}} -> tensor<3x5xf32>

builtin.module attributes {onnx.opset_import = {"" = 11 : i64}} {
  func.func @squeeze_v11(%x: tensor<1x3x1x5xf32>) -> tensor<3x5xf32> {
    %s = "onnx.Squeeze"(%x) {axes = [0 : i64, 2 : i64]} : (tensor<1x3x1x5xf32>) -> tensor<3x5xf32>
    func.return %s : tensor<3x5xf32>
  }
}

// -----

// Squeeze-13: axes input.
// CHECK-LABEL: func.func @squeeze_v13
// CHECK-SAME:    %[[AXES:[a-z0-9]+]]: tensor<2xi64>
// CHECK:         "core.Squeeze"(%{{.*}}, %[[AXES]]) : {{.*}} -> tensor<*xf32>

builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @squeeze_v13(%x: tensor<1x3x1x5xf32>, %axes: tensor<2xi64>) -> tensor<*xf32> {
    %s = "onnx.Squeeze"(%x, %axes) : (tensor<1x3x1x5xf32>, tensor<2xi64>) -> tensor<*xf32>
    func.return %s : tensor<*xf32>
  }
}

// -----

// TopK-1: k attribute; indices are i64 and ties keep index order (stable).
// CHECK-LABEL: func.func @topk_v1
// CHECK:         %[[K:.*]] = core.Constant {value = dense<2> : tensor<i64>}
// CHECK:         %{{.*}}, %{{.*}} = "core.TopK"(%{{.*}}, %[[K]]) {axis = 1 : i64, mode = "max", sort = "value", index_element_type = i64, stable = true}
// CHECK-SAME:    -> (tensor<3x2xf32>, tensor<3x2xi64>)

builtin.module attributes {onnx.opset_import = {"" = 9 : i64}} {
  func.func @topk_v1(%x: tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>) {
    %v, %i = "onnx.TopK"(%x) {axis = 1 : i64, k = 2 : i64} : (tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
    func.return %v, %i : tensor<3x2xf32>, tensor<3x2xi64>
  }
}

// -----

// TopK-10: k input; the results stay unranked until k is known, indices still i64.
// CHECK-LABEL: func.func @topk_v10
// CHECK-SAME:    %[[K:[a-z0-9]+]]: tensor<1xi64>
// CHECK:         "core.TopK"(%{{.*}}, %[[K]]) {{.*}} -> (tensor<*xf32>, tensor<*xi64>)

builtin.module attributes {onnx.opset_import = {"" = 10 : i64}} {
  func.func @topk_v10(%x: tensor<3x4xf32>, %k: tensor<1xi64>) -> (tensor<*xf32>, tensor<*xi64>) {
    %v, %i = "onnx.TopK"(%x, %k) {axis = 1 : i64} : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<*xf32>, tensor<*xi64>)
    func.return %v, %i : tensor<*xf32>, tensor<*xi64>
  }
}

// -----

// Flatten with a dynamic leading dim: ShapeOf -> Gather -> ReduceProd -> Concat(-1) -> Reshape.
// CHECK-LABEL: func.func @flatten_dynamic_batch
// CHECK:         %[[SHAPE:.*]] = "core.ShapeOf"(%[[X:.*]]) : (tensor<?x3x4x5xf32>) -> tensor<4xi64>
// CHECK:         %[[LEADING:.*]] = core.Constant {value = dense<[0, 1]> : tensor<2xi64>}
// CHECK:         %[[DIMS:.*]] = "core.Gather"(%[[SHAPE]], %[[LEADING]], %{{.*}})
// CHECK:         %[[OUTER:.*]] = "core.ReduceProd"(%[[DIMS]], %{{.*}}) {keep_dims = true}
// CHECK:         %[[REST:.*]] = core.Constant {value = dense<-1> : tensor<1xi64>}
// CHECK:         %[[TARGET:.*]] = "core.Concat"(%[[OUTER]], %[[REST]]) {axis = 0 : i64}
// CHECK:         "core.Reshape"(%[[X]], %[[TARGET]])

builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @flatten_dynamic_batch(%x: tensor<?x3x4x5xf32>) -> tensor<*xf32> {
    %f = "onnx.Flatten"(%x) {axis = 2 : i64} : (tensor<?x3x4x5xf32>) -> tensor<*xf32>
    func.return %f : tensor<*xf32>
  }
}

// -----

// MaxUnpool: X's values go to their flat indices in zeros of MaxPool's input size
// ((2 - 1) * 2 + 2 = 4 per spatial dim), one ScatterElementsUpdate on the flattened tensor;
// output_shape (a model input, bound per call) pads the end of each dim.
// CHECK-LABEL: func.func @max_unpool
// CHECK-SAME:    (%[[X:.*]]: tensor<1x1x2x2xf32>, %[[I:.*]]: tensor<1x1x2x2xi64>, %[[S:.*]]: tensor<4xi64>)
// CHECK:         %[[Z:.*]] = core.Constant {value = dense<0.000000e+00> : tensor<16xf32>}
// CHECK:         %[[FI:.*]] = "core.Reshape"(%[[I]], %{{.*}}) : (tensor<1x1x2x2xi64>, tensor<1xi64>) -> tensor<4xi64>
// CHECK:         %[[FX:.*]] = "core.Reshape"(%[[X]], %{{.*}}) : (tensor<1x1x2x2xf32>, tensor<1xi64>) -> tensor<4xf32>
// CHECK:         %[[SC:.*]] = "core.ScatterElementsUpdate"(%[[Z]], %[[FI]], %[[FX]], %{{.*}}) {reduction = "none"}
// CHECK:         %[[Y:.*]] = "core.Reshape"(%[[SC]], %{{.*}}) : (tensor<16xf32>, tensor<4xi64>) -> tensor<1x1x4x4xf32>
// CHECK:         %[[INF:.*]] = core.Constant {value = dense<[1, 1, 4, 4]> : tensor<4xi64>}
// CHECK:         %[[GROW:.*]] = "core.Subtract"(%[[S]], %[[INF]])
// CHECK:         "core.Pad"(%[[Y]], %{{.*}}, %[[GROW]]) {pad_mode = "constant"}
builtin.module attributes {onnx.opset_import = {"" = 22 : i64}} {
  func.func @max_unpool(%x: tensor<1x1x2x2xf32>, %i: tensor<1x1x2x2xi64>, %s: tensor<4xi64>) -> tensor<?x?x?x?xf32> {
    %y = "onnx.MaxUnpool"(%x, %i, %s) {kernel_shape = [2 : i64, 2 : i64], strides = [2 : i64, 2 : i64]} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
    func.return %y : tensor<?x?x?x?xf32>
  }
}

// -----

// TensorScatter (circular): cache position p of sample n takes update[(p - w[n]) mod 4]
// where that offset is below the update's length 2, else keeps the cache's value.
// CHECK-LABEL: func.func @tensor_scatter
// CHECK-SAME:    (%[[C:.*]]: tensor<2x4x5xf32>, %[[U:.*]]: tensor<2x2x5xf32>, %[[W:.*]]: tensor<2xi64>)
// CHECK:         %[[START:.*]] = "core.Reshape"(%[[W]], %{{.*}}) : (tensor<2xi64>, tensor<3xi64>) -> tensor<2x1x1xi64>
// CHECK:         %[[P:.*]] = core.Constant {value = dense<{{\[\[\[}}0], [1], [2], [3]]]> : tensor<1x4x1xi64>}
// CHECK:         %[[D:.*]] = "core.Subtract"(%[[P]], %[[START]]) : (tensor<1x4x1xi64>, tensor<2x1x1xi64>) -> tensor<2x4x1xi64>
// CHECK:         %[[OFF:.*]] = "core.FloorMod"(%[[D]], %{{.*}})
// CHECK:         %[[LO:.*]] = "core.GreaterEqual"(%[[OFF]], %{{.*}})
// CHECK:         %[[TWO:.*]] = core.Constant {value = dense<2> : tensor<i64>}
// CHECK:         %[[HI:.*]] = "core.Less"(%[[OFF]], %[[TWO]])
// CHECK:         %[[IN:.*]] = "core.LogicalAnd"(%[[LO]], %[[HI]])
// CHECK:         %[[CL:.*]] = "core.Clamp"(%[[OFF]]) {min = 0.000000e+00 : f64, max = 1.000000e+00 : f64}
// CHECK:         %[[IDX:.*]] = "core.Broadcast"(%[[CL]], %{{.*}}) {mode = "numpy"} : (tensor<2x4x1xi64>, tensor<3xi64>) -> tensor<2x4x5xi64>
// CHECK:         %[[T:.*]] = "core.GatherElements"(%[[U]], %[[IDX]]) {axis = 1 : i64}
// CHECK:         "core.Select"(%[[IN]], %[[T]], %[[C]])
builtin.module attributes {onnx.opset_import = {"" = 24 : i64}} {
  func.func @tensor_scatter(%c: tensor<2x4x5xf32>, %u: tensor<2x2x5xf32>, %w: tensor<2xi64>) -> tensor<2x4x5xf32> {
    %y = "onnx.TensorScatter"(%c, %u, %w) {mode = "circular"} : (tensor<2x4x5xf32>, tensor<2x2x5xf32>, tensor<2xi64>) -> tensor<2x4x5xf32>
    func.return %y : tensor<2x4x5xf32>
  }
}

// -----

// Optional ops on plain tensors (optional-typed values are refused at import): the element of
// a tensor is the tensor; HasElement is true with an input and false without one.
// CHECK-LABEL: func.func @optional_ops
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK:         %[[H:.*]] = core.Constant {value = dense<true> : tensor<i1>}
// CHECK:         %[[N:.*]] = core.Constant {value = dense<false> : tensor<i1>}
// CHECK:         func.return %[[X]], %[[H]], %[[N]]
builtin.module attributes {onnx.opset_import = {"" = 18 : i64}} {
  func.func @optional_ops(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<i1>, tensor<i1>) {
    %e = "onnx.OptionalGetElement"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %h = "onnx.OptionalHasElement"(%x) : (tensor<4xf32>) -> tensor<i1>
    %n = "onnx.OptionalHasElement"() : () -> tensor<i1>
    func.return %e, %h, %n : tensor<4xf32>, tensor<i1>, tensor<i1>
  }
}
