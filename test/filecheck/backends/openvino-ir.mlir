// RUN: mlconv-translate --export-openvino %s -o %t.xml && filecheck %s --input-file=%t.xml
// RUN: mlconv-translate --import-openvino %t.xml | filecheck %s --check-prefix=READ
// RUN: mlconv-translate --import-openvino %t.xml | mlconv-opt | filecheck %s --check-prefix=READ

// Parameters first (ids from 0), ops in order, Results last; -1 for the dynamic batch;
// each op at the lowest opset it needs (core-op-versions: Gelu-2 without approximation_mode,
// Softmax-1); the two identical weights share one .bin offset.

// CHECK:       <net name="{{.*}}" version="11">
// CHECK:         <layer id="0" name="x" type="Parameter" version="opset1">
// CHECK-NEXT:      <data shape="?,3,4,4" element_type="f32" />
// CHECK:             <port id="0" precision="FP32" names="x">
// CHECK-NEXT:          <dim>-1</dim>
// CHECK:         <layer id="1" name="w1" type="Const" version="opset1">
// CHECK-NEXT:      <data element_type="f32" shape="2, 3, 1, 1" offset="0" size="24" />
// CHECK:         <layer id="2" name="conv" type="Convolution" version="opset1">
// CHECK-NEXT:      <data strides="1, 1" pads_begin="0, 0" pads_end="0, 0" auto_pad="explicit" dilations="1, 1" />
// CHECK:           <input>
// CHECK-NEXT:        <port id="0" precision="FP32">
// CHECK:             <port id="1" precision="FP32">
// CHECK:           <output>
// CHECK-NEXT:        <port id="2" precision="FP32">
// CHECK:         <layer id="3" name="w2" type="Const" version="opset1">
// CHECK-NEXT:      <data element_type="f32" shape="2, 3, 1, 1" offset="0" size="24" />
// CHECK:         <layer id="5" name="add" type="Add" version="opset1">
// CHECK-NEXT:      <data auto_broadcast="numpy" />
// CHECK:         <layer id="6" name="relu" type="ReLU" version="opset1">
// CHECK-NEXT:      <input>
// CHECK:         <layer id="7" name="gelu" type="Gelu" version="opset2">
// CHECK-NEXT:      <input>
// CHECK:         <layer id="8" name="sm" type="SoftMax" version="opset1">
// CHECK-NEXT:      <data axis="1" />
// CHECK:         <layer id="9" name="y/sink_port_0" type="Result" version="opset1" output_names="y">
// CHECK:       <edges>
// CHECK-NEXT:    <edge from-layer="0" from-port="0" to-layer="2" to-port="0" />
// CHECK-NEXT:    <edge from-layer="1" from-port="0" to-layer="2" to-port="1" />
// CHECK:         <edge from-layer="8" from-port="1" to-layer="9" to-port="0" />
// CHECK:       <rt_info>

// READ-LABEL: func.func @main
// READ-SAME:    (%{{.*}}: tensor<?x3x4x4xf32> {mlconv.name = "x"}
// READ:         core.Convolution
// READ:         core.Convolution
// READ:         core.Add
// READ:         core.Relu
// READ:         core.Gelu
// READ-SAME:      opset = 2
// READ:         core.Softmax
// READ:         func.return

func.func @main(%x: tensor<?x3x4x4xf32> {mlconv.name = "x"}) -> (tensor<?x2x4x4xf32> {mlconv.name = "y"}) {
  %w1 = core.Constant {value = dense<[[[[1.0]], [[2.0]], [[3.0]]], [[[4.0]], [[5.0]], [[6.0]]]]> : tensor<2x3x1x1xf32>} : tensor<2x3x1x1xf32> loc("w1")
  %c = "core.Convolution"(%x, %w1) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>} : (tensor<?x3x4x4xf32>, tensor<2x3x1x1xf32>) -> tensor<?x2x4x4xf32> loc("conv")
  %w2 = core.Constant {value = dense<[[[[1.0]], [[2.0]], [[3.0]]], [[[4.0]], [[5.0]], [[6.0]]]]> : tensor<2x3x1x1xf32>} : tensor<2x3x1x1xf32> loc("w2")
  %c2 = "core.Convolution"(%x, %w2) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>} : (tensor<?x3x4x4xf32>, tensor<2x3x1x1xf32>) -> tensor<?x2x4x4xf32> loc("conv2")
  %sum = "core.Add"(%c, %c2) : (tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>) -> tensor<?x2x4x4xf32> loc("add")
  %a = "core.Relu"(%sum) : (tensor<?x2x4x4xf32>) -> tensor<?x2x4x4xf32> loc("relu")
  %g = "core.Gelu"(%a) : (tensor<?x2x4x4xf32>) -> tensor<?x2x4x4xf32> loc("gelu")
  %s = "core.Softmax"(%g) {axis = 1 : i64} : (tensor<?x2x4x4xf32>) -> tensor<?x2x4x4xf32> loc("sm")
  func.return %s : tensor<?x2x4x4xf32>
}
