// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-hoist-slices)' --split-input-file | filecheck %s

// ReLU(x + bias) read as two channel halves (a grouped convolution's groups): each half is
// computed from its own slices of x and of the bias; the whole is never built.

// CHECK-LABEL: func.func @elementwise_parts
// CHECK:         %[[X0:.*]] = "tpu.slice"(%[[X:.*]]) {start_indices = array<i64: 0, 0, 0, 0>, limit_indices = array<i64: 1, 2, 2, 2>
// CHECK:         %[[B0:.*]] = "tpu.slice"(%b) {start_indices = array<i64: 0, 0, 0, 0>, limit_indices = array<i64: 1, 1, 1, 2>
// CHECK:         %[[A0:.*]] = "tpu.add"(%[[X0]], %[[B0]]) : (tensor<1x2x2x2xf32>, tensor<1x1x1x2xf32>) -> tensor<1x2x2x2xf32>
// CHECK:         %[[X1:.*]] = "tpu.slice"(%[[X]]) {start_indices = array<i64: 0, 0, 0, 2>, limit_indices = array<i64: 1, 2, 2, 4>
// CHECK:         %[[B1:.*]] = "tpu.slice"(%b) {start_indices = array<i64: 0, 0, 0, 2>, limit_indices = array<i64: 1, 1, 1, 4>
// CHECK:         %[[A1:.*]] = "tpu.add"(%[[X1]], %[[B1]])
// CHECK:         %[[R0:.*]] = "tpu.max"(%[[A0]], %z) : (tensor<1x2x2x2xf32>, tensor<f32>)
// CHECK:         %[[R1:.*]] = "tpu.max"(%[[A1]], %z)
// CHECK-NOT:     tpu.slice
// CHECK:         tpu.yield %[[R0]], %[[R1]]

func.func @elementwise_parts(%x: tensor<1x2x2x4xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %0:2 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x2x2x4xf32>):
    %b = tpu.constant {value = dense<[[[[0.5, 1.5, 2.5, 3.5]]]]> : tensor<1x1x1x4xf32>} : tensor<1x1x1x4xf32>
    %a = "tpu.add"(%1, %b) : (tensor<1x2x2x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x2x4xf32>
    %z = tpu.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %r = "tpu.max"(%a, %z) : (tensor<1x2x2x4xf32>, tensor<f32>) -> tensor<1x2x2x4xf32>
    %s0 = "tpu.slice"(%r) {start_indices = array<i64: 0, 0, 0, 0>, limit_indices = array<i64: 1, 2, 2, 2>, strides} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x2xf32>
    %s1 = "tpu.slice"(%r) {start_indices = array<i64: 0, 0, 0, 2>, limit_indices = array<i64: 1, 2, 2, 4>, strides} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x2xf32>
    tpu.yield %s0, %s1 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  }) {device = "tpu"} : (tensor<1x2x2x4xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>)
  func.return %0#0, %0#1 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}

// -----

// A slice that is exactly one part of a concatenation is that part; one inside a part is a
// slice of the part.

// CHECK-LABEL: func.func @concat_parts
// CHECK:         ^bb0(%{{.*}}: tensor<1x2x2x2xf32>, %[[Q:.*]]: tensor<1x2x2x3xf32>):
// CHECK-NEXT:      %[[IN:.*]] = "tpu.slice"(%[[Q]]) {start_indices = array<i64: 0, 0, 0, 1>, limit_indices = array<i64: 1, 2, 2, 2>
// CHECK-NOT:       tpu.concatenate
// CHECK:           tpu.yield %[[Q]], %[[IN]]

func.func @concat_parts(%p: tensor<1x2x2x2xf32>, %q: tensor<1x2x2x3xf32>) -> (tensor<1x2x2x3xf32>, tensor<1x2x2x1xf32>) {
  %0:2 = "tpu.region"(%p, %q) ({
  ^bb0(%1: tensor<1x2x2x2xf32>, %2: tensor<1x2x2x3xf32>):
    %c = "tpu.concatenate"(%1, %2) {dimension = 3 : i64} : (tensor<1x2x2x2xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x2x5xf32>
    %whole = "tpu.slice"(%c) {start_indices = array<i64: 0, 0, 0, 2>, limit_indices = array<i64: 1, 2, 2, 5>, strides} : (tensor<1x2x2x5xf32>) -> tensor<1x2x2x3xf32>
    %inner = "tpu.slice"(%c) {start_indices = array<i64: 0, 0, 0, 3>, limit_indices = array<i64: 1, 2, 2, 4>, strides} : (tensor<1x2x2x5xf32>) -> tensor<1x2x2x1xf32>
    tpu.yield %whole, %inner : tensor<1x2x2x3xf32>, tensor<1x2x2x1xf32>
  }) {device = "tpu"} : (tensor<1x2x2x2xf32>, tensor<1x2x2x3xf32>) -> (tensor<1x2x2x3xf32>, tensor<1x2x2x1xf32>)
  func.return %0#0, %0#1 : tensor<1x2x2x3xf32>, tensor<1x2x2x1xf32>
}

// -----

// Two slices in a row are one.

// CHECK-LABEL: func.func @slice_of_slice
// CHECK:         %[[S:.*]] = "tpu.slice"(%{{.*}}) {start_indices = array<i64: 0, 2, 1, 5>, limit_indices = array<i64: 1, 4, 3, 7>, strides} : (tensor<1x4x4x8xf32>) -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    tpu.yield %[[S]]

func.func @slice_of_slice(%x: tensor<1x4x4x8xf32>) -> tensor<1x2x2x2xf32> {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x4x4x8xf32>):
    %a = "tpu.slice"(%1) {start_indices = array<i64: 0, 1, 1, 2>, limit_indices = array<i64: 1, 4, 4, 8>, strides} : (tensor<1x4x4x8xf32>) -> tensor<1x3x3x6xf32>
    %b = "tpu.slice"(%a) {start_indices = array<i64: 0, 1, 0, 3>, limit_indices = array<i64: 1, 3, 2, 5>, strides} : (tensor<1x3x3x6xf32>) -> tensor<1x2x2x2xf32>
    tpu.yield %b : tensor<1x2x2x2xf32>
  }) {device = "tpu"} : (tensor<1x4x4x8xf32>) -> tensor<1x2x2x2xf32>
  func.return %0 : tensor<1x2x2x2xf32>
}

// -----

// Taps of a padded input (a depthwise convolution's) that read two channel halves: the
// channel slice moves under the pad, one pad per half, which the half's taps share; the
// spatial part of each tap stays above it.

// CHECK-LABEL: func.func @pad_taps
// CHECK:         %[[H0:.*]] = "tpu.slice"(%[[X:.*]]) {start_indices = array<i64: 0, 0, 0, 0>, limit_indices = array<i64: 1, 2, 2, 2>
// CHECK:         %[[P0:.*]] = "tpu.pad"(%[[H0]], %z) {{.*}} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x4x4x2xf32>
// CHECK:         %[[H1:.*]] = "tpu.slice"(%[[X]]) {start_indices = array<i64: 0, 0, 0, 2>, limit_indices = array<i64: 1, 2, 2, 4>
// CHECK:         %[[P1:.*]] = "tpu.pad"(%[[H1]], %z)
// CHECK:         %[[T0:.*]] = "tpu.slice"(%[[P0]]) {start_indices = array<i64: 0, 0, 0, 0>, limit_indices = array<i64: 1, 2, 2, 2>
// CHECK:         %[[T1:.*]] = "tpu.slice"(%[[P0]]) {start_indices = array<i64: 0, 2, 2, 0>, limit_indices = array<i64: 1, 4, 4, 2>
// CHECK:         %[[T2:.*]] = "tpu.slice"(%[[P1]]) {start_indices = array<i64: 0, 1, 1, 0>, limit_indices = array<i64: 1, 3, 3, 2>
// CHECK-NOT:     tpu.pad
// CHECK:         tpu.yield %[[T0]], %[[T1]], %[[T2]]

func.func @pad_taps(%x: tensor<1x2x2x4xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %0:3 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x2x2x4xf32>):
    %z = tpu.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %p = "tpu.pad"(%1, %z) {padding_config = [array<i64: 0, 0, 0>, array<i64: 1, 1, 0>, array<i64: 1, 1, 0>, array<i64: 0, 0, 0>]} : (tensor<1x2x2x4xf32>, tensor<f32>) -> tensor<1x4x4x4xf32>
    %t0 = "tpu.slice"(%p) {start_indices = array<i64: 0, 0, 0, 0>, limit_indices = array<i64: 1, 2, 2, 2>, strides} : (tensor<1x4x4x4xf32>) -> tensor<1x2x2x2xf32>
    %t1 = "tpu.slice"(%p) {start_indices = array<i64: 0, 2, 2, 0>, limit_indices = array<i64: 1, 4, 4, 2>, strides} : (tensor<1x4x4x4xf32>) -> tensor<1x2x2x2xf32>
    %t2 = "tpu.slice"(%p) {start_indices = array<i64: 0, 1, 1, 2>, limit_indices = array<i64: 1, 3, 3, 4>, strides} : (tensor<1x4x4x4xf32>) -> tensor<1x2x2x2xf32>
    tpu.yield %t0, %t1, %t2 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  }) {device = "tpu"} : (tensor<1x2x2x4xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>)
  func.return %0#0, %0#1, %0#2 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}

// -----

// Slices that tile the channels, and a use of the whole value besides (ShuffleNet's residual
// path): the parts are computed apart and the whole use reads their concatenation.

// CHECK-LABEL: func.func @partition_and_whole
// CHECK:         %[[S0:.*]] = "tpu.add"({{.*}}) : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
// CHECK:         %[[S1:.*]] = "tpu.add"({{.*}}) : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
// CHECK:         %[[W:.*]] = "tpu.concatenate"(%[[S0]], %[[S1]]) {dimension = 3 : i64}
// CHECK:         %[[M:.*]] = "tpu.mul"(%[[W]], %{{.*}}) : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>)
// CHECK:         tpu.yield %[[S0]], %[[S1]], %[[M]]

func.func @partition_and_whole(%x: tensor<1x2x2x4xf32>, %y: tensor<1x2x2x4xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>) {
  %0:3 = "tpu.region"(%x, %y) ({
  ^bb0(%1: tensor<1x2x2x4xf32>, %2: tensor<1x2x2x4xf32>):
    %a = "tpu.add"(%1, %2) : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
    %s0 = "tpu.slice"(%a) {start_indices = array<i64: 0, 0, 0, 0>, limit_indices = array<i64: 1, 2, 2, 2>, strides} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x2xf32>
    %s1 = "tpu.slice"(%a) {start_indices = array<i64: 0, 0, 0, 2>, limit_indices = array<i64: 1, 2, 2, 4>, strides} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x2xf32>
    %m = "tpu.mul"(%a, %1) : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
    tpu.yield %s0, %s1, %m : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>
  }) {device = "tpu"} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>)
  func.return %0#0, %0#1, %0#2 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>
}

// -----

// Slices overlapping on their one split axis (rows 0..2 and 1..3, as a window's) leave the op
// whole: splitting it would compute row 1 twice.

// CHECK-LABEL: func.func @overlapping_slices
// CHECK:         %[[E:.*]] = "tpu.exp"(%{{.*}}) {accuracy} : (tensor<1x4x4x2xf32>)
// CHECK:         "tpu.slice"(%[[E]])
// CHECK:         "tpu.slice"(%[[E]])

func.func @overlapping_slices(%x: tensor<1x4x4x2xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %0:2 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x4x4x2xf32>):
    %e = "tpu.exp"(%1) {accuracy} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
    %s0 = "tpu.slice"(%e) {start_indices = array<i64: 0, 0, 0, 0>, limit_indices = array<i64: 1, 2, 2, 2>, strides} : (tensor<1x4x4x2xf32>) -> tensor<1x2x2x2xf32>
    %s1 = "tpu.slice"(%e) {start_indices = array<i64: 0, 1, 0, 0>, limit_indices = array<i64: 1, 3, 2, 2>, strides} : (tensor<1x4x4x2xf32>) -> tensor<1x2x2x2xf32>
    tpu.yield %s0, %s1 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
  }) {device = "tpu"} : (tensor<1x4x4x2xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>)
  func.return %0#0, %0#1 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}

// -----

// Slices that do not cover the channels, and a use of the whole value: nothing moves.

// CHECK-LABEL: func.func @not_a_partition
// CHECK:         %[[E:.*]] = "tpu.neg"(%{{.*}}) : (tensor<1x2x2x4xf32>)
// CHECK:         "tpu.slice"(%[[E]])
// CHECK:         "tpu.slice"(%[[E]])
// CHECK:         tpu.yield %{{.*}}, %{{.*}}, %[[E]]

func.func @not_a_partition(%x: tensor<1x2x2x4xf32>) -> (tensor<1x2x2x1xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>) {
  %0:3 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x2x2x4xf32>):
    %e = "tpu.neg"(%1) : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
    %s0 = "tpu.slice"(%e) {start_indices = array<i64: 0, 0, 0, 0>, limit_indices = array<i64: 1, 2, 2, 1>, strides} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x1xf32>
    %s1 = "tpu.slice"(%e) {start_indices = array<i64: 0, 0, 0, 2>, limit_indices = array<i64: 1, 2, 2, 4>, strides} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x2xf32>
    tpu.yield %s0, %s1, %e : tensor<1x2x2x1xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>
  }) {device = "tpu"} : (tensor<1x2x2x4xf32>) -> (tensor<1x2x2x1xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>)
  func.return %0#0, %0#1, %0#2 : tensor<1x2x2x1xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x4xf32>
}
