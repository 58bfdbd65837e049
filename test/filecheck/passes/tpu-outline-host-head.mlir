// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-outline-host-head{device=cpu min-flops=0})' --split-input-file | filecheck %s
// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-outline-host-head{device=cpu})' --split-input-file | filecheck %s --check-prefix=DEFAULT
// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-outline-host-head{device=tpu min-flops=0})' --split-input-file | filecheck %s --check-prefix=TPU
// RUN: not mlconv-opt %s -p 'tpu-outline-host-head{device=npu}' 2>&1 | filecheck %s --check-prefix=BAD

// BAD: error: tpu-outline-host-head: unknown device 'npu' (expected cpu, gpu or tpu)

// On gpu and tpu the transpose stays XLA's; so it does on the CPU for a region with less
// than `min-flops` of convolutions and dots (default 1 GFLOP; these have a few thousand).
// TPU-NOT: device = "host"
// DEFAULT-NOT: device = "host"

// An NCHW image turned NHWC for a convolution: the transpose moves to a host region before
// the region, which takes the transposed image instead of the original.

// CHECK-LABEL: func.func @image
// CHECK-NEXT:    %[[H:.*]] = "tpu.region"(%[[X:.*]]) ({
// CHECK-NEXT:    ^{{.*}}(%[[B:.*]]: tensor<1x3x8x8xf32>):
// CHECK-NEXT:      %[[T:.*]] = "tpu.transpose"(%[[B]]) {permutation = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT:      tpu.yield %[[T]] : tensor<1x8x8x3xf32>
// CHECK-NEXT:    }) {device = "host"} : (tensor<1x3x8x8xf32>) -> tensor<1x8x8x3xf32>
// CHECK-NEXT:    %[[R:.*]] = "tpu.region"(%[[H]]) ({
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: tensor<1x8x8x3xf32>):
// CHECK-NEXT:      %[[W:.*]] = tpu.constant
// CHECK-NEXT:      "tpu.conv_general_dilated"(%[[A]], %[[W]])
// CHECK:         }) {device = "tpu"} : (tensor<1x8x8x3xf32>) -> tensor<1x8x8x4xf32>
func.func @image(%x: tensor<1x3x8x8xf32>) -> tensor<1x8x8x4xf32> {
  %0 = "tpu.region"(%x) ({
  ^bb0(%a: tensor<1x3x8x8xf32>):
    %t = "tpu.transpose"(%a) {permutation = array<i64: 0, 2, 3, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x8x8x3xf32>
    %w = tpu.constant {value = dense<5.000000e-01> : tensor<3x3x3x4xf32>} : tensor<3x3x3x4xf32>
    %c = "tpu.conv_general_dilated"(%t, %w) {window_strides = array<i64: 1, 1>, padding = [array<i64: 1, 1>, array<i64: 1, 1>], lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, dimension_numbers = {__class__ = "ConvDimensionNumbers", lhs_spec = array<i64: 0, 3, 1, 2>, rhs_spec = array<i64: 3, 2, 0, 1>, out_spec = array<i64: 0, 3, 1, 2>}, feature_group_count = 1 : i64, batch_group_count = 1 : i64, precision, preferred_element_type = f32, out_sharding} : (tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>) -> tensor<1x8x8x4xf32>
    tpu.yield %c : tensor<1x8x8x4xf32>
  }) {device = "tpu"} : (tensor<1x3x8x8xf32>) -> tensor<1x8x8x4xf32>
  func.return %0 : tensor<1x8x8x4xf32>
}

// -----

// The region also reads the image as it came (a ShuffleNet pool branch on NCHW data): it
// keeps that operand and takes the transposed image as one more.

// CHECK-LABEL: func.func @image_read_twice
// CHECK-NEXT:    %[[H:.*]] = "tpu.region"(%[[X:.*]]) ({
// CHECK:         }) {device = "host"} : (tensor<1x3x8x8xf32>) -> tensor<1x8x8x3xf32>
// CHECK-NEXT:    %{{.*}}, %{{.*}} = "tpu.region"(%[[X]], %[[H]]) ({
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: tensor<1x3x8x8xf32>, %[[T:.*]]: tensor<1x8x8x3xf32>):
// CHECK:           "tpu.conv_general_dilated"(%[[T]], %{{.*}})
// CHECK-NEXT:      "tpu.reduce_sum"(%[[A]])
func.func @image_read_twice(%x: tensor<1x3x8x8xf32>) -> (tensor<1x8x8x4xf32>, tensor<1x3xf32>) {
  %0, %1 = "tpu.region"(%x) ({
  ^bb0(%a: tensor<1x3x8x8xf32>):
    %t = "tpu.transpose"(%a) {permutation = array<i64: 0, 2, 3, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x8x8x3xf32>
    %w = tpu.constant {value = dense<5.000000e-01> : tensor<3x3x3x4xf32>} : tensor<3x3x3x4xf32>
    %c = "tpu.conv_general_dilated"(%t, %w) {window_strides = array<i64: 1, 1>, padding = [array<i64: 1, 1>, array<i64: 1, 1>], lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, dimension_numbers = {__class__ = "ConvDimensionNumbers", lhs_spec = array<i64: 0, 3, 1, 2>, rhs_spec = array<i64: 3, 2, 0, 1>, out_spec = array<i64: 0, 3, 1, 2>}, feature_group_count = 1 : i64, batch_group_count = 1 : i64, precision, preferred_element_type = f32, out_sharding} : (tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>) -> tensor<1x8x8x4xf32>
    %s = "tpu.reduce_sum"(%a) {axes = array<i64: 2, 3>, out_sharding} : (tensor<1x3x8x8xf32>) -> tensor<1x3xf32>
    tpu.yield %c, %s : tensor<1x8x8x4xf32>, tensor<1x3xf32>
  }) {device = "tpu"} : (tensor<1x3x8x8xf32>) -> (tensor<1x8x8x4xf32>, tensor<1x3xf32>)
  func.return %0, %1 : tensor<1x8x8x4xf32>, tensor<1x3xf32>
}
