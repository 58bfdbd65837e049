// RUN: mlconv-opt %s --pass-pipeline='builtin.module(core-to-tpu)' --split-input-file | filecheck %s
// RUN: not mlconv-opt %S/Inputs/dynamic-batch-conv.mlir -p core-to-tpu 2>&1 | filecheck %s --check-prefix=DYNAMIC
// RUN: not mlconv-opt %S/Inputs/non-constant-shape.mlir -p core-to-tpu 2>&1 | filecheck %s --check-prefix=NONCONST

// Convolution, Relu and MaxPool become one tpu.region of jax.lax primitives; the constant
// Relu compares with becomes a tpu.constant inside the region.
// CHECK-LABEL: func.func @conv_relu_pool
// CHECK-SAME:    (%[[X:.*]]: tensor<1x3x8x8xf32> {mlconv.name = "x"}, %[[W:.*]]: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NOT:     core.
// CHECK:         %[[R:.*]] = "tpu.region"(%[[X]], %[[W]]) ({
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: tensor<1x3x8x8xf32>, %[[B:.*]]: tensor<4x3x3x3xf32>):
// CHECK-NEXT:      %[[CONV:.*]] = "tpu.conv_general_dilated"(%[[A]], %[[B]]) {window_strides = array<i64: 1, 1>, padding = [array<i64: 1, 1>, array<i64: 1, 1>], {{.*}}dimension_numbers = {__class__ = "ConvDimensionNumbers", lhs_spec = array<i64: 0, 1, 2, 3>, rhs_spec = array<i64: 0, 1, 2, 3>, out_spec = array<i64: 0, 1, 2, 3>}, feature_group_count = 1 : i64{{.*}}} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT:      %[[ZERO:.*]] = tpu.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
// CHECK-NEXT:      %[[RELU:.*]] = "tpu.max"(%[[CONV]], %[[ZERO]]) : (tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT:      %[[POOL:.*]] = "tpu.reduce_window_max"(%[[RELU]]) {window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 2, 2>{{.*}}} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT:      tpu.yield %[[POOL]] : tensor<1x4x4x4xf32>
// CHECK-NEXT:    }) {device = "tpu"} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<1x4x4x4xf32>
func.func @conv_relu_pool(%x: tensor<1x3x8x8xf32> {mlconv.name = "x"}, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %y = "core.Convolution"(%x, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %r = "core.Relu"(%y) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %p = "core.MaxPool"(%r) {strides = array<i64: 2, 2>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, kernel = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  func.return %p : tensor<1x4x4x4xf32>
}

// -----

// Weights are core.Constant: they become tpu.constant at their first use, keeping their
// bytes. Shape operands consumed by tracing (the Reshape target) leave nothing behind.
// CHECK-LABEL: func.func @weights
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>) -> tensor<6xf32>
// CHECK:         "tpu.region"(%[[X]]) ({
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: tensor<2x3xf32>):
// CHECK-NEXT:      %[[W:.*]] = tpu.constant {value = dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00]]> : tensor<1x3xf32>} : tensor<1x3xf32>
// CHECK-NEXT:      "tpu.add"(%[[A]], %[[W]]) : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
// CHECK:           %[[FLAT:.*]] = "tpu.reshape"(%{{.*}}) {new_sizes = array<i64: 6>{{.*}}} : (tensor<2x3xf32>) -> tensor<6xf32>
// CHECK-NOT:       dense<6>
// CHECK:           tpu.yield %[[FLAT]] : tensor<6xf32>
func.func @weights(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  %w = core.Constant {value = dense<[[1.0, 2.0, 3.0]]> : tensor<1x3xf32>} : tensor<1x3xf32>
  %s = "core.Add"(%x, %w) : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  %shape = core.Constant {value = dense<6> : tensor<1xi64>} : tensor<1xi64>
  %r = "core.Reshape"(%s, %shape) : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<6xf32>
  func.return %r : tensor<6xf32>
}

// -----

// A function without core ops is left alone.
// CHECK-LABEL: func.func @identity
// CHECK-NEXT:    func.return %{{.*}} : tensor<2xf32>
func.func @identity(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}

// The dynamic dimension error names the input and its dims and says how to fix it.
// DYNAMIC: dynamic-batch-conv.mlir: error: input 'image' has dynamic dimension 0 (shape ?x3x8x8); the TPU needs static shapes: fix them with input-shapes=image:1,3,8,8
// DYNAMIC-NOT: Traceback

// A shape operand that is not a constant is an error at the op, naming the pass to run.
// NONCONST: non-constant-shape.mlir:6:3: error: 'core.Reshape' op operand 'shape' must be a constant to lower to the TPU; run core-fold-constants{static-shape=true} first
