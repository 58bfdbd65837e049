// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-io-shapes)' --split-input-file | mlconv-opt --split-input-file | filecheck %s

// A 2x8x16 input (256 elements) crosses as 2x128 and a 2x5 result (10 elements) as 10: each is
// reshaped on the host side, outside the region, and back inside it.
// CHECK-LABEL: func.func @boundary
// CHECK-SAME:    (%[[X:.*]]: tensor<2x8x16xf32> {{.*}})
// CHECK:         %[[T:.*]] = "tpu.reshape"(%[[X]]) {{.*}} : (tensor<2x8x16xf32>) -> tensor<2x128xf32>
// CHECK-NEXT:    %[[R:.*]] = "tpu.region"(%[[T]]) ({
// CHECK-NEXT:    ^bb0(%[[A:.*]]: tensor<2x128xf32>):
// CHECK-NEXT:      %[[BACK:.*]] = "tpu.reshape"(%[[A]]) {{.*}} : (tensor<2x128xf32>) -> tensor<2x8x16xf32>
// CHECK-NEXT:      %[[SUM:.*]] = "tpu.reduce_sum"(%[[BACK]])
// CHECK:           %[[FLAT:.*]] = "tpu.reshape"(%{{.*}}) {{.*}} : (tensor<2x5xf32>) -> tensor<10xf32>
// CHECK-NEXT:      tpu.yield %[[FLAT]] : tensor<10xf32>
// CHECK-NEXT:    }) {device = "tpu"} : (tensor<2x128xf32>) -> tensor<10xf32>
// CHECK-NEXT:    %[[Y:.*]] = "tpu.reshape"(%[[R]]) {{.*}} : (tensor<10xf32>) -> tensor<2x5xf32>
// CHECK-NEXT:    func.return %[[Y]] : tensor<2x5xf32>
func.func @boundary(%x: tensor<2x8x16xf32> {mlconv.name = "x"}) -> (tensor<2x5xf32> {mlconv.name = "y"}) {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<2x8x16xf32>):
    %2 = "tpu.reduce_sum"(%1) {axes = array<i64: 2>, out_sharding} : (tensor<2x8x16xf32>) -> tensor<2x8xf32>
    %3 = "tpu.slice"(%2) {start_indices = array<i64: 0, 0>, limit_indices = array<i64: 2, 5>, strides} : (tensor<2x8xf32>) -> tensor<2x5xf32>
    tpu.yield %3 : tensor<2x5xf32>
  }) {device = "tpu"} : (tensor<2x8x16xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}

// -----

// Friendly shapes (last dim a multiple of 128, rank <= 2; a vector) and scalars stay as they are.
// CHECK-LABEL: func.func @already_friendly
// CHECK-NOT:     tpu.reshape
// CHECK:         func.return
func.func @already_friendly(%x: tensor<4x256xf32>, %v: tensor<7xf32>, %s: tensor<f32>) -> tensor<4x256xf32> {
  %0 = "tpu.region"(%x, %v, %s) ({
  ^bb0(%1: tensor<4x256xf32>, %2: tensor<7xf32>, %3: tensor<f32>):
    tpu.yield %1 : tensor<4x256xf32>
  }) {device = "tpu"} : (tensor<4x256xf32>, tensor<7xf32>, tensor<f32>) -> tensor<4x256xf32>
  func.return %0 : tensor<4x256xf32>
}
