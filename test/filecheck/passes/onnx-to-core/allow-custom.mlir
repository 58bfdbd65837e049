// onnx-to-core{allow-custom=true}: every op without a lowering becomes core.Custom (domain "" for
// the default domain, the node's domain for onnx.Custom) with its operands, attributes and result
// types; ops with a lowering lower as usual. The output parses back.
// RUN: mlconv-opt %S/../Inputs/onnx-unsupported.mlir --pass-pipeline='builtin.module(onnx-to-core{allow-custom=true})' | mlconv-opt | filecheck %s --check-prefix=DEFAULT
// RUN: mlconv-opt %s --pass-pipeline='builtin.module(onnx-to-core{allow-custom=true})' --split-input-file | mlconv-opt --split-input-file | filecheck %s

// DEFAULT-LABEL: func.func @main
// DEFAULT:         %[[R:.*]] = "core.Relu"
// DEFAULT:         %[[A:.*]] = "core.Custom"(%{{.*}}) {domain = "", op_type = "Bernoulli", attrs = {}} : (tensor<16xf32>) -> tensor<16xf32>
// DEFAULT:         %[[B:.*]] = "core.Custom"(%{{.*}}) {domain = "", op_type = "Bernoulli", attrs = {}} : (tensor<16xf32>) -> tensor<16xf32>
// DEFAULT:         %[[M:.*]] = "core.Custom"(%{{.*}}) {domain = "", op_type = "RandomUniformLike", attrs = {}} : (tensor<1x64x1xf32>) -> tensor<1x64x1xf32>
// DEFAULT:         func.return %[[A]], %[[B]], %[[M]], %[[R]]

// CHECK-LABEL: func.func @custom_domain
// CHECK:         %[[V:.*]], %[[I:.*]] = "core.Custom"(%{{.*}}) {domain = "com.acme", op_type = "TopRows", attrs = {k = 2 : i64, mode = "max", scale = 5.000000e-01 : f32}} : (tensor<3x8xf32>) -> (tensor<*xf32>, tensor<*xi64>)
// CHECK:         %[[E:.*]] = "core.Exp"(%[[V]]) : (tensor<*xf32>) -> tensor<*xf32>
// CHECK:         func.return %[[E]], %[[I]]
builtin.module attributes {onnx.opset_import = {"" = 17 : i64, "com.acme" = 3 : i64}} {
  func.func @custom_domain(%x: tensor<3x8xf32>) -> (tensor<*xf32>, tensor<*xi64>) {
    %v, %i = "onnx.Custom"(%x) {domain = "com.acme", op_type = "TopRows", version = 3 : i64, attrs = {k = 2 : i64, mode = "max", scale = 5.000000e-01 : f32}} : (tensor<3x8xf32>) -> (tensor<*xf32>, tensor<*xi64>) loc("top")
    %e = "onnx.Exp"(%v) : (tensor<*xf32>) -> tensor<*xf32>
    func.return %e, %i : tensor<*xf32>, tensor<*xi64>
  }
}
