// Both If branches define `v` and `t` with different shapes. ONNX shape inference with data
// propagation keys what it propagates by value name for the whole model, so the importer gives
// each subgraph's values names of their own during inference: each branch keeps its own types,
// and onnx-to-core lowers both.
// RUN: mlconv-translate --import-onnx %S/Inputs/if-same-names.onnxtxt 2>/dev/null | filecheck %s
// RUN: mlconv-translate --import-onnx %S/Inputs/if-same-names.onnxtxt 2>/dev/null | mlconv-opt -p onnx-to-core | filecheck %s --check-prefix=CORE

// CHECK-LABEL: func.func @main
// CHECK:         "onnx.If"
// CHECK:           %[[V:.*]] = "onnx.Shape"(%x4) : (tensor<1x2x3x4xf32>) -> tensor<4xi64>
// CHECK:           "onnx.ConstantOfShape"(%[[V]]) {{.*}} -> tensor<1x2x3x4xf32>
// CHECK:         }, {
// CHECK:           %[[V2:.*]] = "onnx.Shape"(%x2) : (tensor<5x6xf32>) -> tensor<2xi64>
// CHECK:           %[[T2:.*]] = "onnx.ConstantOfShape"(%[[V2]]) {{.*}} -> tensor<5x6xf32>
// CHECK:           "onnx.Mul"(%[[T2]], %x2) : (tensor<5x6xf32>, tensor<5x6xf32>) -> tensor<5x6xf32>
// CHECK:         "onnx.ConstantOfShape"

// CORE-LABEL: func.func @main
// CORE:         "core.If"
// CORE:         "core.Broadcast"{{.*}} -> tensor<5x6xf32>
