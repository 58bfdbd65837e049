// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-batch{component=function_alias component_name=second region=1 max_batch_size=4 disable_large_batch_splitting=true})' | filecheck %s
// RUN: not mlconv-opt %s -p 'tpu-batch{component=function_alias region=2}' 2>&1 | filecheck %s --check-prefix=MISSING

// Function batching: only the TPU function named (mlconv-convert resolves the name to region=1).
// CHECK-LABEL: func.func @two_functions
// CHECK:         %[[R1:.*]] = "tpu.region"
// CHECK:         %[[B:.*]] = "tpu.batch"(%[[R1]]) ({
// CHECK:         disable_large_batch_splitting = true, component = "function_alias", component_name = "second"}
// CHECK-NEXT:    func.return %[[B]]
// MISSING: error: tpu-batch: region 2 does not exist (@two_functions has 2 tpu.region op(s))
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
