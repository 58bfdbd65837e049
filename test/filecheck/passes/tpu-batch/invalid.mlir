// The seed's shape requirements, checked on the batched values' types; bad options.
// RUN: not mlconv-opt %s -p 'tpu-batch' --split-input-file 2>&1 | filecheck %s
// RUN: not mlconv-opt %S/tpu-batch.mlir -p 'tpu-batch{max_batch_size=8 allowed_batch_sizes=4,2,8}' 2>&1 | filecheck %s --check-prefix=ORDER
// RUN: not mlconv-opt %S/tpu-batch.mlir -p 'tpu-batch{max_batch_size=8 allowed_batch_sizes=2,4}' 2>&1 | filecheck %s --check-prefix=LAST
// RUN: not mlconv-opt %S/tpu-batch.mlir -p 'tpu-batch{component=everything}' 2>&1 | filecheck %s --check-prefix=COMPONENT

// ORDER: error: tpu-batch: allowed_batch_sizes: entries must increase monotonically (got [4, 2, 8])
// LAST: error: tpu-batch: allowed_batch_sizes: the last entry (4) must equal max_batch_size (8)
// COMPONENT: error: tpu-batch: component must be one of default, function_alias, concrete_function_name, signature_name, got 'everything'

// CHECK: loc("scalar_fn"): error: 'tpu.region' op Batching input tensors must have at least one dimension (input 0 is a scalar)
func.func @scalar(%x: tensor<f32>) -> tensor<f32> {
  %r = "tpu.region"(%x) ({
  ^bb0(%a: tensor<f32>):
    %e = "tpu.exp"(%a) {accuracy} : (tensor<f32>) -> tensor<f32>
    tpu.yield %e : tensor<f32>
  }) {device = "tpu"} : (tensor<f32>) -> tensor<f32> loc("scalar_fn")
  func.return %r : tensor<f32>
}

// -----

// CHECK: loc("two_sizes"): error: 'tpu.region' op Batching input tensors supplied in a given op invocation must have equal 0th-dimension size (the inputs' 0th dimensions are 1, 2)
func.func @unequal(%x: tensor<1x4xf32>, %y: tensor<2x4xf32>) -> tensor<1x4xf32> {
  %r = "tpu.region"(%x, %y) ({
  ^bb0(%a: tensor<1x4xf32>, %b: tensor<2x4xf32>):
    tpu.yield %a : tensor<1x4xf32>
  }) {device = "tpu"} : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x4xf32> loc("two_sizes")
  func.return %r : tensor<1x4xf32>
}

// -----

// A reduction over the batch: the output's 0th dimension is not the rows'.
// CHECK: loc("batch_sum"): error: 'tpu.region' op Batched output tensor's 0th dimension does not equal the sum of the 0th dimension sizes of the input tensors (output 0 has 0th dimension 4, the inputs 1)
func.func @transposed(%x: tensor<1x4xf32>) -> tensor<4x1xf32> {
  %r = "tpu.region"(%x) ({
  ^bb0(%a: tensor<1x4xf32>):
    %t = "tpu.transpose"(%a) {permutation = array<i64: 1, 0>} : (tensor<1x4xf32>) -> tensor<4x1xf32>
    tpu.yield %t : tensor<4x1xf32>
  }) {device = "tpu"} : (tensor<1x4xf32>) -> tensor<4x1xf32> loc("batch_sum")
  func.return %r : tensor<4x1xf32>
}
