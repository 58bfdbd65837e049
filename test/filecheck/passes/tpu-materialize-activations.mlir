// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-materialize-activations{device=cpu})' --split-input-file | filecheck %s
// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-materialize-activations{device=gpu})' --split-input-file | filecheck %s --check-prefix=GPU
// RUN: not mlconv-opt %s -p 'tpu-materialize-activations{device=npu}' 2>&1 | filecheck %s --check-prefix=BAD

// BAD: error: tpu-materialize-activations: unknown device 'npu' (expected cpu, gpu or tpu)

// XLA:GPU fuses by a cost model of its own: on gpu every clamp stays as it came.
// GPU-NOT: tpu.select_n

// A residual block's ReLU, read by a dot (the next block's 1x1 convolution) and by the next
// residual add: it becomes select(x <= 0, 0, x), which XLA:CPU computes once.

// CHECK-LABEL: func.func @residual
// CHECK:         %[[Z:.*]] = tpu.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
// CHECK-NEXT:    %[[B:.*]] = "tpu.broadcast_in_dim"(%[[Z]]) {shape = array<i64: 4, 8>, broadcast_dimensions = array<i64>, sharding} : (tensor<f32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %[[P:.*]] = "tpu.le"(%[[X:.*]], %[[B]]) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
// CHECK-NEXT:    %[[R:.*]] = "tpu.select_n"(%[[P]], %[[X]], %[[B]]) : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %[[D:.*]] = "tpu.dot_general"(%[[R]], %{{.*}})
// CHECK-NEXT:    "tpu.add"(%[[D]], %[[R]])
// CHECK-NOT:     tpu.max
func.func @residual(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<4x8xf32>):
    %w = tpu.constant {value = dense<5.000000e-01> : tensor<8x8xf32>} : tensor<8x8xf32>
    %z = tpu.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %r = "tpu.max"(%1, %z) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %d = "tpu.dot_general"(%r, %w) {dimension_numbers = [[[1], [0]], [[], []]], precision = "None", preferred_element_type = "float32", out_sharding = "None"} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %a = "tpu.add"(%d, %r) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    tpu.yield %a : tensor<4x8xf32>
  }) {device = "tpu"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

// Clip's upper bound (min at 6, the constant first), read by a convolution and by a
// multiply: select(x >= 6, 6, x). The max below it has one reader and stays.

// CHECK-LABEL: func.func @clip_upper_bound
// CHECK:         %[[M:.*]] = "tpu.max"(%{{.*}}, %{{.*}}) : (tensor<1x4x4x2xf32>, tensor<f32>) -> tensor<1x4x4x2xf32>
// CHECK:         %[[S:.*]] = tpu.constant {value = dense<6.000000e+00> : tensor<f32>} : tensor<f32>
// CHECK-NEXT:    %[[B:.*]] = "tpu.broadcast_in_dim"(%[[S]])
// CHECK-NEXT:    %[[P:.*]] = "tpu.ge"(%[[M]], %[[B]]) : (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xi1>
// CHECK-NEXT:    %[[R:.*]] = "tpu.select_n"(%[[P]], %[[M]], %[[B]])
// CHECK-NEXT:    "tpu.conv_general_dilated"(%[[R]], %{{.*}})
// CHECK-NEXT:    "tpu.mul"(%[[R]], %[[R]])
// CHECK-NOT:     tpu.min
func.func @clip_upper_bound(%x: tensor<1x4x4x2xf32>) -> (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>) {
  %0, %1 = "tpu.region"(%x) ({
  ^bb0(%2: tensor<1x4x4x2xf32>):
    %w = tpu.constant {value = dense<1.000000e+00> : tensor<1x1x2x2xf32>} : tensor<1x1x2x2xf32>
    %z = tpu.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %six = tpu.constant {value = dense<6.000000e+00> : tensor<f32>} : tensor<f32>
    %m = "tpu.max"(%2, %z) : (tensor<1x4x4x2xf32>, tensor<f32>) -> tensor<1x4x4x2xf32>
    %r = "tpu.min"(%six, %m) : (tensor<f32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
    %c = "tpu.conv_general_dilated"(%r, %w) {window_strides = array<i64: 1, 1>, padding = [[0, 0], [0, 0]], lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, dimension_numbers = [[0, 3, 1, 2], [3, 2, 0, 1], [0, 3, 1, 2]], feature_group_count = 1 : i64, batch_group_count = 1 : i64, precision = "None", preferred_element_type = "None"} : (tensor<1x4x4x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x4x4x2xf32>
    %s = "tpu.mul"(%r, %r) : (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
    tpu.yield %c, %s : tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>
  }) {device = "tpu"} : (tensor<1x4x4x2xf32>) -> (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>)
  func.return %0, %1 : tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>
}

// -----

// A ReLU that is also the region's result counts as read from memory: with an elementwise
// reader beside it, it becomes a select too.

// CHECK-LABEL: func.func @region_result
// CHECK:         %[[R:.*]] = "tpu.select_n"
// CHECK-NEXT:    %[[N:.*]] = "tpu.neg"(%[[R]])
// CHECK-NEXT:    tpu.yield %[[R]], %[[N]]
func.func @region_result(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0, %1 = "tpu.region"(%x) ({
  ^bb0(%2: tensor<3xf32>):
    %z = tpu.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %r = "tpu.max"(%2, %z) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    %n = "tpu.neg"(%r) : (tensor<3xf32>) -> tensor<3xf32>
    tpu.yield %r, %n : tensor<3xf32>, tensor<3xf32>
  }) {device = "tpu"} : (tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  func.return %0, %1 : tensor<3xf32>, tensor<3xf32>
}

// -----

// Left as they are: a ReLU read only by fusible ops (XLA may copy it into both), one read
// only by library calls (nothing to copy it into), a max of two values, a max at a constant
// of several numbers, and an integer clamp.

// CHECK-LABEL: func.func @kept
// CHECK-COUNT-5: "tpu.max"
// CHECK-NOT:     tpu.select_n
func.func @kept(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %i: tensor<4x8xi32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xi32>) {
  %0:7 = "tpu.region"(%x, %y, %i) ({
  ^bb0(%1: tensor<4x8xf32>, %2: tensor<4x8xf32>, %3: tensor<4x8xi32>):
    %w = tpu.constant {value = dense<5.000000e-01> : tensor<8x8xf32>} : tensor<8x8xf32>
    %z = tpu.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %row = tpu.constant {value = dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0], [24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0]]> : tensor<4x8xf32>} : tensor<4x8xf32>
    %zi = tpu.constant {value = dense<0> : tensor<i32>} : tensor<i32>
    %fused = "tpu.max"(%1, %z) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %n = "tpu.neg"(%fused) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %e = "tpu.exp"(%fused) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %library = "tpu.max"(%2, %z) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %d1 = "tpu.dot_general"(%library, %w) {dimension_numbers = [[[1], [0]], [[], []]], precision = "None", preferred_element_type = "float32", out_sharding = "None"} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %d2 = "tpu.dot_general"(%library, %w) {dimension_numbers = [[[1], [0]], [[], []]], precision = "None", preferred_element_type = "float32", out_sharding = "None"} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %two = "tpu.max"(%1, %2) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %d3 = "tpu.dot_general"(%two, %w) {dimension_numbers = [[[1], [0]], [[], []]], precision = "None", preferred_element_type = "float32", out_sharding = "None"} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %a3 = "tpu.add"(%d3, %two) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %rows = "tpu.max"(%1, %row) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %d4 = "tpu.dot_general"(%rows, %w) {dimension_numbers = [[[1], [0]], [[], []]], precision = "None", preferred_element_type = "float32", out_sharding = "None"} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %a4 = "tpu.add"(%d4, %rows) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %int = "tpu.max"(%3, %zi) : (tensor<4x8xi32>, tensor<i32>) -> tensor<4x8xi32>
    %ni = "tpu.neg"(%int) : (tensor<4x8xi32>) -> tensor<4x8xi32>
    tpu.yield %n, %e, %d1, %d2, %a3, %a4, %ni : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xi32>
  }) {device = "tpu"} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xi32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xi32>)
  func.return %0#0, %0#1, %0#2, %0#3, %0#4, %0#5, %0#6 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xi32>
}
