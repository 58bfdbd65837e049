// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-batch{num_batch_threads=2 max_batch_size=8 batch_timeout_micros=5000 allowed_batch_sizes=2,4,8 max_enqueued_batches=10})' --split-input-file | filecheck %s
// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-batch{component=signature_name component_name=serving_default max_batch_size=4})' --split-input-file | filecheck %s --check-prefix=SIG
// RUN: mlconv-opt %s -p 'tpu-batch{max_batch_size=8 allowed_batch_sizes=2,4,8}' --split-input-file | mlconv-opt --split-input-file | filecheck %s

// Default batching: the TPU function moves into a tpu.batch op carrying the BatchOptions; the
// function's operands and results become the batch op's.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4xf32>
// CHECK:         %[[B:.*]] = "tpu.batch"(%[[X]]) ({
// CHECK-NEXT:    ^bb0(%[[ARG:.*]]: tensor<1x4xf32>):
// CHECK-NEXT:      %[[R:.*]] = "tpu.region"(%[[ARG]]) ({
// CHECK:           tpu.yield %[[R]] : tensor<1x2xf32>
// CHECK-NEXT:    }) {num_batch_threads = {{[12]}} : i64, max_batch_size = 8 : i64, batch_timeout_micros = {{[0-9]+}} : i64, allowed_batch_sizes = array<i64: 2, 4, 8>, max_enqueued_batches = 10 : i64, disable_large_batch_splitting = false, component = "default"} : (tensor<1x4xf32>) -> tensor<1x2xf32>
// CHECK-NEXT:    func.return %[[B]] : tensor<1x2xf32>
// SIG-LABEL: func.func @mlp
// SIG:         "tpu.batch"
// SIG:         component = "signature_name", component_name = "serving_default"
func.func @mlp(%x: tensor<1x4xf32> {mlconv.name = "x"}) -> (tensor<1x2xf32> {mlconv.name = "y"}) {
  %r = "tpu.region"(%x) ({
  ^bb0(%a: tensor<1x4xf32>):
    %w = tpu.constant {value = dense<5.000000e-01> : tensor<4x2xf32>} : tensor<4x2xf32>
    %d = "tpu.dot_general"(%a, %w) {dimension_numbers = [[array<i64: 1>, array<i64: 0>], [array<i64>, array<i64>]], precision, preferred_element_type = f32, out_sharding} : (tensor<1x4xf32>, tensor<4x2xf32>) -> tensor<1x2xf32>
    tpu.yield %d : tensor<1x2xf32>
  }) {device = "tpu"} : (tensor<1x4xf32>) -> tensor<1x2xf32>
  func.return %r : tensor<1x2xf32>
}

// -----

// Two TPU functions: default batching wraps each; signature batching wraps both in one op.
// CHECK-LABEL: func.func @two_functions
// CHECK:         %[[B1:.*]] = "tpu.batch"(%{{.*}}) ({
// CHECK:         component = "default"
// CHECK:         %[[B2:.*]] = "tpu.batch"(%[[B1]]) ({
// CHECK:         component = "default"
// CHECK:         func.return %[[B2]]
// SIG-LABEL: func.func @two_functions
// SIG:         %[[B:.*]] = "tpu.batch"(%{{.*}}) ({
// SIG:           %[[R1:.*]] = "tpu.region"
// SIG:           %[[R2:.*]] = "tpu.region"(%[[R1]])
// SIG:           tpu.yield %[[R2]] : tensor<1x2xf32>
// SIG-NEXT:    }) {{{.*}}component = "signature_name"
// SIG-NEXT:    func.return %[[B]]
func.func @two_functions(%x: tensor<1x4xf32>) -> tensor<1x2xf32> {
  %r1 = "tpu.region"(%x) ({
  ^bb0(%a: tensor<1x4xf32>):
    %e = "tpu.exp"(%a) {accuracy} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    tpu.yield %e : tensor<1x4xf32>
  }) {device = "tpu"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %r2 = "tpu.region"(%r1) ({
  ^bb0(%a: tensor<1x4xf32>):
    %w = tpu.constant {value = dense<5.000000e-01> : tensor<4x2xf32>} : tensor<4x2xf32>
    %d = "tpu.dot_general"(%a, %w) {dimension_numbers = [[array<i64: 1>, array<i64: 0>], [array<i64>, array<i64>]], precision, preferred_element_type = f32, out_sharding} : (tensor<1x4xf32>, tensor<4x2xf32>) -> tensor<1x2xf32>
    tpu.yield %d : tensor<1x2xf32>
  }) {device = "tpu"} : (tensor<1x4xf32>) -> tensor<1x2xf32>
  func.return %r2 : tensor<1x2xf32>
}
