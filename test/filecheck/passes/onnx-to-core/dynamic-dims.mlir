// RUN: mlconv-opt %s --pass-pipeline='builtin.module(onnx-to-core)' --split-input-file | filecheck %s
// RUN: not mlconv-opt %S/../Inputs/onnx-type-conflict.mlir -p onnx-to-core 2>&1 | filecheck %s --check-prefix=CONFLICT

// A lowering whose static dims contradict the ONNX result type is an error at the node.
// CONFLICT: loc("wrong_type"): error: 'onnx.Reshape' op the lowering gives tensor<?x4x6xf32>, inconsistent with the result type: dimension 1 is 4 where tensor<?x3x8xf32> has 3

// The ONNX result type is kept where the core value knows less: a Reshape to a shape that is
// a model input gets its rank from the shape's static length, and its dims from the ONNX type.
// CHECK-LABEL: func.func @reshape_keeps_onnx_type
// CHECK-SAME:    -> tensor<?x4xf32>
// CHECK:         %[[R:.*]] = "core.Reshape"({{.*}}) {{.*}} -> tensor<?x4xf32>
// CHECK:         func.return %[[R]] : tensor<?x4xf32>

builtin.module attributes {onnx.opset_import = {"" = 17 : i64}} {
  func.func @reshape_keeps_onnx_type(%x: tensor<?x8xf32>, %shape: tensor<2xi64>) -> tensor<?x4xf32> {
    %r = "onnx.Reshape"(%x, %shape) : (tensor<?x8xf32>, tensor<2xi64>) -> tensor<?x4xf32>
    func.return %r : tensor<?x4xf32>
  }
}

// -----

// The exporters' Shape -> Gather -> Unsqueeze -> Concat -> Reshape: the shape operand is
// evaluated with probe sizes for the dynamic dims, so the result is ranked with its static dims
// although ONNX shape inference left it unranked, and LayerNormalization lowers.
// CHECK-LABEL: func.func @split_heads
// CHECK-SAME:    -> tensor<?x?x4x8xf32>
// CHECK:         %[[SHAPE:.*]] = "core.Concat"
// CHECK:         %[[HEADS:.*]] = "core.Reshape"(%{{.*}}, %[[SHAPE]]) {{.*}} -> tensor<?x?x4x8xf32>
// CHECK:         "core.MVN"(%[[HEADS]], %{{.*}}) {{.*}} -> tensor<?x?x4x8xf32>

builtin.module attributes {onnx.opset_import = {"" = 17 : i64}} {
  func.func @split_heads(%x: tensor<?x?x32xf32>) -> tensor<*xf32> {
    %s = "onnx.Shape"(%x) : (tensor<?x?x32xf32>) -> tensor<3xi64>
    %i0 = "onnx.Constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %i1 = "onnx.Constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
    %b = "onnx.Gather"(%s, %i0) {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
    %t = "onnx.Gather"(%s, %i1) {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
    %axes = "onnx.Constant"() {value = dense<0> : tensor<1xi64>} : () -> tensor<1xi64>
    %b1 = "onnx.Unsqueeze"(%b, %axes) : (tensor<i64>, tensor<1xi64>) -> tensor<*xi64>
    %t1 = "onnx.Unsqueeze"(%t, %axes) : (tensor<i64>, tensor<1xi64>) -> tensor<*xi64>
    %heads = "onnx.Constant"() {value = dense<[4, 8]> : tensor<2xi64>} : () -> tensor<2xi64>
    %shape = "onnx.Concat"(%b1, %t1, %heads) {axis = 0 : i64} : (tensor<*xi64>, tensor<*xi64>, tensor<2xi64>) -> tensor<*xi64>
    %r = "onnx.Reshape"(%x, %shape) : (tensor<?x?x32xf32>, tensor<*xi64>) -> tensor<*xf32>
    %scale = "onnx.Constant"() {value = dense<1.0> : tensor<8xf32>} : () -> tensor<8xf32>
    %y = "onnx.LayerNormalization"(%r, %scale) {axis = -1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<*xf32>, tensor<8xf32>) -> tensor<*xf32>
    func.return %y : tensor<*xf32>
  }
}

// -----

// Flatten of a dynamic batch copies the batch (special_zero) and keeps `?x8`.
// CHECK-LABEL: func.func @flatten_dynamic_batch
// CHECK:         %[[SHAPE:.*]] = core.Constant {value = dense<[0, -1]> : tensor<2xi64>}
// CHECK:         "core.Reshape"(%{{.*}}, %[[SHAPE]]) {special_zero = true} : (tensor<?x8x1x1xf32>, tensor<2xi64>) -> tensor<?x8xf32>

builtin.module attributes {onnx.opset_import = {"" = 17 : i64}} {
  func.func @flatten_dynamic_batch(%x: tensor<?x8x1x1xf32>) -> tensor<?x8xf32> {
    %y = "onnx.Flatten"(%x) {axis = 1 : i64} : (tensor<?x8x1x1xf32>) -> tensor<?x8xf32>
    func.return %y : tensor<?x8xf32>
  }
}

// -----

// Pads computed from shapes (Swin's padding to a window multiple): the pads operand is a
// 1-D value of static length once its producers are typed, and the result keeps its rank.
// CHECK-LABEL: func.func @pad_from_shape
// CHECK-SAME:    -> tensor<?x?x8xf32>
// CHECK:         "core.Pad"({{.*}}) {{.*}} -> tensor<?x?x8xf32>

builtin.module attributes {onnx.opset_import = {"" = 17 : i64}} {
  func.func @pad_from_shape(%x: tensor<?x?x8xf32>) -> tensor<*xf32> {
    %s = "onnx.Shape"(%x) : (tensor<?x?x8xf32>) -> tensor<3xi64>
    %i1 = "onnx.Constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
    %t = "onnx.Gather"(%s, %i1) {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
    %seven = "onnx.Constant"() {value = dense<7> : tensor<i64>} : () -> tensor<i64>
    %rem = "onnx.Mod"(%t, %seven) : (tensor<i64>, tensor<i64>) -> tensor<*xi64>
    %extra = "onnx.Sub"(%seven, %rem) : (tensor<i64>, tensor<*xi64>) -> tensor<*xi64>
    %axes = "onnx.Constant"() {value = dense<0> : tensor<1xi64>} : () -> tensor<1xi64>
    %e1 = "onnx.Unsqueeze"(%extra, %axes) : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
    %zeros = "onnx.Constant"() {value = dense<0> : tensor<4xi64>} : () -> tensor<4xi64>
    %zero = "onnx.Constant"() {value = dense<0> : tensor<1xi64>} : () -> tensor<1xi64>
    %pads = "onnx.Concat"(%zeros, %e1, %zero) {axis = 0 : i64} : (tensor<4xi64>, tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
    %y = "onnx.Pad"(%x, %pads) {mode = "constant", operandSegmentSizes = array<i32: 1, 1, 0, 0>} : (tensor<?x?x8xf32>, tensor<*xi64>) -> tensor<*xf32>
    func.return %y : tensor<*xf32>
  }
}

// -----

// ConstantOfShape -> Expand with a shape from a dynamic input: ranked, batch dynamic.
// CHECK-LABEL: func.func @expand_from_shape
// CHECK-SAME:    -> tensor<?x3x5xf32>
// CHECK:         "core.Broadcast"({{.*}}) {{.*}} -> tensor<?x3x5xf32>

builtin.module attributes {onnx.opset_import = {"" = 17 : i64}} {
  func.func @expand_from_shape(%x: tensor<?x3x1xf32>) -> tensor<*xf32> {
    %s = "onnx.Shape"(%x) : (tensor<?x3x1xf32>) -> tensor<3xi64>
    %start = "onnx.Constant"() {value = dense<0> : tensor<1xi64>} : () -> tensor<1xi64>
    %end = "onnx.Constant"() {value = dense<2> : tensor<1xi64>} : () -> tensor<1xi64>
    %lead = "onnx.Slice"(%s, %start, %end) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<3xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<*xi64>
    %five = "onnx.Constant"() {value = dense<5> : tensor<1xi64>} : () -> tensor<1xi64>
    %shape = "onnx.Concat"(%lead, %five) {axis = 0 : i64} : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
    %y = "onnx.Expand"(%x, %shape) : (tensor<?x3x1xf32>, tensor<*xi64>) -> tensor<*xf32>
    func.return %y : tensor<*xf32>
  }
}

// -----

// A -1 next to a dim read from another value's shape: (B*4, 64, 64) -> (B, 4, 64, -1), B from
// the model input. The probes give every dynamic dim one size, which would make the -1 16;
// it is 64, so a -1 whose shape operand reads dims of values other than the data stays `?`.
// CHECK-LABEL: func.func @reshape_minus_one_next_to_other_batch
// CHECK:         %[[Y:.*]] = "core.Reshape"(%{{.*}}, %{{.*}}) {{.*}} : (tensor<?x64x64xf32>, tensor<4xi64>) -> tensor<?x4x64x?xf32>

builtin.module attributes {onnx.opset_import = {"" = 17 : i64}} {
  func.func @reshape_minus_one_next_to_other_batch(%x: tensor<?x4x64x64xf32>, %y: tensor<?x64x64xf32>) -> tensor<*xf32> {
    %s = "onnx.Shape"(%x) : (tensor<?x4x64x64xf32>) -> tensor<4xi64>
    %i0 = "onnx.Constant"() {value = dense<0> : tensor<1xi64>} : () -> tensor<1xi64>
    %b = "onnx.Gather"(%s, %i0) {axis = 0 : i64} : (tensor<4xi64>, tensor<1xi64>) -> tensor<1xi64>
    %rest = "onnx.Constant"() {value = dense<[4, 64, -1]> : tensor<3xi64>} : () -> tensor<3xi64>
    %shape = "onnx.Concat"(%b, %rest) {axis = 0 : i64} : (tensor<1xi64>, tensor<3xi64>) -> tensor<4xi64>
    %r = "onnx.Reshape"(%y, %shape) : (tensor<?x64x64xf32>, tensor<4xi64>) -> tensor<*xf32>
    func.return %r : tensor<*xf32>
  }
}

// -----

// A size computed from two different dynamic dims (W - H + 8) is 8 when the probes give every
// dynamic dim one size; a probe with a size per position shows that it moves, so it stays `?`
// (torchvision's detection transform resizes by min_size / min(H, W) and pads to a multiple of
// 32 this way).
// CHECK-LABEL: func.func @size_from_two_dims
// CHECK:         "core.Broadcast"({{.*}}) {{.*}} -> tensor<?xf32>

builtin.module attributes {onnx.opset_import = {"" = 17 : i64}} {
  func.func @size_from_two_dims(%x: tensor<1x?x?xf32>) -> tensor<*xf32> {
    %s = "onnx.Shape"(%x) : (tensor<1x?x?xf32>) -> tensor<3xi64>
    %i1 = "onnx.Constant"() {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64>
    %i2 = "onnx.Constant"() {value = dense<[2]> : tensor<1xi64>} : () -> tensor<1xi64>
    %h = "onnx.Gather"(%s, %i1) {axis = 0 : i64} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
    %w = "onnx.Gather"(%s, %i2) {axis = 0 : i64} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
    %d = "onnx.Sub"(%w, %h) : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
    %eight = "onnx.Constant"() {value = dense<[8]> : tensor<1xi64>} : () -> tensor<1xi64>
    %n = "onnx.Add"(%d, %eight) : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
    %y = "onnx.ConstantOfShape"(%n) {value = dense<1.0> : tensor<1xf32>} : (tensor<1xi64>) -> tensor<*xf32>
    func.return %y : tensor<*xf32>
  }
}

// -----

// Slice bounds computed from another value's dims (y's size squared, plus y's size) lie past
// the probe size of x's dynamic dim: under every probe the slice clamps to empty, which made
// the result a static 0 (torchvision's per-level slice of the RPN's objectness, where the
// true size is A*H*W of the level). Bounds outside the dim under a probe leave that dim `?`.
// CHECK-LABEL: func.func @slice_bounds_past_the_probe
// CHECK:         "core.Slice"{{.*}} -> tensor<1x?xf32>
builtin.module attributes {onnx.opset_import = {"" = 17 : i64}} {
  func.func @slice_bounds_past_the_probe(%x: tensor<1x?xf32>, %y: tensor<?xf32>) -> tensor<*xf32> {
    %s = "onnx.Shape"(%y) : (tensor<?xf32>) -> tensor<1xi64>
    %start = "onnx.Mul"(%s, %s) : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
    %stop = "onnx.Add"(%start, %s) : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
    %axes = "onnx.Constant"() {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64>
    %r = "onnx.Slice"(%x, %start, %stop, %axes) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (tensor<1x?xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<*xf32>
    func.return %r : tensor<*xf32>
  }
}
