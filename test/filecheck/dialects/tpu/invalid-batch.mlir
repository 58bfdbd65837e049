// Verifier messages of tpu.batch (dialects/tpu.py BatchOp): BatchOptions and the seed's shape requirements.
// RUN: mlconv-opt %s --split-input-file --verify-diagnostics

func.func @options(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  // expected-error @+1 {{'tpu.batch' op max_batch_size must be positive, got 0}}
  %b = "tpu.batch"(%x) ({
  ^bb0(%a: tensor<1x4xf32>):
    tpu.yield %a : tensor<1x4xf32>
  }) {num_batch_threads = 2 : i64, max_batch_size = 0 : i64, batch_timeout_micros = 5000 : i64, allowed_batch_sizes = array<i64: 2, 4, 8>, max_enqueued_batches = 10 : i64, disable_large_batch_splitting = false, component = "default"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %b : tensor<1x4xf32>
}

// -----

func.func @order(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  // expected-error @+1 {{'tpu.batch' op allowed_batch_sizes: entries must increase monotonically (got [4, 2, 8])}}
  %b = "tpu.batch"(%x) ({
  ^bb0(%a: tensor<1x4xf32>):
    tpu.yield %a : tensor<1x4xf32>
  }) {num_batch_threads = 2 : i64, max_batch_size = 8 : i64, batch_timeout_micros = 5000 : i64, allowed_batch_sizes = array<i64: 4, 2, 8>, max_enqueued_batches = 10 : i64, disable_large_batch_splitting = false, component = "default"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %b : tensor<1x4xf32>
}

// -----

func.func @last(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  // expected-error @+1 {{'tpu.batch' op allowed_batch_sizes: the last entry (4) must equal max_batch_size (8)}}
  %b = "tpu.batch"(%x) ({
  ^bb0(%a: tensor<1x4xf32>):
    tpu.yield %a : tensor<1x4xf32>
  }) {num_batch_threads = 2 : i64, max_batch_size = 8 : i64, batch_timeout_micros = 5000 : i64, allowed_batch_sizes = array<i64: 2, 4>, max_enqueued_batches = 10 : i64, disable_large_batch_splitting = false, component = "default"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %b : tensor<1x4xf32>
}

// -----

func.func @component(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  // expected-error @+1 {{'tpu.batch' op component must be one of default, function_alias, concrete_function_name, signature_name, got 'everything'}}
  %b = "tpu.batch"(%x) ({
  ^bb0(%a: tensor<1x4xf32>):
    tpu.yield %a : tensor<1x4xf32>
  }) {num_batch_threads = 2 : i64, max_batch_size = 8 : i64, batch_timeout_micros = 5000 : i64, allowed_batch_sizes = array<i64: 2, 4, 8>, max_enqueued_batches = 10 : i64, disable_large_batch_splitting = false, component = "everything"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %b : tensor<1x4xf32>
}

// -----

func.func @scalar(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'tpu.batch' op Batching input tensors must have at least one dimension (input 0 is a scalar)}}
  %b = "tpu.batch"(%x) ({
  ^bb0(%a: tensor<f32>):
    tpu.yield %a : tensor<f32>
  }) {num_batch_threads = 2 : i64, max_batch_size = 8 : i64, batch_timeout_micros = 5000 : i64, allowed_batch_sizes = array<i64: 2, 4, 8>, max_enqueued_batches = 10 : i64, disable_large_batch_splitting = false, component = "default"} : (tensor<f32>) -> tensor<f32>
  func.return %b : tensor<f32>
}

// -----

func.func @result_type(%x: tensor<1x4xf32>) -> tensor<1x2xf32> {
  // expected-error @+1 {{'tpu.batch' op tpu.yield operand types must match the batch op's result types}}
  %b = "tpu.batch"(%x) ({
  ^bb0(%a: tensor<1x4xf32>):
    tpu.yield %a : tensor<1x4xf32>
  }) {num_batch_threads = 2 : i64, max_batch_size = 8 : i64, batch_timeout_micros = 5000 : i64, allowed_batch_sizes = array<i64: 2, 4, 8>, max_enqueued_batches = 10 : i64, disable_large_batch_splitting = false, component = "default"} : (tensor<1x4xf32>) -> tensor<1x2xf32>
  func.return %b : tensor<1x2xf32>
}

// -----

func.func @output_rows(%x: tensor<1x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tpu.batch' op Batched output tensor's 0th dimension does not equal the sum of the 0th dimension sizes of the input tensors (output 0 has 0th dimension 4, the inputs 1)}}
  %b = "tpu.batch"(%x) ({
  ^bb0(%a: tensor<1x4xf32>):
    %r = "tpu.reshape"(%a) {new_sizes = array<i64: 4>, dimensions, sharding} : (tensor<1x4xf32>) -> tensor<4xf32>
    tpu.yield %r : tensor<4xf32>
  }) {num_batch_threads = 2 : i64, max_batch_size = 8 : i64, batch_timeout_micros = 5000 : i64, allowed_batch_sizes = array<i64: 2, 4, 8>, max_enqueued_batches = 10 : i64, disable_large_batch_splitting = false, component = "default"} : (tensor<1x4xf32>) -> tensor<4xf32>
  func.return %b : tensor<4xf32>
}

// -----

func.func @equal_rows(%x: tensor<1x4xf32>, %y: tensor<3x4xf32>) -> tensor<1x4xf32> {
  // expected-error @+1 {{'tpu.batch' op Batching input tensors supplied in a given op invocation must have equal 0th-dimension size (the inputs' 0th dimensions are 1, 3)}}
  %b = "tpu.batch"(%x, %y) ({
  ^bb0(%a: tensor<1x4xf32>, %c: tensor<3x4xf32>):
    tpu.yield %a : tensor<1x4xf32>
  }) {num_batch_threads = 2 : i64, max_batch_size = 8 : i64, batch_timeout_micros = 5000 : i64, allowed_batch_sizes = array<i64: 2, 4, 8>, max_enqueued_batches = 10 : i64, disable_large_batch_splitting = false, component = "default"} : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<1x4xf32>
  func.return %b : tensor<1x4xf32>
}
