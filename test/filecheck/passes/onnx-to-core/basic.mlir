// RUN: mlconv-opt %s --pass-pipeline='builtin.module(onnx-to-core)' --split-input-file | filecheck %s
// RUN: not mlconv-opt %S/../Inputs/onnx-unsupported.mlir -p onnx-to-core 2>&1 | filecheck %s --check-prefix=NOLOWERING

// CHECK-LABEL: func.func @conv_bias_relu
// CHECK-SAME:    (%[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK-NOT:     onnx.
// CHECK:         %[[CONV:.*]] = "core.Convolution"(%[[X]], %[[W]]) {strides = array<i64: 1, 1>, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, {{.*}}dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
// CHECK:         %[[BIAS:.*]] = "core.Unsqueeze"(%[[B]], %{{.*}}) : (tensor<4xf32>, tensor<2xi64>) -> tensor<4x1x1xf32>
// CHECK:         %[[SUM:.*]] = "core.Add"(%[[CONV]], %[[BIAS]]) : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
// CHECK:         %[[Y:.*]] = "core.Relu"(%[[SUM]]) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
// CHECK:         func.return %[[Y]] : tensor<1x4x8x8xf32>
builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @conv_bias_relu(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x8x8xf32> {
    %c = "onnx.Conv"(%x, %w, %b) {pads = [1 : i64, 1 : i64, 1 : i64, 1 : i64], kernel_shape = [3 : i64, 3 : i64]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    %y = "onnx.Relu"(%c) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    func.return %y : tensor<1x4x8x8xf32>
  }
}

// -----

// Gemm: transB becomes MatMul's transpose_b; alpha and beta scale A*B and C.
// CHECK-LABEL: func.func @gemm
// CHECK-SAME:    (%[[A:.*]]: tensor<2x16xf32>, %[[B:.*]]: tensor<10x16xf32>, %[[C:.*]]: tensor<10xf32>)
// CHECK-NOT:     onnx.
// CHECK:         %[[M:.*]] = "core.MatMul"(%[[A]], %[[B]]) {{{.*}}transpose_b = true{{.*}}} : (tensor<2x16xf32>, tensor<10x16xf32>) -> tensor<2x10xf32>
// CHECK:         "core.Multiply"
// CHECK:         "core.Add"
// CHECK:         func.return %{{.*}} : tensor<2x10xf32>
builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @gemm(%a: tensor<2x16xf32>, %b: tensor<10x16xf32>, %c: tensor<10xf32>) -> tensor<2x10xf32> {
    %y = "onnx.Gemm"(%a, %b, %c) {alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32, transB = 1 : i64} : (tensor<2x16xf32>, tensor<10x16xf32>, tensor<10xf32>) -> tensor<2x10xf32>
    func.return %y : tensor<2x10xf32>
  }
}

// -----

// Softmax-1 (opsets 1-12) normalizes over the input coerced to 2-D at `axis` (default 1): a
// Reshape around a Softmax on the last axis of the 2-D view.
// CHECK-LABEL: func.func @softmax1
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NOT:     onnx.
// CHECK:         %[[FLAT:.*]] = "core.Reshape"(%[[X]], %{{.*}}) {{.*}}-> tensor<2x12xf32>
// CHECK:         %[[S:.*]] = "core.Softmax"(%[[FLAT]]) {axis = -1 : i64} : (tensor<2x12xf32>) -> tensor<2x12xf32>
// CHECK:         %[[Y:.*]] = "core.Reshape"(%[[S]], %{{.*}}) {{.*}}-> tensor<2x3x4xf32>
// CHECK:         func.return %[[Y]] : tensor<2x3x4xf32>
builtin.module attributes {onnx.opset_import = {"" = 11 : i64}} {
  func.func @softmax1(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
    %y = "onnx.Softmax"(%x) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    func.return %y : tensor<2x3x4xf32>
  }
}

// -----

// Softmax-13 normalizes along `axis` alone (default -1): the same op, no reshapes.
// CHECK-LABEL: func.func @softmax13
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NOT:     core.Reshape
// CHECK:         %[[Y:.*]] = "core.Softmax"(%[[X]]) {axis = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    func.return %[[Y]] : tensor<2x3x4xf32>
builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @softmax13(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
    %y = "onnx.Softmax"(%x) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    func.return %y : tensor<2x3x4xf32>
  }
}

// Every (op, since-version) without a lowering is listed at once, with its node count and
// names, and nothing is rewritten.
// NOLOWERING: onnx-unsupported.mlir: error: no lowering to core for 2 onnx op type(s) at opset 20: onnx.Bernoulli-15 (2 nodes: coin_a, coin_b); onnx.RandomUniformLike-1 (1 node: noise)
// NOLOWERING-NOT: Traceback
