// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-window-strategy{device=cpu})' --split-input-file | filecheck %s
// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-window-strategy{device=gpu})' --split-input-file | filecheck %s --check-prefix=GPU
// RUN: not mlconv-opt %s -p 'tpu-window-strategy{device=npu}' 2>&1 | filecheck %s --check-prefix=BAD

// BAD: error: tpu-window-strategy: unknown device 'npu' (expected cpu, gpu or tpu)

// A 2x2/2 max pool: one strided slice per tap, joined by max; no window reduction is left.

// CHECK-LABEL: func.func @max_pool
// CHECK-NOT:     tpu.reduce_window_max
// CHECK:         %[[A:.*]] = "tpu.slice"(%[[X:.*]]) {start_indices = array<i64: 0, 0, 0, 0>, limit_indices = array<i64: 1, 3, 3, 3>, strides = array<i64: 1, 2, 2, 1>}
// CHECK:         %[[B:.*]] = "tpu.slice"(%[[X]]) {start_indices = array<i64: 0, 0, 1, 0>, limit_indices = array<i64: 1, 3, 4, 3>, strides = array<i64: 1, 2, 2, 1>}
// CHECK:         %[[M:.*]] = "tpu.max"(%[[A]], %[[B]])
// CHECK:         %[[C:.*]] = "tpu.slice"(%[[X]]) {start_indices = array<i64: 0, 1, 0, 0>
// CHECK:         %[[N:.*]] = "tpu.max"(%[[M]], %[[C]])
// CHECK:         %[[D:.*]] = "tpu.slice"(%[[X]]) {start_indices = array<i64: 0, 1, 1, 0>
// CHECK:         %[[R:.*]] = "tpu.max"(%[[N]], %[[D]])
// CHECK:         tpu.yield %[[R]]
// GPU-LABEL: func.func @max_pool
// GPU:         tpu.reduce_window_max
func.func @max_pool(%x: tensor<1x4x4x3xf32>) -> (tensor<1x2x2x3xf32>) {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x4x4x3xf32>):
    %2 = "tpu.reduce_window_max"(%1) {window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>, padding = [array<i64: 0, 0>, array<i64: 0, 0>, array<i64: 0, 0>, array<i64: 0, 0>], base_dilation = array<i64: 1, 1, 1, 1>, window_dilation = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x3xf32>) -> tensor<1x2x2x3xf32>
    tpu.yield %2 : tensor<1x2x2x3xf32>
  }) {device = "tpu"} : (tensor<1x4x4x3xf32>) -> tensor<1x2x2x3xf32>
  func.return %0 : tensor<1x2x2x3xf32>
}

// -----

// A padded 3x3/1 sum (average pooling's numerator): the input padded with the sum's identity 0,
// nine slices, eight adds.

// CHECK-LABEL: func.func @padded_sum
// CHECK:         %[[ZERO:.*]] = tpu.constant {value = dense<0.000000e+00> : tensor<f32>}
// CHECK:         %[[P:.*]] = "tpu.pad"(%{{.*}}, %[[ZERO]]) {padding_config = [array<i64: 0, 0, 0>, array<i64: 1, 1, 0>, array<i64: 1, 1, 0>, array<i64: 0, 0, 0>]}
// CHECK-COUNT-2: "tpu.slice"(%[[P]])
// CHECK:         "tpu.add"
// CHECK-NOT:     tpu.reduce_window_sum
func.func @padded_sum(%x: tensor<1x5x5x2xf32>) -> (tensor<1x5x5x2xf32>) {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x5x5x2xf32>):
    %2 = "tpu.reduce_window_sum"(%1) {window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 1, 1, 1>, padding = [array<i64: 0, 0>, array<i64: 1, 1>, array<i64: 1, 1>, array<i64: 0, 0>], base_dilation = array<i64: 1, 1, 1, 1>, window_dilation = array<i64: 1, 1, 1, 1>} : (tensor<1x5x5x2xf32>) -> tensor<1x5x5x2xf32>
    tpu.yield %2 : tensor<1x5x5x2xf32>
  }) {device = "tpu"} : (tensor<1x5x5x2xf32>) -> tensor<1x5x5x2xf32>
  func.return %0 : tensor<1x5x5x2xf32>
}

// -----

// Integer max pooling pads with the type's minimum, min pooling of floats with +inf
// (printed as its little-endian bytes).

// CHECK-LABEL: func.func @int_max
// CHECK:         tpu.constant {value = dense<-2147483648> : tensor<i32>}
// CHECK:         "tpu.pad"
func.func @int_max(%x: tensor<1x4x4x1xi32>) -> (tensor<1x2x2x1xi32>) {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x4x4x1xi32>):
    %2 = "tpu.reduce_window_max"(%1) {window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>, padding = [array<i64: 0, 0>, array<i64: 0, 1>, array<i64: 0, 1>, array<i64: 0, 0>], base_dilation = array<i64: 1, 1, 1, 1>, window_dilation = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x1xi32>) -> tensor<1x2x2x1xi32>
    tpu.yield %2 : tensor<1x2x2x1xi32>
  }) {device = "tpu"} : (tensor<1x4x4x1xi32>) -> tensor<1x2x2x1xi32>
  func.return %0 : tensor<1x2x2x1xi32>
}

// -----

// CHECK-LABEL: func.func @float_min
// CHECK:         tpu.constant {value = dense<"0x0000807F"> : tensor<f32>}
// CHECK:         "tpu.pad"
// CHECK:         "tpu.min"
func.func @float_min(%x: tensor<1x4x4x1xf32>) -> (tensor<1x2x2x1xf32>) {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x4x4x1xf32>):
    %2 = "tpu.reduce_window_min"(%1) {window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>, padding = [array<i64: 0, 0>, array<i64: 0, 1>, array<i64: 0, 1>, array<i64: 0, 0>], base_dilation = array<i64: 1, 1, 1, 1>, window_dilation = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x1xf32>) -> tensor<1x2x2x1xf32>
    tpu.yield %2 : tensor<1x2x2x1xf32>
  }) {device = "tpu"} : (tensor<1x4x4x1xf32>) -> tensor<1x2x2x1xf32>
  func.return %0 : tensor<1x2x2x1xf32>
}

// -----

// A dilated window: the second tap starts two elements on.

// CHECK-LABEL: func.func @dilated
// CHECK:         "tpu.slice"(%{{.*}}) {start_indices = array<i64: 0, 0, 0, 0>, limit_indices = array<i64: 1, 3, 1, 1>
// CHECK:         "tpu.slice"(%{{.*}}) {start_indices = array<i64: 0, 2, 0, 0>, limit_indices = array<i64: 1, 5, 1, 1>
func.func @dilated(%x: tensor<1x5x1x1xf32>) -> (tensor<1x3x1x1xf32>) {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x5x1x1xf32>):
    %2 = "tpu.reduce_window_max"(%1) {window_dimensions = array<i64: 1, 2, 1, 1>, window_strides = array<i64: 1, 1, 1, 1>, padding = [array<i64: 0, 0>, array<i64: 0, 0>, array<i64: 0, 0>, array<i64: 0, 0>], base_dilation = array<i64: 1, 1, 1, 1>, window_dilation = array<i64: 1, 2, 1, 1>} : (tensor<1x5x1x1xf32>) -> tensor<1x3x1x1xf32>
    tpu.yield %2 : tensor<1x3x1x1xf32>
  }) {device = "tpu"} : (tensor<1x5x1x1xf32>) -> tensor<1x3x1x1xf32>
  func.return %0 : tensor<1x3x1x1xf32>
}

// -----

// More than 64 taps (a global pool over a 9x9 map) and base dilation stay window reductions.

// CHECK-LABEL: func.func @global_9x9
// CHECK:         tpu.reduce_window_sum
// CHECK-NOT:     tpu.slice
func.func @global_9x9(%x: tensor<1x9x9x4xf32>) -> (tensor<1x1x1x4xf32>) {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x9x9x4xf32>):
    %2 = "tpu.reduce_window_sum"(%1) {window_dimensions = array<i64: 1, 9, 9, 1>, window_strides = array<i64: 1, 1, 1, 1>, padding = [array<i64: 0, 0>, array<i64: 0, 0>, array<i64: 0, 0>, array<i64: 0, 0>], base_dilation = array<i64: 1, 1, 1, 1>, window_dilation = array<i64: 1, 1, 1, 1>} : (tensor<1x9x9x4xf32>) -> tensor<1x1x1x4xf32>
    tpu.yield %2 : tensor<1x1x1x4xf32>
  }) {device = "tpu"} : (tensor<1x9x9x4xf32>) -> tensor<1x1x1x4xf32>
  func.return %0 : tensor<1x1x1x4xf32>
}

// -----

// CHECK-LABEL: func.func @base_dilated
// CHECK:         tpu.reduce_window_max
// CHECK-NOT:     tpu.slice
func.func @base_dilated(%x: tensor<1x3x3x1xf32>) -> (tensor<1x4x4x1xf32>) {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x3x3x1xf32>):
    %2 = "tpu.reduce_window_max"(%1) {window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 1, 1, 1>, padding = [array<i64: 0, 0>, array<i64: 0, 0>, array<i64: 0, 0>, array<i64: 0, 0>], base_dilation = array<i64: 1, 2, 2, 1>, window_dilation = array<i64: 1, 1, 1, 1>} : (tensor<1x3x3x1xf32>) -> tensor<1x4x4x1xf32>
    tpu.yield %2 : tensor<1x4x4x1xf32>
  }) {device = "tpu"} : (tensor<1x3x3x1xf32>) -> tensor<1x4x4x1xf32>
  func.return %0 : tensor<1x4x4x1xf32>
}
