// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-merge-epilogues)' --split-input-file | filecheck %s

// SqueezeNet's fire module: two branches with bias + ReLU, concatenated on the channels. The
// convolutions' outputs are concatenated, the biases at compile time, and one add and one
// ReLU run over the whole.

// CHECK-LABEL: func.func @fire
// CHECK:         %[[C:.*]] = "tpu.concatenate"(%[[P:.*]], %[[Q:.*]]) {dimension = 3 : i64} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
// CHECK:         %[[B:.*]] = tpu.constant {value = dense<{{\[\[\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]]]]> : tensor<1x1x1x4xf32>}
// CHECK:         %[[A:.*]] = "tpu.add"(%[[C]], %[[B]]) : (tensor<1x2x2x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x2x4xf32>
// CHECK:         %[[R:.*]] = "tpu.max"(%[[A]], %[[Z:.*]]) : (tensor<1x2x2x4xf32>, tensor<f32>) -> tensor<1x2x2x4xf32>
// CHECK-NEXT:    tpu.yield %[[R]]
func.func @fire(%p: tensor<1x2x2x2xf32>, %q: tensor<1x2x2x2xf32>) -> (tensor<1x2x2x4xf32>) {
  %0 = "tpu.region"(%p, %q) ({
  ^bb0(%1: tensor<1x2x2x2xf32>, %2: tensor<1x2x2x2xf32>):
    %z = tpu.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %b1 = tpu.constant {value = dense<[[[[1.0, 2.0]]]]> : tensor<1x1x1x2xf32>} : tensor<1x1x1x2xf32>
    %a1 = "tpu.add"(%1, %b1) : (tensor<1x2x2x2xf32>, tensor<1x1x1x2xf32>) -> tensor<1x2x2x2xf32>
    %r1 = "tpu.max"(%a1, %z) : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
    %b2 = tpu.constant {value = dense<[[[[3.0, 4.0]]]]> : tensor<1x1x1x2xf32>} : tensor<1x1x1x2xf32>
    %a2 = "tpu.add"(%2, %b2) : (tensor<1x2x2x2xf32>, tensor<1x1x1x2xf32>) -> tensor<1x2x2x2xf32>
    %r2 = "tpu.max"(%a2, %z) : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
    %c = "tpu.concatenate"(%r1, %r2) {dimension = 3 : i64} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
    tpu.yield %c : tensor<1x2x2x4xf32>
  }) {device = "tpu"} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  func.return %0 : tensor<1x2x2x4xf32>
}

// -----

// Scalars that differ per part (and parts of different sizes): each is broadcast along the
// concatenated axis to its part's size, so the merged op multiplies by [2, 2, 3].

// CHECK-LABEL: func.func @different_scalars
// CHECK:         %[[C:.*]] = "tpu.concatenate"(%{{.*}}, %{{.*}}) {dimension = 1 : i64} : (tensor<3x2xf32>, tensor<3x1xf32>) -> tensor<3x3xf32>
// CHECK:         %[[S:.*]] = tpu.constant {value = dense<{{\[\[}}2.000000e+00, 2.000000e+00, 3.000000e+00]]> : tensor<1x3xf32>}
// CHECK:         %[[M:.*]] = "tpu.mul"(%[[C]], %[[S]]) : (tensor<3x3xf32>, tensor<1x3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT:    tpu.yield %[[M]]
func.func @different_scalars(%p: tensor<3x2xf32>, %q: tensor<3x1xf32>) -> (tensor<3x3xf32>) {
  %0 = "tpu.region"(%p, %q) ({
  ^bb0(%1: tensor<3x2xf32>, %2: tensor<3x1xf32>):
    %two = tpu.constant {value = dense<2.000000e+00> : tensor<f32>} : tensor<f32>
    %three = tpu.constant {value = dense<3.000000e+00> : tensor<f32>} : tensor<f32>
    %m1 = "tpu.mul"(%1, %two) : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
    %m2 = "tpu.mul"(%2, %three) : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
    %c = "tpu.concatenate"(%m1, %m2) {dimension = 1 : i64} : (tensor<3x2xf32>, tensor<3x1xf32>) -> tensor<3x3xf32>
    tpu.yield %c : tensor<3x3xf32>
  }) {device = "tpu"} : (tensor<3x2xf32>, tensor<3x1xf32>) -> tensor<3x3xf32>
  func.return %0 : tensor<3x3xf32>
}

// -----

// Full-shape operands on both sides (a residual-like add of two values each) are
// concatenated pairwise.

// CHECK-LABEL: func.func @full_operands
// CHECK-DAG:     %[[L:.*]] = "tpu.concatenate"(%{{.*}}, %{{.*}}) {dimension = 0 : i64} : (tensor<2xf32>, tensor<3xf32>) -> tensor<5xf32>
// CHECK-DAG:     %[[R:.*]] = "tpu.concatenate"(%{{.*}}, %{{.*}}) {dimension = 0 : i64} : (tensor<2xf32>, tensor<3xf32>) -> tensor<5xf32>
// CHECK:         %[[S:.*]] = "tpu.sub"(%[[L]], %[[R]]) : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
// CHECK-NEXT:    tpu.yield %[[S]]
func.func @full_operands(%a: tensor<2xf32>, %b: tensor<2xf32>, %c: tensor<3xf32>, %d: tensor<3xf32>) -> (tensor<5xf32>) {
  %0 = "tpu.region"(%a, %b, %c, %d) ({
  ^bb0(%1: tensor<2xf32>, %2: tensor<2xf32>, %3: tensor<3xf32>, %4: tensor<3xf32>):
    %s1 = "tpu.sub"(%1, %2) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %s2 = "tpu.sub"(%3, %4) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %j = "tpu.concatenate"(%s1, %s2) {dimension = 0 : i64} : (tensor<2xf32>, tensor<3xf32>) -> tensor<5xf32>
    tpu.yield %j : tensor<5xf32>
  }) {device = "tpu"} : (tensor<2xf32>, tensor<2xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<5xf32>
  func.return %0 : tensor<5xf32>
}

// -----

// Parts that end differently (a ReLU and a bias add), and a part also read elsewhere: the
// concatenations stay as they are.

// CHECK-LABEL: func.func @left_alone
// CHECK:         %[[R:.*]] = "tpu.max"
// CHECK:         %[[A:.*]] = "tpu.add"
// CHECK:         "tpu.concatenate"(%[[R]], %[[A]])
// CHECK:         %[[R2:.*]] = "tpu.max"
// CHECK:         "tpu.concatenate"(%[[R]], %[[R2]])
func.func @left_alone(%p: tensor<2x2xf32>, %q: tensor<2x2xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %0, %1 = "tpu.region"(%p, %q) ({
  ^bb0(%2: tensor<2x2xf32>, %3: tensor<2x2xf32>):
    %z = tpu.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %r = "tpu.max"(%2, %z) : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
    %a = "tpu.add"(%3, %z) : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
    %c = "tpu.concatenate"(%r, %a) {dimension = 1 : i64} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
    %r2 = "tpu.max"(%3, %z) : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
    %d = "tpu.concatenate"(%r, %r2) {dimension = 1 : i64} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
    tpu.yield %c, %d : tensor<2x4xf32>, tensor<2x4xf32>
  }) {device = "tpu"} : (tensor<2x2xf32>, tensor<2x2xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  func.return %0, %1 : tensor<2x4xf32>, tensor<2x4xf32>
}
