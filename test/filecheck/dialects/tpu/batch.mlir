// Round trip of tpu.batch (dialects/tpu.py BatchOp).
// RUN: mlconv-opt %s | mlconv-opt | filecheck %s

// CHECK-LABEL: func.func @batched
// CHECK:         %[[B:.*]] = "tpu.batch"(%{{.*}}) ({
// CHECK-NEXT:    ^bb0(%[[A:.*]]: tensor<1x4xf32>):
// CHECK-NEXT:      %[[R:.*]] = "tpu.region"(%[[A]]) ({
// CHECK:           tpu.yield %[[R]] : tensor<1x4xf32>
// CHECK-NEXT:    }) {num_batch_threads = 2 : i64, max_batch_size = 8 : i64, batch_timeout_micros = 5000 : i64, allowed_batch_sizes = array<i64: 2, 4, 8>, max_enqueued_batches = 10 : i64, disable_large_batch_splitting = false, component = "default"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:    func.return %[[B]] : tensor<1x4xf32>
func.func @batched(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %b = "tpu.batch"(%x) ({
  ^bb0(%a: tensor<1x4xf32>):
    %r = "tpu.region"(%a) ({
    ^bb0(%c: tensor<1x4xf32>):
      %e = "tpu.exp"(%c) {accuracy} : (tensor<1x4xf32>) -> tensor<1x4xf32>
      tpu.yield %e : tensor<1x4xf32>
    }) {device = "tpu"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    tpu.yield %r : tensor<1x4xf32>
  }) {num_batch_threads = 2 : i64, max_batch_size = 8 : i64, batch_timeout_micros = 5000 : i64, allowed_batch_sizes = array<i64: 2, 4, 8>, max_enqueued_batches = 10 : i64, disable_large_batch_splitting = false, component = "default"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %b : tensor<1x4xf32>
}
