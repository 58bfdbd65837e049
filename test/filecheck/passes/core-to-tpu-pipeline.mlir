// RUN: mlconv-opt %s --pass-pipeline='builtin.module(core-to-tpu-pipeline{input-shapes=x:2,3})' | filecheck %s

// A dynamic batch fixed by input-shapes, a ShapeOf-fed Reshape folded (static-shape), then
// everything placed in one tpu.region.

// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%[[X:[a-z0-9]+]]: tensor<2x3xf32> {mlconv.name = "x"}) -> tensor<6xf32>
// CHECK:         %[[R:.*]] = "tpu.region"(%[[X]])
// CHECK:           %[[EXP:.*]] = "tpu.exp"
// CHECK:           %[[FLAT:.*]] = "tpu.reshape"(%[[EXP]]) {new_sizes = array<i64: 6>
// CHECK:           tpu.yield %[[FLAT]] : tensor<6xf32>
// CHECK-NOT:     core.
// CHECK:         func.return %[[R]] : tensor<6xf32>
func.func @main(%x: tensor<?x3xf32> {mlconv.name = "x"}) -> tensor<?xf32> {
  %e = "core.Exp"(%x) : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %s = "core.ShapeOf"(%e) : (tensor<?x3xf32>) -> tensor<2xi64>
  %axes = core.Constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %n = "core.ReduceProd"(%s, %axes) {keep_dims = true} : (tensor<2xi64>, tensor<1xi64>) -> tensor<1xi64>
  %f = "core.Reshape"(%e, %n) : (tensor<?x3xf32>, tensor<1xi64>) -> tensor<?xf32>
  func.return %f : tensor<?xf32>
}
