// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-report)' | mlconv-opt | filecheck %s

// XLA's cost analysis of the region: a 2x3 by 3x4 matmul (48 flops) then tanh (8 transcendentals).
// CHECK-LABEL: func.func @matmul_tanh
// CHECK:         "tpu.region"
// CHECK:         }) {device = "tpu", cost = {flops = 48 : i64, transcendentals = 8 : i64, bytes_accessed = [[BYTES:[0-9]+]] : i64}}
func.func @matmul_tanh(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<2x3xf32>):
    %2 = tpu.constant {value = dense<0.5> : tensor<3x4xf32>} : tensor<3x4xf32>
    %3 = "tpu.dot_general"(%1, %2) {dimension_numbers = [[array<i64: 1>, array<i64: 0>], [array<i64>, array<i64>]], precision, preferred_element_type = f32, out_sharding} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %4 = "tpu.tanh"(%3) {accuracy} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    tpu.yield %4 : tensor<2x4xf32>
  }) {device = "tpu"} : (tensor<2x3xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}
