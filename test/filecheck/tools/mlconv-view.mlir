// RUN: mlconv-view %s --level framework --graph-json - | filecheck %s
// RUN: mlconv-view %s --level tpu --graph-json - | filecheck %s --check-prefix=TPU
// RUN: not mlconv-view %s --level tpu --input-shapes y:1 --graph-json - 2>&1 | filecheck %s --check-prefix=ERR

// The Model Explorer graph of a .mlir: one node per op, namespaced by its location (the
// source node), with attributes, result shapes and edges from SSA uses.

// CHECK:       "id": "main",
// CHECK:       "id": "input0",
// CHECK-NEXT:  "label": "Input",
// CHECK:       "value": "x"
// CHECK:       "id": "1",
// CHECK-NEXT:  "label": "Constant",
// CHECK-NEXT:  "namespace": "w",
// CHECK:       "value": "float32[2,1,1,1] [1, 1]"
// CHECK:       "id": "2",
// CHECK-NEXT:  "label": "Convolution",
// CHECK-NEXT:  "namespace": "block1/conv",
// CHECK:       "key": "op",
// CHECK-NEXT:  "value": "core.Convolution"
// CHECK:       "key": "location",
// CHECK-NEXT:  "value": "block1/conv"
// CHECK:       "key": "strides",
// CHECK-NEXT:  "value": "[1, 1]"
// CHECK:       "incomingEdges": [
// CHECK-NEXT:   {
// CHECK-NEXT:    "sourceNodeId": "input0",
// CHECK:         "sourceNodeId": "1",
// CHECK:       "key": "tensor_shape",
// CHECK-NEXT:  "value": "float32[1,2,4,4]"
// CHECK:       "label": "Relu",
// CHECK-NEXT:  "namespace": "block1/relu",
// CHECK:       "sourceNodeId": "2",
// CHECK:       "label": "Output",

// At the tpu level the region's body is shown in line, each node placed on the tpu.
// TPU:         "label": "conv_general_dilated",
// TPU-NEXT:    "namespace": "block1/conv",
// TPU:         "key": "placement",
// TPU-NEXT:    "value": "tpu"
// TPU-NOT:     "tpu.region"

// ERR: error: input-shapes names unknown input(s) y; inputs: x
func.func @main(%x: tensor<1x1x4x4xf32> {mlconv.name = "x"}) -> tensor<1x2x4x4xf32> {
  %w = core.Constant {value = dense<1.0> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32> loc("w")
  %c = "core.Convolution"(%x, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32> loc("block1/conv")
  %y = "core.Relu"(%c) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> loc("block1/relu")
  func.return %y : tensor<1x2x4x4xf32>
}
