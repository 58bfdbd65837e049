// Round trip of core.Custom (dialects/core_custom.py): an op nobody lowers, kept with its
// domain, type, attributes and result types (allow-custom).
// RUN: mlconv-opt %s --split-input-file | mlconv-opt --split-input-file | filecheck %s

// CHECK-LABEL: func.func @one_result
// CHECK:         %[[Y:.*]] = "core.Custom"(%{{.*}}) {domain = "com.example", op_type = "SoftClip", attrs = {alpha = 2.000000e+00 : f64, mode = "tanh", sizes = array<i64: 1, 2>}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK:         func.return %[[Y]]
func.func @one_result(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "core.Custom"(%x) {domain = "com.example", op_type = "SoftClip", attrs = {alpha = 2.0 : f64, mode = "tanh", sizes = array<i64: 1, 2>}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @several_results_dynamic
// CHECK:         %[[A:.*]], %[[B:.*]] = "core.Custom"(%{{.*}}, %{{.*}}) {op_type = "Split2"} : (tensor<?x4xf32>, tensor<i64>) -> (tensor<?x2xf32>, tensor<*xf32>)
// CHECK:         func.return %[[A]], %[[B]]
func.func @several_results_dynamic(%x: tensor<?x4xf32>, %k: tensor<i64>) -> (tensor<?x2xf32>, tensor<*xf32>) {
  %a, %b = "core.Custom"(%x, %k) {op_type = "Split2"} : (tensor<?x4xf32>, tensor<i64>) -> (tensor<?x2xf32>, tensor<*xf32>)
  func.return %a, %b : tensor<?x2xf32>, tensor<*xf32>
}
