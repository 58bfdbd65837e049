// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-outline-host-tail{device=cpu min-flops=0})' --split-input-file | filecheck %s
// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-outline-host-tail{device=cpu min-flops=0 max-elements=16})' --split-input-file | filecheck %s --check-prefix=SMALL
// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-outline-host-tail{device=cpu min-flops=640})' --split-input-file | filecheck %s --check-prefix=WORK
// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-outline-host-tail{device=cpu})' --split-input-file | filecheck %s --check-prefix=DEFAULT
// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-outline-host-tail{device=gpu min-flops=0})' --split-input-file | filecheck %s --check-prefix=GPU
// RUN: not mlconv-opt %s -p 'tpu-outline-host-tail{device=npu}' 2>&1 | filecheck %s --check-prefix=BAD

// BAD: error: tpu-outline-host-tail: unknown device 'npu' (expected cpu, gpu or tpu)

// Only the CPU runs a host region in numpy: on gpu every region stays as it came.
// GPU-NOT: device = "host"

// A region with less work than `min-flops` keeps its tail: the host's per-call cost would
// show in its run. The default (3 GFLOP) keeps every tail of these small functions; @softmax_head's
// dot is 640 FLOPs (2 x 4 x 10 x 8): min-flops=640 outlines its tail (the WORK checks).
// DEFAULT-NOT: device = "host"

// A classifier's head: the bias add and the softmax after the last dot go to the host, with
// the bias constant; the dot and its weights stay, and the region yields the dot instead.
// With max-elements=16 the [4, 10] tensors are too large: nothing moves.
// WORK-LABEL: func.func @softmax_head
// WORK:         device = "host"

// CHECK-LABEL: func.func @softmax_head
// CHECK:         %[[D:.*]] = "tpu.region"(%{{.*}}) ({
// CHECK:           %[[W:.*]] = tpu.constant {value = dense<5.000000e-01> : tensor<8x10xf32>}
// CHECK-NEXT:      %[[DOT:.*]] = "tpu.dot_general"(%{{.*}}, %[[W]])
// CHECK-NEXT:      tpu.yield %[[DOT]] : tensor<4x10xf32>
// CHECK-NEXT:    }) {device = "tpu"} : (tensor<4x8xf32>) -> tensor<4x10xf32>
// CHECK-NEXT:    %[[H:.*]] = "tpu.region"(%[[D]]) ({
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: tensor<4x10xf32>):
// CHECK-NEXT:      %[[B:.*]] = tpu.constant {value = dense<1.000000e-01> : tensor<1x10xf32>}
// CHECK-NEXT:      %[[Y:.*]] = "tpu.add"(%[[A]], %[[B]])
// CHECK-NEXT:      "tpu.reduce_max"(%[[Y]])
// CHECK:           %[[E:.*]] = "tpu.exp"
// CHECK-NEXT:      "tpu.reduce_sum"(%[[E]])
// CHECK:           %[[R:.*]] = "tpu.div"(%[[E]], %{{.*}})
// CHECK-NEXT:      tpu.yield %[[R]] : tensor<4x10xf32>
// CHECK-NEXT:    }) {device = "host"} : (tensor<4x10xf32>) -> tensor<4x10xf32>
// CHECK-NEXT:    func.return %[[H]] : tensor<4x10xf32>
// SMALL-LABEL: func.func @softmax_head
// SMALL-NOT:     device = "host"
// SMALL:         func.return
func.func @softmax_head(%x: tensor<4x8xf32>) -> tensor<4x10xf32> {
  %0 = "tpu.region"(%x) ({
  ^bb0(%a: tensor<4x8xf32>):
    %w = tpu.constant {value = dense<5.000000e-01> : tensor<8x10xf32>} : tensor<8x10xf32>
    %d = "tpu.dot_general"(%a, %w) {dimension_numbers = [[array<i64: 1>, array<i64: 0>], [array<i64>, array<i64>]], precision, preferred_element_type = f32, out_sharding} : (tensor<4x8xf32>, tensor<8x10xf32>) -> tensor<4x10xf32>
    %b = tpu.constant {value = dense<1.000000e-01> : tensor<1x10xf32>} : tensor<1x10xf32>
    %y = "tpu.add"(%d, %b) : (tensor<4x10xf32>, tensor<1x10xf32>) -> tensor<4x10xf32>
    %m = "tpu.reduce_max"(%y) {axes = array<i64: 1>} : (tensor<4x10xf32>) -> tensor<4xf32>
    %mb = "tpu.broadcast_in_dim"(%m) {shape = array<i64: 4, 1>, broadcast_dimensions = array<i64: 0>, sharding} : (tensor<4xf32>) -> tensor<4x1xf32>
    %s = "tpu.sub"(%y, %mb) : (tensor<4x10xf32>, tensor<4x1xf32>) -> tensor<4x10xf32>
    %e = "tpu.exp"(%s) {accuracy} : (tensor<4x10xf32>) -> tensor<4x10xf32>
    %t = "tpu.reduce_sum"(%e) {axes = array<i64: 1>, out_sharding} : (tensor<4x10xf32>) -> tensor<4xf32>
    %tb = "tpu.broadcast_in_dim"(%t) {shape = array<i64: 4, 1>, broadcast_dimensions = array<i64: 0>, sharding} : (tensor<4xf32>) -> tensor<4x1xf32>
    %r = "tpu.div"(%e, %tb) : (tensor<4x10xf32>, tensor<4x1xf32>) -> tensor<4x10xf32>
    tpu.yield %r : tensor<4x10xf32>
  }) {device = "tpu"} : (tensor<4x8xf32>) -> tensor<4x10xf32>
  func.return %0 : tensor<4x10xf32>
}

// -----

// The region yields the dot itself and a tail result; the tail also reads the region's
// block argument, which the host region takes from the region's operand. The results keep
// their order at the func.return.

// CHECK-LABEL: func.func @shared_and_argument
// CHECK:         %[[D:.*]] = "tpu.region"(%[[X:.*]]) ({
// CHECK:           tpu.yield %[[DOT:.*]] : tensor<2x8xf32>
// CHECK-NEXT:    }) {device = "tpu"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:    %[[H:.*]] = "tpu.region"(%[[D]], %[[X]]) ({
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: tensor<2x8xf32>, %[[XA:.*]]: tensor<2x8xf32>):
// CHECK-NEXT:      %[[T:.*]] = "tpu.tanh"(%[[A]])
// CHECK-NEXT:      %[[M:.*]] = "tpu.mul"(%[[T]], %[[XA]])
// CHECK-NEXT:      tpu.yield %[[M]] : tensor<2x8xf32>
// CHECK-NEXT:    }) {device = "host"} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:    func.return %[[H]], %[[D]] : tensor<2x8xf32>, tensor<2x8xf32>
func.func @shared_and_argument(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %0, %1 = "tpu.region"(%x) ({
  ^bb0(%a: tensor<2x8xf32>):
    %w = tpu.constant {value = dense<2.500000e-01> : tensor<8x8xf32>} : tensor<8x8xf32>
    %d = "tpu.dot_general"(%a, %w) {dimension_numbers = [[array<i64: 1>, array<i64: 0>], [array<i64>, array<i64>]], precision, preferred_element_type = f32, out_sharding} : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %t = "tpu.tanh"(%d) {accuracy} : (tensor<2x8xf32>) -> tensor<2x8xf32>
    %m = "tpu.mul"(%t, %a) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
    tpu.yield %m, %d : tensor<2x8xf32>, tensor<2x8xf32>
  }) {device = "tpu"} : (tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>)
  func.return %0, %1 : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// A region that would be left empty (all of it is a small tail) is compiled as it is.

// CHECK-LABEL: func.func @all_tail
// CHECK-NOT:     device = "host"
// CHECK:         func.return
func.func @all_tail(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = "tpu.region"(%x) ({
  ^bb0(%a: tensor<2x8xf32>):
    %e = "tpu.exp"(%a) {accuracy} : (tensor<2x8xf32>) -> tensor<2x8xf32>
    tpu.yield %e : tensor<2x8xf32>
  }) {device = "tpu"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %0 : tensor<2x8xf32>
}

// -----

// A tail of data movement alone (the reshape after the dot) computes nothing: it stays.
// So does a tail in bfloat16, which numpy would round after every op.

// CHECK-LABEL: func.func @layout_and_bf16
// CHECK-NOT:     device = "host"
// CHECK:         func.return
func.func @layout_and_bf16(%x: tensor<2x8xf32>, %y: tensor<2x8xbf16>) -> (tensor<16xf32>, tensor<2x8xbf16>) {
  %0, %1 = "tpu.region"(%x, %y) ({
  ^bb0(%a: tensor<2x8xf32>, %b: tensor<2x8xbf16>):
    %w = tpu.constant {value = dense<2.500000e-01> : tensor<8x8xf32>} : tensor<8x8xf32>
    %d = "tpu.dot_general"(%a, %w) {dimension_numbers = [[array<i64: 1>, array<i64: 0>], [array<i64>, array<i64>]], precision, preferred_element_type = f32, out_sharding} : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %r = "tpu.reshape"(%d) {new_sizes = array<i64: 16>, dimensions, sharding} : (tensor<2x8xf32>) -> tensor<16xf32>
    %e = "tpu.exp"(%b) {accuracy} : (tensor<2x8xbf16>) -> tensor<2x8xbf16>
    tpu.yield %r, %e : tensor<16xf32>, tensor<2x8xbf16>
  }) {device = "tpu"} : (tensor<2x8xf32>, tensor<2x8xbf16>) -> (tensor<16xf32>, tensor<2x8xbf16>)
  func.return %0, %1 : tensor<16xf32>, tensor<2x8xbf16>
}
