// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-fold-constants{max-elements=4})' --split-input-file | filecheck %s

// A filter reshaped from a constant is computed once, at compile time; its transpose into the
// dot_general (Gemm transB=1) is not copied but absorbed: the dot contracts over the
// untransposed weight's axis 1.

// CHECK-LABEL: func.func @packed_weight
// CHECK:         %[[W:.*]] = tpu.constant {value = dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>} : tensor<2x2xf32>
// CHECK-NOT:     tpu.reshape
// CHECK-NOT:     tpu.transpose
// CHECK:         %[[D:.*]] = "tpu.dot_general"(%{{.*}}, %[[W]]) {dimension_numbers = {{\[\[}}array<i64: 1>, array<i64: 1>], [array<i64>, array<i64>]]
// CHECK:         tpu.yield %[[D]]
func.func @packed_weight(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %0 = "tpu.region"(%x) ({
  ^bb0(%a: tensor<3x2xf32>):
    %c = tpu.constant {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : tensor<4xf32>
    %r = "tpu.reshape"(%c) {new_sizes = array<i64: 2, 2>, dimensions, sharding} : (tensor<4xf32>) -> tensor<2x2xf32>
    %t = "tpu.transpose"(%r) {permutation = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %d = "tpu.dot_general"(%a, %t) {dimension_numbers = [[array<i64: 1>, array<i64: 0>], [array<i64>, array<i64>]], precision, preferred_element_type = f32, out_sharding} : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
    tpu.yield %d : tensor<3x2xf32>
  }) {device = "tpu"} : (tensor<3x2xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}

// -----

// A transposed weight on the left-hand side, with a batch axis: both move to the weight's axes.

// CHECK-LABEL: func.func @absorbed_lhs_batch
// CHECK:         %[[W:.*]] = tpu.constant {{.*}} : tensor<2x1x2xf32>
// CHECK-NOT:     tpu.transpose
// CHECK:         "tpu.dot_general"(%[[W]], %{{.*}}) {dimension_numbers = {{\[\[}}array<i64: 0>, array<i64: 1>], [array<i64: 2>, array<i64: 0>]]
func.func @absorbed_lhs_batch(%x: tensor<2x2x3xf32>) -> tensor<2x1x3xf32> {
  %0 = "tpu.region"(%x) ({
  ^bb0(%a: tensor<2x2x3xf32>):
    %c = tpu.constant {value = dense<[[[1.0, 2.0]], [[3.0, 4.0]]]> : tensor<2x1x2xf32>} : tensor<2x1x2xf32>
    %t = "tpu.transpose"(%c) {permutation = array<i64: 2, 1, 0>} : (tensor<2x1x2xf32>) -> tensor<2x1x2xf32>
    %d = "tpu.dot_general"(%t, %a) {dimension_numbers = [[array<i64: 2>, array<i64: 1>], [array<i64: 0>, array<i64: 0>]], precision, preferred_element_type = f32, out_sharding} : (tensor<2x1x2xf32>, tensor<2x2x3xf32>) -> tensor<2x1x3xf32>
    tpu.yield %d : tensor<2x1x3xf32>
  }) {device = "tpu"} : (tensor<2x2x3xf32>) -> tensor<2x1x3xf32>
  func.return %0 : tensor<2x1x3xf32>
}

// -----

// A transpose that reorders the weight's free axes would reorder the result's: it is folded
// (one packed constant), not absorbed. A transpose of a run-time value stays for XLA.

// CHECK-LABEL: func.func @reordering_and_dynamic
// CHECK:         %[[W:.*]] = tpu.constant {value = dense<{{\[\[\[}}1.000000e+00, 2.000000e+00]], {{\[\[}}3.000000e+00, 4.000000e+00]]]> : tensor<2x1x2xf32>}
// CHECK:         %[[T:.*]] = "tpu.transpose"(%{{.*}}) {permutation = array<i64: 1, 0>}
// CHECK:         "tpu.dot_general"(%[[T]], %[[W]]) {dimension_numbers = {{\[\[}}array<i64: 1>, array<i64: 0>]
func.func @reordering_and_dynamic(%x: tensor<2x3xf32>) -> tensor<3x1x2xf32> {
  %0 = "tpu.region"(%x) ({
  ^bb0(%a: tensor<2x3xf32>):
    %c = tpu.constant {value = dense<[[[1.0], [2.0]], [[3.0], [4.0]]]> : tensor<2x2x1xf32>} : tensor<2x2x1xf32>
    %w = "tpu.transpose"(%c) {permutation = array<i64: 0, 2, 1>} : (tensor<2x2x1xf32>) -> tensor<2x1x2xf32>
    %t = "tpu.transpose"(%a) {permutation = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %d = "tpu.dot_general"(%t, %w) {dimension_numbers = [[array<i64: 1>, array<i64: 0>], [array<i64>, array<i64>]], precision, preferred_element_type = f32, out_sharding} : (tensor<3x2xf32>, tensor<2x1x2xf32>) -> tensor<3x1x2xf32>
    tpu.yield %d : tensor<3x1x2xf32>
  }) {device = "tpu"} : (tensor<2x3xf32>) -> tensor<3x1x2xf32>
  func.return %0 : tensor<3x1x2xf32>
}

// -----

// Ops of a run-time value stay; a result above max-elements stays too.

// CHECK-LABEL: func.func @dynamic_and_large
// CHECK:         %[[C:.*]] = tpu.constant {value = dense<1.000000e+00> : tensor<2xf32>}
// CHECK:         %[[B:.*]] = "tpu.broadcast_in_dim"(%[[C]])
// CHECK:         "tpu.add"(%{{.*}}, %[[B]])
func.func @dynamic_and_large(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %0 = "tpu.region"(%x) ({
  ^bb0(%a: tensor<4x2xf32>):
    %c = tpu.constant {value = dense<1.0> : tensor<2xf32>} : tensor<2xf32>
    %b = "tpu.broadcast_in_dim"(%c) {shape = array<i64: 4, 2>, broadcast_dimensions = array<i64: 1>, sharding} : (tensor<2xf32>) -> tensor<4x2xf32>
    %s = "tpu.add"(%a, %b) : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    tpu.yield %s : tensor<4x2xf32>
  }) {device = "tpu"} : (tensor<4x2xf32>) -> tensor<4x2xf32>
  func.return %0 : tensor<4x2xf32>
}
