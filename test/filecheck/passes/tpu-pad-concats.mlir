// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-pad-concats)' --split-input-file | filecheck %s
// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-pad-concats{device=gpu})' --split-input-file | filecheck %s --check-prefix=GPU
// RUN: not mlconv-opt %s --pass-pipeline='builtin.module(tpu-pad-concats{device=npu})' --split-input-file 2>&1 | filecheck %s --check-prefix=BAD

// A fire module after tpu-merge-epilogues: the concatenation of the two expand convolutions,
// the shared bias and ReLU, and the next squeeze convolution. The parts are zero-padded to
// the whole along the channels and added; the epilogue reads the sum.

// CHECK-LABEL: func.func @fire
// CHECK:         %[[Z:.*]] = tpu.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
// CHECK-NEXT:    %[[PP:.*]] = "tpu.pad"(%[[P:.*]], %[[Z]]) {padding_config = [array<i64: 0, 0, 0>, array<i64: 0, 0, 0>, array<i64: 0, 0, 0>, array<i64: 0, 3, 0>]} : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x5xf32>
// CHECK-NEXT:    %[[PQ:.*]] = "tpu.pad"(%[[Q:.*]], %[[Z]]) {padding_config = [array<i64: 0, 0, 0>, array<i64: 0, 0, 0>, array<i64: 0, 0, 0>, array<i64: 2, 0, 0>]} : (tensor<1x2x2x3xf32>, tensor<f32>) -> tensor<1x2x2x5xf32>
// CHECK-NEXT:    %[[S:.*]] = "tpu.add"(%[[PP]], %[[PQ]]) : (tensor<1x2x2x5xf32>, tensor<1x2x2x5xf32>) -> tensor<1x2x2x5xf32>
// CHECK-NOT:     tpu.concatenate
// CHECK:         %[[A:.*]] = "tpu.add"(%[[S]], %{{.*}}) : (tensor<1x2x2x5xf32>, tensor<1x1x1x5xf32>) -> tensor<1x2x2x5xf32>
// CHECK-NEXT:    %[[R:.*]] = "tpu.max"(%[[A]], %{{.*}})
// CHECK-NEXT:    %{{.*}} = "tpu.conv_general_dilated"(%[[R]], %{{.*}})

// GPU-LABEL: func.func @fire
// GPU:         "tpu.concatenate"
// GPU-NOT:     "tpu.pad"

// BAD: tpu-pad-concats: unknown device 'npu'
func.func @fire(%p: tensor<1x2x2x2xf32>, %q: tensor<1x2x2x3xf32>) -> (tensor<1x2x2x4xf32>) {
  %0 = "tpu.region"(%p, %q) ({
  ^bb0(%1: tensor<1x2x2x2xf32>, %2: tensor<1x2x2x3xf32>):
    %c = "tpu.concatenate"(%1, %2) {dimension = 3 : i64} : (tensor<1x2x2x2xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x2x5xf32>
    %z = tpu.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %b = tpu.constant {value = dense<[[[[1.0, 2.0, 3.0, 4.0, 5.0]]]]> : tensor<1x1x1x5xf32>} : tensor<1x1x1x5xf32>
    %w = tpu.constant {value = dense<0.5> : tensor<1x1x5x4xf32>} : tensor<1x1x5x4xf32>
    %a = "tpu.add"(%c, %b) : (tensor<1x2x2x5xf32>, tensor<1x1x1x5xf32>) -> tensor<1x2x2x5xf32>
    %r = "tpu.max"(%a, %z) : (tensor<1x2x2x5xf32>, tensor<f32>) -> tensor<1x2x2x5xf32>
    %y = "tpu.conv_general_dilated"(%r, %w) {window_strides = array<i64: 1, 1>, padding = [array<i64: 0, 0>, array<i64: 0, 0>], lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, dimension_numbers = {__class__ = "ConvDimensionNumbers", lhs_spec = array<i64: 0, 3, 1, 2>, rhs_spec = array<i64: 3, 2, 0, 1>, out_spec = array<i64: 0, 3, 1, 2>}, feature_group_count = 1 : i64, batch_group_count = 1 : i64, precision, preferred_element_type = f32, out_sharding} : (tensor<1x2x2x5xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x2x4xf32>
    tpu.yield %y : tensor<1x2x2x4xf32>
  }) {device = "tpu"} : (tensor<1x2x2x2xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x2x4xf32>
  func.return %0 : tensor<1x2x2x4xf32>
}

// -----

// Three integer parts, read by a dot after one elementwise op: each part padded, the three
// summed left to right.

// CHECK-LABEL: func.func @three_int_parts
// CHECK:         %[[Z:.*]] = tpu.constant {value = dense<0> : tensor<i32>} : tensor<i32>
// CHECK-NEXT:    %[[P0:.*]] = "tpu.pad"(%{{.*}}, %[[Z]]) {padding_config = [array<i64: 0, 0, 0>, array<i64: 0, 4, 0>]} : (tensor<2x1xi32>, tensor<i32>) -> tensor<2x5xi32>
// CHECK-NEXT:    %[[P1:.*]] = "tpu.pad"(%{{.*}}, %[[Z]]) {padding_config = [array<i64: 0, 0, 0>, array<i64: 1, 2, 0>]} : (tensor<2x2xi32>, tensor<i32>) -> tensor<2x5xi32>
// CHECK-NEXT:    %[[S1:.*]] = "tpu.add"(%[[P0]], %[[P1]])
// CHECK-NEXT:    %[[P2:.*]] = "tpu.pad"(%{{.*}}, %[[Z]]) {padding_config = [array<i64: 0, 0, 0>, array<i64: 3, 0, 0>]} : (tensor<2x2xi32>, tensor<i32>) -> tensor<2x5xi32>
// CHECK-NEXT:    %[[S2:.*]] = "tpu.add"(%[[S1]], %[[P2]])
// CHECK-NEXT:    %[[N:.*]] = "tpu.neg"(%[[S2]])
// CHECK-NEXT:    "tpu.dot_general"(%[[N]], %{{.*}})
func.func @three_int_parts(%p: tensor<2x1xi32>, %q: tensor<2x2xi32>, %r: tensor<2x2xi32>, %w: tensor<5x3xi32>) -> (tensor<2x3xi32>) {
  %0 = "tpu.region"(%p, %q, %r, %w) ({
  ^bb0(%1: tensor<2x1xi32>, %2: tensor<2x2xi32>, %3: tensor<2x2xi32>, %4: tensor<5x3xi32>):
    %c = "tpu.concatenate"(%1, %2, %3) {dimension = 1 : i64} : (tensor<2x1xi32>, tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x5xi32>
    %n = "tpu.neg"(%c) : (tensor<2x5xi32>) -> tensor<2x5xi32>
    %d = "tpu.dot_general"(%n, %4) {dimension_numbers = [[array<i64: 1>, array<i64: 0>], [array<i64>, array<i64>]], precision, preferred_element_type = i32, out_sharding} : (tensor<2x5xi32>, tensor<5x3xi32>) -> tensor<2x3xi32>
    tpu.yield %d : tensor<2x3xi32>
  }) {device = "tpu"} : (tensor<2x1xi32>, tensor<2x2xi32>, tensor<2x2xi32>, tensor<5x3xi32>) -> tensor<2x3xi32>
  func.return %0 : tensor<2x3xi32>
}

// -----

// Left alone: a concatenation read directly by a convolution (no epilogue to fuse into), one
// whose epilogue a pooling window (a slice) reads, one read by two ops, and a bool one.

// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: "tpu.concatenate"
// CHECK-NOT:     "tpu.pad"
func.func @kept(%p: tensor<1x2x2x2xf32>, %q: tensor<1x2x2x3xf32>, %t: tensor<4xi1>) -> (tensor<1x2x2x4xf32>, tensor<1x1x1x5xf32>, tensor<1x2x2x5xf32>, tensor<1x2x2x5xf32>, tensor<8xi1>) {
  %0:5 = "tpu.region"(%p, %q, %t) ({
  ^bb0(%1: tensor<1x2x2x2xf32>, %2: tensor<1x2x2x3xf32>, %3: tensor<4xi1>):
    %z = tpu.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %w = tpu.constant {value = dense<0.5> : tensor<1x1x5x4xf32>} : tensor<1x1x5x4xf32>
    %c1 = "tpu.concatenate"(%1, %2) {dimension = 3 : i64} : (tensor<1x2x2x2xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x2x5xf32>
    %y = "tpu.conv_general_dilated"(%c1, %w) {window_strides = array<i64: 1, 1>, padding = [array<i64: 0, 0>, array<i64: 0, 0>], lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, dimension_numbers = {__class__ = "ConvDimensionNumbers", lhs_spec = array<i64: 0, 3, 1, 2>, rhs_spec = array<i64: 3, 2, 0, 1>, out_spec = array<i64: 0, 3, 1, 2>}, feature_group_count = 1 : i64, batch_group_count = 1 : i64, precision, preferred_element_type = f32, out_sharding} : (tensor<1x2x2x5xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x2x4xf32>
    %c2 = "tpu.concatenate"(%1, %2) {dimension = 3 : i64} : (tensor<1x2x2x2xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x2x5xf32>
    %r2 = "tpu.max"(%c2, %z) : (tensor<1x2x2x5xf32>, tensor<f32>) -> tensor<1x2x2x5xf32>
    %s = "tpu.slice"(%r2) {start_indices = array<i64: 0, 0, 0, 0>, limit_indices = array<i64: 1, 2, 2, 5>, strides = array<i64: 1, 2, 2, 1>} : (tensor<1x2x2x5xf32>) -> tensor<1x1x1x5xf32>
    %c3 = "tpu.concatenate"(%1, %2) {dimension = 3 : i64} : (tensor<1x2x2x2xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x2x5xf32>
    %e = "tpu.exp"(%c3) {accuracy} : (tensor<1x2x2x5xf32>) -> tensor<1x2x2x5xf32>
    %n = "tpu.neg"(%c3) : (tensor<1x2x2x5xf32>) -> tensor<1x2x2x5xf32>
    %c4 = "tpu.concatenate"(%3, %3) {dimension = 0 : i64} : (tensor<4xi1>, tensor<4xi1>) -> tensor<8xi1>
    %b = "tpu.not"(%c4) : (tensor<8xi1>) -> tensor<8xi1>
    tpu.yield %y, %s, %e, %n, %b : tensor<1x2x2x4xf32>, tensor<1x1x1x5xf32>, tensor<1x2x2x5xf32>, tensor<1x2x2x5xf32>, tensor<8xi1>
  }) {device = "tpu"} : (tensor<1x2x2x2xf32>, tensor<1x2x2x3xf32>, tensor<4xi1>) -> (tensor<1x2x2x4xf32>, tensor<1x1x1x5xf32>, tensor<1x2x2x5xf32>, tensor<1x2x2x5xf32>, tensor<8xi1>)
  func.return %0#0, %0#1, %0#2, %0#3, %0#4 : tensor<1x2x2x4xf32>, tensor<1x1x1x5xf32>, tensor<1x2x2x5xf32>, tensor<1x2x2x5xf32>, tensor<8xi1>
}
