// RUN: mlconv-opt %s --pass-pipeline='builtin.module(core-infer-shapes)' --split-input-file | filecheck %s
// RUN: mlconv-opt %S/Inputs/dynamic-batch.mlir --pass-pipeline='builtin.module(core-infer-shapes{input-shapes=x:1,3,8,8})' | filecheck %s --check-prefix=FIXED
// RUN: not mlconv-opt %S/Inputs/cycle.mlir -p core-infer-shapes 2>&1 | filecheck %s --check-prefix=CYCLE
// RUN: not mlconv-opt %S/Inputs/core-type-conflict.mlir -p core-infer-shapes 2>&1 | filecheck %s --check-prefix=CONFLICT

// A result type that contradicts the op's semantics is an error, not silently replaced.
// CONFLICT: loc("relu"): error: 'core.Relu' op result #0 has type tensor<?x5xf32>, but its semantics give tensor<?x6xf32>: dimension 1 is 6 where tensor<?x5xf32> has 5

// `?` result types are refined from static operands, and the signature follows.
// CHECK-LABEL: func.func @refine
// CHECK-SAME:    (%[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
// CHECK:         %[[Y:.*]] = "core.Convolution"(%[[X]], %[[W]]) {{.*}} -> tensor<1x4x8x8xf32>
// CHECK:         %[[R:.*]] = "core.Relu"(%[[Y]]) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
// CHECK:         %[[P:.*]] = "core.MaxPool"(%[[R]]) {{.*}} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
// CHECK:         func.return %[[P]] : tensor<1x4x4x4xf32>
func.func @refine(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<?x?x?x?xf32> {
  %y = "core.Convolution"(%x, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<?x?x?x?xf32>
  %r = "core.Relu"(%y) : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %p = "core.MaxPool"(%r) {strides = array<i64: 2, 2>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, kernel = array<i64: 2, 2>} : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  func.return %p : tensor<?x?x?x?xf32>
}

// -----

// A Reshape whose target shape is a constant gets a static type; element types follow the
// semantics (Less gives i1, ShapeOf its output_type).
// CHECK-LABEL: func.func @constant_operands
// CHECK:         %[[S:.*]] = core.Constant {value = dense<[2, -1]> : tensor<2xi64>} : tensor<2xi64>
// CHECK:         %[[R:.*]] = "core.Reshape"(%{{.*}}, %[[S]]) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
// CHECK:         %[[L:.*]] = "core.Less"(%[[R]], %[[R]]) : (tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<2x12xi1>
// CHECK:         %[[SH:.*]] = "core.ShapeOf"(%[[R]]) {output_type = i32} : (tensor<2x12xf32>) -> tensor<2xi32>
// CHECK:         func.return %[[L]], %[[SH]] : tensor<2x12xi1>, tensor<2xi32>
func.func @constant_operands(%x: tensor<2x3x4xf32>) -> (tensor<*xi1>, tensor<*xi32>) {
  %s = core.Constant {value = dense<[2, -1]> : tensor<2xi64>} : tensor<2xi64>
  %r = "core.Reshape"(%x, %s) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<*xf32>
  %l = "core.Less"(%r, %r) : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xi1>
  %sh = "core.ShapeOf"(%r) {output_type = i32} : (tensor<*xf32>) -> tensor<*xi32>
  func.return %l, %sh : tensor<*xi1>, tensor<*xi32>
}

// -----

// A dynamic batch stays `?`; the other dims become static.
// CHECK-LABEL: func.func @dynamic_batch
// CHECK-SAME:    (%[[X:.*]]: tensor<?x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>) -> tensor<?x4x8x8xf32>
// CHECK:         %[[Y:.*]] = "core.Convolution"(%[[X]], %[[W]]) {{.*}} -> tensor<?x4x8x8xf32>
// CHECK:         %[[R:.*]] = "core.Relu"(%[[Y]]) : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
// CHECK:         func.return %[[R]] : tensor<?x4x8x8xf32>
func.func @dynamic_batch(%x: tensor<?x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<?x?x?x?xf32> {
  %y = "core.Convolution"(%x, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<?x?x?x?xf32>
  %r = "core.Relu"(%y) : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  func.return %r : tensor<?x?x?x?xf32>
}

// -----

// A ShapeOf of a dynamic tensor keeps its rank; what it feeds stays dynamic.
// CHECK-LABEL: func.func @shape_of_dynamic
// CHECK:         %[[SH:.*]] = "core.ShapeOf"(%{{.*}}) : (tensor<?x3xf32>) -> tensor<2xi64>
// CHECK:         func.return %[[SH]] : tensor<2xi64>
func.func @shape_of_dynamic(%x: tensor<?x3xf32>) -> tensor<?xi64> {
  %sh = "core.ShapeOf"(%x) : (tensor<?x3xf32>) -> tensor<?xi64>
  func.return %sh : tensor<?xi64>
}

// FIXED-LABEL: func.func @main
// FIXED-SAME:    (%[[X:.*]]: tensor<1x3x8x8xf32> {mlconv.name = "x"}) -> tensor<1x3x8x8xf32>
// FIXED:         %[[R:.*]] = "core.Relu"(%[[X]]) : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
// FIXED:         func.return %[[R]] : tensor<1x3x8x8xf32>

// CYCLE: cycle.mlir:3:3: error: 'core.Add' op is part of a cycle: it uses a value defined after it
// CYCLE-NOT: Traceback

// -----

// Type knowledge never shrinks: a Reshape to a shape that is a function argument only gets its
// rank from the shape's length, so the dims the result type already had are kept.
// CHECK-LABEL: func.func @never_shrinks
// CHECK:         "core.Reshape"({{.*}}) : (tensor<?x8xf32>, tensor<2xi64>) -> tensor<?x4xf32>
// CHECK:         func.return %{{.*}} : tensor<?x4xf32>
func.func @never_shrinks(%x: tensor<?x8xf32>, %s: tensor<2xi64>) -> tensor<?x4xf32> {
  %r = "core.Reshape"(%x, %s) : (tensor<?x8xf32>, tensor<2xi64>) -> tensor<?x4xf32>
  func.return %r : tensor<?x4xf32>
}

// -----

// Shape subgraphs are evaluated with probe sizes for the dynamic dims: the Reshape's target
// (batch and sequence from ShapeOf, then 4x8) gives a ranked result with its static dims.
// CHECK-LABEL: func.func @shape_subgraph
// CHECK:         "core.Reshape"({{.*}}) {special_zero = true} : (tensor<?x?x32xf32>, tensor<4xi64>) -> tensor<?x?x4x8xf32>
// CHECK:         func.return %{{.*}} : tensor<?x?x4x8xf32>
func.func @shape_subgraph(%x: tensor<?x?x32xf32>) -> tensor<*xf32> {
  %s = "core.ShapeOf"(%x) : (tensor<?x?x32xf32>) -> tensor<3xi64>
  %i = core.Constant {value = dense<[0, 1]> : tensor<2xi64>} : tensor<2xi64>
  %axis = core.Constant {value = dense<0> : tensor<i64>} : tensor<i64>
  %bt = "core.Gather"(%s, %i, %axis) : (tensor<3xi64>, tensor<2xi64>, tensor<i64>) -> tensor<*xi64>
  %heads = core.Constant {value = dense<[4, 8]> : tensor<2xi64>} : tensor<2xi64>
  %shape = "core.Concat"(%bt, %heads) {axis = 0 : i64} : (tensor<*xi64>, tensor<2xi64>) -> tensor<*xi64>
  %r = "core.Reshape"(%x, %shape) {special_zero = true} : (tensor<?x?x32xf32>, tensor<*xi64>) -> tensor<*xf32>
  func.return %r : tensor<*xf32>
}

// -----

// A dynamic dim split by a block (6*? into ?x4x3) needs a probe size divisible by 4.
// CHECK-LABEL: func.func @divisible_probe
// CHECK:         "core.Reshape"({{.*}}) : (tensor<?x6xf32>, tensor<3xi64>) -> tensor<?x4x3xf32>
func.func @divisible_probe(%x: tensor<?x6xf32>) -> tensor<*xf32> {
  %s = core.Constant {value = dense<[-1, 4, 3]> : tensor<3xi64>} : tensor<3xi64>
  %r = "core.Reshape"(%x, %s) : (tensor<?x6xf32>, tensor<3xi64>) -> tensor<*xf32>
  func.return %r : tensor<*xf32>
}
