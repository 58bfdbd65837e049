// RUN: mlconv-opt %s --pass-pipeline='builtin.module(core-op-versions)' --split-input-file | filecheck %s
// RUN: mlconv-opt %s --pass-pipeline='builtin.module(core-op-versions{target-opset=12})' --split-input-file | filecheck %s --check-prefix=OPSET12
// RUN: not mlconv-opt %s --pass-pipeline='builtin.module(core-op-versions{target-opset=1})' --split-input-file 2>&1 | filecheck %s --check-prefix=OPSET1

// Each op at the lowest version that has what it uses: an erf Gelu is Gelu-2, a tanh one
// Gelu-7; Softmax on a non-negative axis is Softmax-1, on axis -1 Softmax-8; a Pad without
// negative pads is Pad-1; Swish exists from opset4 only.

// CHECK-LABEL: func.func @versions
// CHECK:         "core.Gelu"(%{{.*}}) {approximation_mode = "ERF", opset = 2 : i64}
// CHECK:         "core.Gelu"(%{{.*}}) {approximation_mode = "TANH", opset = 7 : i64}
// CHECK:         "core.Softmax"(%{{.*}}) {axis = 1 : i64, opset = 1 : i64}
// CHECK:         "core.Softmax"(%{{.*}}) {axis = -1 : i64, opset = 8 : i64}
// CHECK:         "core.Pad"(%{{.*}}) {pad_mode = "constant", opset = 1 : i64}
// CHECK:         "core.Swish"(%{{.*}}) {opset = 4 : i64}

// With target-opset=12 every op fits.
// OPSET12-LABEL: func.func @versions
// OPSET12:         "core.Softmax"(%{{.*}}) {axis = -1 : i64, opset = 8 : i64}

// With target-opset=1 one error lists every newer op, with its location.
// OPSET1: error: 4 op(s) are newer than opset1: core.Gelu needs opset2 at loc("gelu_erf"); core.Gelu needs opset7 at loc("gelu_tanh"); core.Softmax needs opset8 at loc("softmax_last"); core.Swish needs opset4 at loc("swish")
func.func @versions(%x: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %a = "core.Gelu"(%x) {approximation_mode = "ERF"} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("gelu_erf")
  %b = "core.Gelu"(%a) {approximation_mode = "TANH"} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("gelu_tanh")
  %c = "core.Softmax"(%b) {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("softmax_1")
  %d = "core.Softmax"(%c) {axis = -1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("softmax_last")
  %begin = core.Constant {value = dense<[1, 0]> : tensor<2xi64>} : tensor<2xi64> loc("pads_begin")
  %end = core.Constant {value = dense<[1, 0]> : tensor<2xi64>} : tensor<2xi64> loc("pads_end")
  %p = "core.Pad"(%d, %begin, %end) {pad_mode = "constant"} : (tensor<2x3xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<4x3xf32> loc("pad")
  %s = "core.Swish"(%p) : (tensor<4x3xf32>) -> tensor<4x3xf32> loc("swish")
  func.return %s : tensor<4x3xf32>
}

// -----

// A Pad that crops (a negative pad) needs Pad-12; ShapeOf with an i32 result ShapeOf-3.

// CHECK-LABEL: func.func @newer_features
// CHECK:         "core.Pad"(%{{.*}}) {pad_mode = "constant", opset = 12 : i64}
// CHECK:         "core.ShapeOf"(%{{.*}}) {output_type = i32, opset = 3 : i64}
// OPSET1: error: 2 op(s) are newer than opset1: core.Pad needs opset12 at loc("crop"); core.ShapeOf needs opset3 at loc("shape")
func.func @newer_features(%x: tensor<4x3xf32>) -> tensor<2xi32> {
  %begin = core.Constant {value = dense<[-1, 0]> : tensor<2xi64>} : tensor<2xi64>
  %end = core.Constant {value = dense<[0, 0]> : tensor<2xi64>} : tensor<2xi64>
  %p = "core.Pad"(%x, %begin, %end) {pad_mode = "constant"} : (tensor<4x3xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<3x3xf32> loc("crop")
  %s = "core.ShapeOf"(%p) {output_type = i32} : (tensor<3x3xf32>) -> tensor<2xi32> loc("shape")
  func.return %s : tensor<2xi32>
}
