// RUN: mlconv-opt %s --pass-pipeline='builtin.module(onnx-to-core)' --split-input-file | filecheck %s

// Opset 6 broadcasting: B's dims align with A's from `axis`, made explicit with an Unsqueeze.
// CHECK-LABEL: func.func @add6_legacy_broadcast
// CHECK:         %[[AXES:.*]] = core.Constant {value = dense<1> : tensor<1xi64>}
// CHECK:         %[[B:.*]] = "core.Unsqueeze"(%b, %[[AXES]]) : (tensor<3xf32>, tensor<1xi64>) -> tensor<3x1xf32>
// CHECK:         %[[SUM:.*]] = "core.Add"(%a, %[[B]]) : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK:         func.return %[[SUM]]
builtin.module attributes {onnx.opset_import = {"" = 6 : i64}} {
  func.func @add6_legacy_broadcast(%a: tensor<2x3x4xf32>, %b: tensor<3xf32>) -> tensor<2x3x4xf32> {
    %c = "onnx.Add"(%a, %b) {axis = 1 : i64, broadcast = 1 : i64} : (tensor<2x3x4xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
    func.return %c : tensor<2x3x4xf32>
  }
}

// -----

// Clip-6: bounds are attributes, an absent one is the float range.
// CHECK-LABEL: func.func @clip6_attributes
// CHECK:         %[[Y:.*]] = "core.Clamp"(%x) {min = -1.000000e+00 : f64, max = 3.4028234663852886e+38 : f64}
// CHECK:         func.return %[[Y]]
builtin.module attributes {onnx.opset_import = {"" = 6 : i64}} {
  func.func @clip6_attributes(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = "onnx.Clip"(%x) {min = -1.000000e+00 : f32, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<4xf32>) -> tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
}

// -----

// Clip-11: bounds are optional inputs of the data's type (an int8 tensor here).
// CHECK-LABEL: func.func @clip11_inputs
// CHECK:         %[[LOW:.*]] = "core.Maximum"(%x, %lo) : (tensor<4xi8>, tensor<i8>) -> tensor<4xi8>
// CHECK:         %[[HIGH:.*]] = "core.Minimum"(%[[LOW]], %hi) : (tensor<4xi8>, tensor<i8>) -> tensor<4xi8>
// CHECK:         func.return %[[HIGH]]
builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @clip11_inputs(%x: tensor<4xi8>, %lo: tensor<i8>, %hi: tensor<i8>) -> tensor<4xi8> {
    %y = "onnx.Clip"(%x, %lo, %hi) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<4xi8>, tensor<i8>, tensor<i8>) -> tensor<4xi8>
    func.return %y : tensor<4xi8>
  }
}

// -----

// Clip-11 with only a max bound.
// CHECK-LABEL: func.func @clip11_max_only
// CHECK-NOT:     core.Maximum
// CHECK:         %[[Y:.*]] = "core.Minimum"(%x, %hi)
// CHECK:         func.return %[[Y]]
builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @clip11_max_only(%x: tensor<4xf32>, %hi: tensor<f32>) -> tensor<4xf32> {
    %y = "onnx.Clip"(%x, %hi) {operandSegmentSizes = array<i32: 1, 0, 1>} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
}

// -----

// Integer Div truncates toward zero (C), unlike OpenVINO's default floor division.
// CHECK-LABEL: func.func @div_int_truncates
// CHECK:         "core.Divide"(%a, %b) {m_pythondiv = false} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @div_int_truncates(%a: tensor<3xi32>, %b: tensor<3xi32>) -> tensor<3xi32> {
    %c = "onnx.Div"(%a, %b) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    func.return %c : tensor<3xi32>
  }
}

// -----

// Mod picks the core op by `fmod`: FloorMod (divisor's sign) by default, Mod for fmod=1.
// CHECK-LABEL: func.func @mod_fmod
// CHECK:         "core.FloorMod"(%a, %b) : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
// CHECK:         "core.Mod"(%a, %b) : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @mod_fmod(%a: tensor<3xi64>, %b: tensor<3xi64>) -> (tensor<3xi64>, tensor<3xi64>) {
    %c = "onnx.Mod"(%a, %b) : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
    %d = "onnx.Mod"(%a, %b) {fmod = 1 : i64} : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
    func.return %c, %d : tensor<3xi64>, tensor<3xi64>
  }
}

// -----

// BitShift maps on OpenVINO's shift ops by direction.
// CHECK-LABEL: func.func @bitshift_right
// CHECK:         "core.BitwiseRightShift"(%x, %s) : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xui8>
builtin.module attributes {onnx.opset_import = {"" = 11 : i64}} {
  func.func @bitshift_right(%x: tensor<3xui8>, %s: tensor<3xui8>) -> tensor<3xui8> {
    %y = "onnx.BitShift"(%x, %s) {direction = "RIGHT"} : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xui8>
    func.return %y : tensor<3xui8>
  }
}

// -----

// Selu's scalars become constants of the data's type (float16 stays float16).
// CHECK-LABEL: func.func @selu_f16
// CHECK:         %[[ALPHA:.*]] = core.Constant {value = dense<{{.*}}> : tensor<f16>}
// CHECK:         %[[GAMMA:.*]] = core.Constant {value = dense<{{.*}}> : tensor<f16>}
// CHECK:         "core.Selu"(%x, %[[ALPHA]], %[[GAMMA]]) : (tensor<5xf16>, tensor<f16>, tensor<f16>) -> tensor<5xf16>
builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @selu_f16(%x: tensor<5xf16>) -> tensor<5xf16> {
    %y = "onnx.Selu"(%x) : (tensor<5xf16>) -> tensor<5xf16>
    func.return %y : tensor<5xf16>
  }
}

// -----

// CastLike converts to the element type of its second operand.
// CHECK-LABEL: func.func @castlike
// CHECK:         "core.Convert"(%x) {destination_type = bf16} : (tensor<4xf32>) -> tensor<4xbf16>
builtin.module attributes {onnx.opset_import = {"" = 19 : i64}} {
  func.func @castlike(%x: tensor<4xf32>, %like: tensor<1xbf16>) -> tensor<4xbf16> {
    %y = "onnx.CastLike"(%x, %like) : (tensor<4xf32>, tensor<1xbf16>) -> tensor<4xbf16>
    func.return %y : tensor<4xbf16>
  }
}

// -----

// Cast to float8e8m0 reads the float32 exponent bits; round_mode up adds one where any
// fraction bit is set, unless that would pass 2^127 (saturate); inf/NaN give 0xFF.
// CHECK-LABEL: func.func @cast_e8m0_up
// CHECK:         %[[F32:.*]] = "core.Convert"(%x) {destination_type = f32}
// CHECK:         %[[BITS:.*]] = "core.BitCast"(%[[F32]]) {destination_type = i32}
// CHECK:         %[[SHIFTED:.*]] = "core.BitwiseRightShift"(%[[BITS]], %{{.*}})
// CHECK:         %[[EXP:.*]] = "core.BitwiseAnd"(%[[SHIFTED]], %{{.*}})
// CHECK:         %[[SPECIAL:.*]] = "core.Equal"(%[[EXP]], %{{.*}})
// CHECK:         %[[FRACTION:.*]] = "core.BitwiseAnd"(%[[BITS]], %{{.*}})
// CHECK:         %[[INEXACT:.*]] = "core.Greater"(%[[FRACTION]], %{{.*}})
// CHECK:         %[[LARGEST:.*]] = "core.Equal"(%[[EXP]], %{{.*}})
// CHECK:         %[[UP:.*]] = "core.LogicalAnd"(%{{.*}}, %{{.*}})
// CHECK:         %[[STEP:.*]] = "core.Convert"(%[[UP]]) {destination_type = i32}
// CHECK:         %[[ROUNDED:.*]] = "core.Add"(%[[EXP]], %[[STEP]])
// CHECK:         %[[CODE:.*]] = "core.Select"(%[[SPECIAL]], %{{.*}}, %[[ROUNDED]])
// CHECK:         %[[BYTE:.*]] = "core.Convert"(%[[CODE]]) {destination_type = ui8}
// CHECK:         "core.BitCast"(%[[BYTE]]) {destination_type = f8E8M0FNU} : (tensor<4xui8>) -> tensor<4xf8E8M0FNU>
builtin.module attributes {onnx.opset_import = {"" = 24 : i64}} {
  func.func @cast_e8m0_up(%x: tensor<4xf16>) -> tensor<4xf8E8M0FNU> {
    %y = "onnx.Cast"(%x) {to = 24 : i64, round_mode = "up"} : (tensor<4xf16>) -> tensor<4xf8E8M0FNU>
    func.return %y : tensor<4xf8E8M0FNU>
  }
}

// -----

// Back from float8e8m0 is a plain Convert.
// CHECK-LABEL: func.func @cast_from_e8m0
// CHECK:         "core.Convert"(%x) {destination_type = f16} : (tensor<4xf8E8M0FNU>) -> tensor<4xf16>
builtin.module attributes {onnx.opset_import = {"" = 24 : i64}} {
  func.func @cast_from_e8m0(%x: tensor<4xf8E8M0FNU>) -> tensor<4xf16> {
    %y = "onnx.Cast"(%x) {to = 10 : i64} : (tensor<4xf8E8M0FNU>) -> tensor<4xf16>
    func.return %y : tensor<4xf16>
  }
}
