// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-fold-channel-shuffle)' --split-input-file | filecheck %s

// A channel shuffle (reshape 4 -> 2x2, swap, reshape back: channels [0, 2, 1, 3]) after a 1x1
// convolution's dot, bias and ReLU: the dot's constant columns and the bias are permuted, the
// shuffle is gone.

// CHECK-LABEL: func.func @dot_head
// CHECK:         %[[W:.*]] = tpu.constant {value = dense<{{\[\[}}0.000000e+00, 2.000000e+00, 1.000000e+00, 3.000000e+00], [1.000000e+01, 1.200000e+01, 1.100000e+01, 1.300000e+01], [2.000000e+01, 2.200000e+01, 2.100000e+01, 2.300000e+01]]> : tensor<3x4xf32>}
// CHECK:         %[[D:.*]] = "tpu.dot_general"(%{{.*}}, %[[W]])
// CHECK:         %[[B:.*]] = tpu.constant {value = dense<{{\[\[\[\[}}5.000000e-01, 2.500000e+00, 1.500000e+00, 3.500000e+00]]]]>
// CHECK:         %[[A:.*]] = "tpu.add"(%[[D]], %[[B]])
// CHECK:         %[[R:.*]] = "tpu.max"(%[[A]], %{{.*}})
// CHECK-NOT:     tpu.transpose
// CHECK-NOT:     tpu.reshape
// CHECK:         tpu.yield %[[R]]
func.func @dot_head(%x: tensor<1x2x2x3xf32>) -> (tensor<1x2x2x4xf32>) {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x2x2x3xf32>):
    %w = tpu.constant {value = dense<[[0.0, 1.0, 2.0, 3.0], [10.0, 11.0, 12.0, 13.0], [20.0, 21.0, 22.0, 23.0]]> : tensor<3x4xf32>} : tensor<3x4xf32>
    %d = "tpu.dot_general"(%1, %w) {dimension_numbers = [[array<i64: 3>, array<i64: 0>], [array<i64>, array<i64>]], precision, preferred_element_type = f32, out_sharding} : (tensor<1x2x2x3xf32>, tensor<3x4xf32>) -> tensor<1x2x2x4xf32>
    %b = tpu.constant {value = dense<[[[[0.5, 1.5, 2.5, 3.5]]]]> : tensor<1x1x1x4xf32>} : tensor<1x1x1x4xf32>
    %a = "tpu.add"(%d, %b) : (tensor<1x2x2x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x2x4xf32>
    %z = tpu.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %r = "tpu.max"(%a, %z) : (tensor<1x2x2x4xf32>, tensor<f32>) -> tensor<1x2x2x4xf32>
    %s1 = "tpu.reshape"(%r) {new_sizes = array<i64: 1, 2, 2, 2, 2>, dimensions, sharding} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x2x2xf32>
    %t = "tpu.transpose"(%s1) {permutation = array<i64: 0, 1, 2, 4, 3>} : (tensor<1x2x2x2x2xf32>) -> tensor<1x2x2x2x2xf32>
    %s2 = "tpu.reshape"(%t) {new_sizes = array<i64: 1, 2, 2, 4>, dimensions, sharding} : (tensor<1x2x2x2x2xf32>) -> tensor<1x2x2x4xf32>
    tpu.yield %s2 : tensor<1x2x2x4xf32>
  }) {device = "tpu"} : (tensor<1x2x2x3xf32>) -> tensor<1x2x2x4xf32>
  func.return %0 : tensor<1x2x2x4xf32>
}

// -----

// A grouped 1x1 convolution as one dot per group (two parts of 2 channels), concatenated:
// the shuffle interleaves the parts, so each part gets a unit axis and they are concatenated
// on it ([p0c0, p1c0, p0c1, p1c1]); no transpose is left.

// CHECK-LABEL: func.func @concat_head
// CHECK:         %[[C0:.*]] = "tpu.reshape"(%[[P0:.*]]) {new_sizes = array<i64: 1, 2, 2, 2, 1>
// CHECK:         %[[C1:.*]] = "tpu.reshape"(%[[P1:.*]]) {new_sizes = array<i64: 1, 2, 2, 2, 1>
// CHECK:         %[[S:.*]] = "tpu.concatenate"(%[[C0]], %[[C1]]) {dimension = 4 : i64} : (tensor<1x2x2x2x1xf32>, tensor<1x2x2x2x1xf32>) -> tensor<1x2x2x2x2xf32>
// CHECK:         %[[M:.*]] = "tpu.reshape"(%[[S]]) {new_sizes = array<i64: 1, 2, 2, 4>
// CHECK:         "tpu.add"(%[[M]], %{{.*}})
// CHECK-NOT:     tpu.transpose
func.func @concat_head(%p0: tensor<1x2x2x2xf32>, %p1: tensor<1x2x2x2xf32>) -> (tensor<1x2x2x4xf32>) {
  %0 = "tpu.region"(%p0, %p1) ({
  ^bb0(%1: tensor<1x2x2x2xf32>, %2: tensor<1x2x2x2xf32>):
    %c = "tpu.concatenate"(%1, %2) {dimension = 3 : i64} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
    %b = tpu.constant {value = dense<[[[[0.5, 1.5, 2.5, 3.5]]]]> : tensor<1x1x1x4xf32>} : tensor<1x1x1x4xf32>
    %a = "tpu.add"(%c, %b) : (tensor<1x2x2x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x2x4xf32>
    %s1 = "tpu.reshape"(%a) {new_sizes = array<i64: 1, 2, 2, 2, 2>, dimensions, sharding} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x2x2xf32>
    %t = "tpu.transpose"(%s1) {permutation = array<i64: 0, 1, 2, 4, 3>} : (tensor<1x2x2x2x2xf32>) -> tensor<1x2x2x2x2xf32>
    %s2 = "tpu.reshape"(%t) {new_sizes = array<i64: 1, 2, 2, 4>, dimensions, sharding} : (tensor<1x2x2x2x2xf32>) -> tensor<1x2x2x4xf32>
    tpu.yield %s2 : tensor<1x2x2x4xf32>
  }) {device = "tpu"} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  func.return %0 : tensor<1x2x2x4xf32>
}

// -----

// The ReLU's output is also returned unshuffled: the permutation cannot move up, the shuffle
// stays.

// CHECK-LABEL: func.func @two_uses
// CHECK:         "tpu.transpose"
func.func @two_uses(%x: tensor<1x2x2x3xf32>) -> (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) {
  %0, %1 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x2x2x3xf32>):
    %w = tpu.constant {value = dense<1.000000e+00> : tensor<3x4xf32>} : tensor<3x4xf32>
    %d = "tpu.dot_general"(%1, %w) {dimension_numbers = [[array<i64: 3>, array<i64: 0>], [array<i64>, array<i64>]], precision, preferred_element_type = f32, out_sharding} : (tensor<1x2x2x3xf32>, tensor<3x4xf32>) -> tensor<1x2x2x4xf32>
    %s1 = "tpu.reshape"(%d) {new_sizes = array<i64: 1, 2, 2, 2, 2>, dimensions, sharding} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x2x2xf32>
    %t = "tpu.transpose"(%s1) {permutation = array<i64: 0, 1, 2, 4, 3>} : (tensor<1x2x2x2x2xf32>) -> tensor<1x2x2x2x2xf32>
    %s2 = "tpu.reshape"(%t) {new_sizes = array<i64: 1, 2, 2, 4>, dimensions, sharding} : (tensor<1x2x2x2x2xf32>) -> tensor<1x2x2x4xf32>
    tpu.yield %s2, %d : tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>
  }) {device = "tpu"} : (tensor<1x2x2x3xf32>) -> (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>)
  func.return %0, %1 : tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>
}

// -----

// Four parts of one channel are not the two parts the shuffle interleaves: it stays.

// CHECK-LABEL: func.func @other_parts
// CHECK:         "tpu.transpose"
func.func @other_parts(%p: tensor<1x1x1x1xf32>) -> (tensor<1x1x1x4xf32>) {
  %0 = "tpu.region"(%p) ({
  ^bb0(%1: tensor<1x1x1x1xf32>):
    %c = "tpu.concatenate"(%1, %1, %1, %1) {dimension = 3 : i64} : (tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
    %s1 = "tpu.reshape"(%c) {new_sizes = array<i64: 1, 1, 1, 2, 2>, dimensions, sharding} : (tensor<1x1x1x4xf32>) -> tensor<1x1x1x2x2xf32>
    %t = "tpu.transpose"(%s1) {permutation = array<i64: 0, 1, 2, 4, 3>} : (tensor<1x1x1x2x2xf32>) -> tensor<1x1x1x2x2xf32>
    %s2 = "tpu.reshape"(%t) {new_sizes = array<i64: 1, 1, 1, 4>, dimensions, sharding} : (tensor<1x1x1x2x2xf32>) -> tensor<1x1x1x4xf32>
    tpu.yield %s2 : tensor<1x1x1x4xf32>
  }) {device = "tpu"} : (tensor<1x1x1x1xf32>) -> tensor<1x1x1x4xf32>
  func.return %0 : tensor<1x1x1x4xf32>
}

// -----

// The shuffle straight after the concatenation (ShuffleNetV2): its users read the interleaved
// concatenation.

// CHECK-LABEL: func.func @concat_then_shuffle
// CHECK:         %[[S:.*]] = "tpu.concatenate"(%{{.*}}, %{{.*}}) {dimension = 4 : i64}
// CHECK:         %[[M:.*]] = "tpu.reshape"(%[[S]]) {new_sizes = array<i64: 1, 2, 2, 4>
// CHECK-NOT:     tpu.transpose
// CHECK:         tpu.yield %[[M]]
func.func @concat_then_shuffle(%p0: tensor<1x2x2x2xf32>, %p1: tensor<1x2x2x2xf32>) -> (tensor<1x2x2x4xf32>) {
  %0 = "tpu.region"(%p0, %p1) ({
  ^bb0(%1: tensor<1x2x2x2xf32>, %2: tensor<1x2x2x2xf32>):
    %c = "tpu.concatenate"(%1, %2) {dimension = 3 : i64} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
    %s1 = "tpu.reshape"(%c) {new_sizes = array<i64: 1, 2, 2, 2, 2>, dimensions, sharding} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x2x2xf32>
    %t = "tpu.transpose"(%s1) {permutation = array<i64: 0, 1, 2, 4, 3>} : (tensor<1x2x2x2x2xf32>) -> tensor<1x2x2x2x2xf32>
    %s2 = "tpu.reshape"(%t) {new_sizes = array<i64: 1, 2, 2, 4>, dimensions, sharding} : (tensor<1x2x2x2x2xf32>) -> tensor<1x2x2x4xf32>
    tpu.yield %s2 : tensor<1x2x2x4xf32>
  }) {device = "tpu"} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  func.return %0 : tensor<1x2x2x4xf32>
}
