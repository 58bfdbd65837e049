// RUN: mlconv-opt %s --pass-pipeline='builtin.module(onnx-to-tpu)' --split-input-file | filecheck %s
// RUN: mlconv-opt %S/Inputs/onnx-dynamic-batch.mlir --pass-pipeline='builtin.module(onnx-to-tpu{input-shapes=x:2,4})' | filecheck %s --check-prefix=SHAPES
// The full chain of issue 2 on a real model: import, legalize, infer shapes, lower to tpu.
// RUN: mlconv-translate --import-onnx %models/light_squeezenet.onnx | mlconv-opt --pass-pipeline='builtin.module(onnx-to-core,core-infer-shapes,core-to-tpu)' | filecheck %s --check-prefix=SQUEEZENET

// A tiny model: Conv + Relu + MaxPool + Flatten + Gemm + Softmax. Flatten's shape subgraph
// and every `?` are resolved; one tpu.region is left, no onnx or core op.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%[[X:.*]]: tensor<1x3x8x8xf32> {mlconv.name = "x"}) -> (tensor<1x10xf32> {mlconv.name = "y"})
// CHECK-NOT:     onnx.
// CHECK-NOT:     core.
// CHECK:         %[[R:.*]] = "tpu.region"(%[[X]]) ({
// CHECK:           "tpu.conv_general_dilated"({{.*}}) -> tensor<1x4x8x8xf32>
// CHECK:           "tpu.max"
// CHECK:           "tpu.reduce_window_max"({{.*}}) -> tensor<1x4x4x4xf32>
// CHECK:           "tpu.reshape"({{.*}}) -> tensor<1x64xf32>
// CHECK:           "tpu.dot_general"({{.*}}) -> tensor<1x10xf32>
// CHECK:           "tpu.exp"
// CHECK:           tpu.yield %{{.*}} : tensor<1x10xf32>
// CHECK-NEXT:    }) {device = "tpu"} : (tensor<1x3x8x8xf32>) -> tensor<1x10xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<1x10xf32>
// CHECK-NOT:     onnx.
// CHECK-NOT:     core.
builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @main(%x: tensor<1x3x8x8xf32> {mlconv.name = "x"}) -> (tensor<?x?xf32> {mlconv.name = "y"}) {
    %w = "onnx.Constant"() {value = dense<0.5> : tensor<4x3x3x3xf32>} : () -> tensor<4x3x3x3xf32> loc("w")
    %fc = "onnx.Constant"() {value = dense<0.25> : tensor<10x64xf32>} : () -> tensor<10x64xf32> loc("fc")
    %c = "onnx.Conv"(%x, %w) {pads = [1 : i64, 1 : i64, 1 : i64, 1 : i64]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<?x?x?x?xf32> loc("conv")
    %r = "onnx.Relu"(%c) : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32> loc("relu")
    %p = "onnx.MaxPool"(%r) {kernel_shape = [2 : i64, 2 : i64], strides = [2 : i64, 2 : i64]} : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32> loc("pool")
    %f = "onnx.Flatten"(%p) : (tensor<?x?x?x?xf32>) -> tensor<?x?xf32> loc("flatten")
    %g = "onnx.Gemm"(%f, %fc) {transB = 1 : i64} : (tensor<?x?xf32>, tensor<10x64xf32>) -> tensor<?x?xf32> loc("gemm")
    %y = "onnx.Softmax"(%g) : (tensor<?x?xf32>) -> tensor<?x?xf32> loc("softmax")
    func.return %y : tensor<?x?xf32>
  }
}

// input-shapes fixes the dynamic batch before the shapes are inferred.
// SHAPES-LABEL: func.func @main
// SHAPES-SAME:    (%[[X:.*]]: tensor<2x4xf32> {mlconv.name = "x"}) -> (tensor<2x4xf32> {mlconv.name = "y"})
// SHAPES:         "tpu.region"(%[[X]])
// SHAPES:         }) {device = "tpu"} : (tensor<2x4xf32>) -> tensor<2x4xf32>

// SQUEEZENET-LABEL: func.func @main
// SQUEEZENET-SAME:    (%{{.*}}: tensor<1x3x224x224xf32> {mlconv.name = "data_0"}) -> (tensor<1x1000x1x1xf32> {mlconv.name = "softmaxout_1"})
// SQUEEZENET-NOT:     onnx.
// SQUEEZENET:         "tpu.region"
// SQUEEZENET:         "tpu.conv_general_dilated"
// SQUEEZENET:         "tpu.reduce_window_max"
// SQUEEZENET:         "tpu.concatenate"
// SQUEEZENET:         "tpu.exp"
// SQUEEZENET:         tpu.yield %{{.*}} : tensor<1x1000x1x1xf32>
// SQUEEZENET-NOT:     onnx.
// SQUEEZENET-NOT:     core.
