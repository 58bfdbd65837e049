// Round trip of onnx.Custom (dialects/onnx.py): a node of a domain the dialect has no schema
// for, with its domain, op type, the domain's opset version and its attributes.
// RUN: mlconv-opt %s | mlconv-opt | filecheck %s

// CHECK-LABEL: func.func @custom
// CHECK:         %[[A:.*]], %[[B:.*]] = "onnx.Custom"(%{{.*}}, %{{.*}}) {domain = "com.acme", op_type = "Split2", version = 3 : i64, attrs = {axis = 1 : i64, names = ["a", "b"], scale = 5.000000e-01 : f32}} : (tensor<2x4xf32>, tensor<i64>) -> (tensor<2x2xf32>, tensor<*xf32>)
// CHECK:         func.return %[[A]], %[[B]]
module attributes {onnx.opset_import = {"" = 17 : i64, "com.acme" = 3 : i64}} {
  func.func @custom(%x: tensor<2x4xf32>, %k: tensor<i64>) -> (tensor<2x2xf32>, tensor<*xf32>) {
    %a, %b = "onnx.Custom"(%x, %k) {domain = "com.acme", op_type = "Split2", version = 3 : i64, attrs = {axis = 1 : i64, names = ["a", "b"], scale = 5.000000e-01 : f32}} : (tensor<2x4xf32>, tensor<i64>) -> (tensor<2x2xf32>, tensor<*xf32>)
    func.return %a, %b : tensor<2x2xf32>, tensor<*xf32>
  }
}
