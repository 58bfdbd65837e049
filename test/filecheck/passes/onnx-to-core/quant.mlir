// RUN: mlconv-opt %s --pass-pipeline='builtin.module(onnx-to-core)' --split-input-file | filecheck %s

// QuantizeLinear-21, blocked (two scales per row) with output_dtype int16 and no zero point.
// CHECK-LABEL: func.func @quantize21_blocked_int16
// CHECK:         %[[Y:.*]] = "core.QuantizeLinear"(%x, %s) {destination_type = i16, axis = 1 : i64, block_size = 2 : i64, saturate = true} : (tensor<3x4xf32>, tensor<3x2xf32>) -> tensor<3x4xi16>
// CHECK:         func.return %[[Y]]
builtin.module attributes {onnx.opset_import = {"" = 21 : i64}} {
  func.func @quantize21_blocked_int16(%x: tensor<3x4xf32>, %s: tensor<3x2xf32>) -> tensor<3x4xi16> {
    %y = "onnx.QuantizeLinear"(%x, %s) {axis = 1 : i64, block_size = 2 : i64, output_dtype = 5 : i64} : (tensor<3x4xf32>, tensor<3x2xf32>) -> tensor<3x4xi16>
    func.return %y : tensor<3x4xi16>
  }
}

// -----

// QuantizeLinear-19 to float8 with saturate=0: out-of-range values become NaN (e4m3fn has no inf).
// CHECK-LABEL: func.func @quantize19_float8_no_saturate
// CHECK:         %[[Y:.*]] = "core.QuantizeLinear"(%x, %s, %zp) {destination_type = f8E4M3FN, axis = 1 : i64, block_size = 0 : i64, saturate = false}
// CHECK:         func.return %[[Y]]
builtin.module attributes {onnx.opset_import = {"" = 19 : i64}} {
  func.func @quantize19_float8_no_saturate(%x: tensor<5xf32>, %s: tensor<f32>, %zp: tensor<f8E4M3FN>) -> tensor<5xf8E4M3FN> {
    %y = "onnx.QuantizeLinear"(%x, %s, %zp) {saturate = 0 : i64} : (tensor<5xf32>, tensor<f32>, tensor<f8E4M3FN>) -> tensor<5xf8E4M3FN>
    func.return %y : tensor<5xf8E4M3FN>
  }
}

// -----

// DequantizeLinear-13 per axis 1; the result type is the scale's.
// CHECK-LABEL: func.func @dequantize13_axis
// CHECK:         %[[Y:.*]] = "core.DequantizeLinear"(%x, %s, %zp) {axis = 1 : i64, block_size = 0 : i64, destination_type = f32} : (tensor<1x3x2xui8>, tensor<3xf32>, tensor<3xui8>) -> tensor<1x3x2xf32>
// CHECK:         func.return %[[Y]]
builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @dequantize13_axis(%x: tensor<1x3x2xui8>, %s: tensor<3xf32>, %zp: tensor<3xui8>) -> tensor<1x3x2xf32> {
    %y = "onnx.DequantizeLinear"(%x, %s, %zp) : (tensor<1x3x2xui8>, tensor<3xf32>, tensor<3xui8>) -> tensor<1x3x2xf32>
    func.return %y : tensor<1x3x2xf32>
  }
}

// -----

// DynamicQuantizeLinear: scale and zero point from the range of x extended to 0, then QuantizeLinear.
// CHECK-LABEL: func.func @dynamic_quantize11
// CHECK:         %[[FLAT:.*]] = "core.Reshape"(%x, %{{.*}}) {special_zero = false}
// CHECK:         %[[MAX:.*]] = "core.ReduceMax"(%[[FLAT]], %{{.*}})
// CHECK:         %[[HIGH:.*]] = "core.Maximum"(%[[MAX]], %[[ZERO:.*]]) : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK:         %[[MIN:.*]] = "core.ReduceMin"(%[[FLAT]], %{{.*}})
// CHECK:         %[[LOW:.*]] = "core.Minimum"(%[[MIN]], %[[ZERO]])
// CHECK:         %[[SPAN:.*]] = "core.Subtract"(%[[HIGH]], %[[LOW]])
// CHECK:         %[[EMPTY:.*]] = "core.Equal"(%[[SPAN]], %[[ZERO]])
// CHECK:         %[[RANGE:.*]] = "core.Select"(%[[EMPTY]], %{{.*}}, %[[SPAN]])
// CHECK:         %[[SCALE:.*]] = "core.Divide"(%[[RANGE]], %{{.*}})
// CHECK:         %[[RATIO:.*]] = "core.Divide"(%[[LOW]], %[[SCALE]])
// CHECK:         %[[SHIFT:.*]] = "core.Subtract"(%[[ZERO]], %[[RATIO]])
// CHECK:         %[[CLAMPED:.*]] = "core.Clamp"(%[[SHIFT]]) {min = 0.000000e+00 : f64, max = 2.550000e+02 : f64}
// CHECK:         %[[ROUNDED:.*]] = "core.Round"(%[[CLAMPED]]) {mode = "half_to_even"}
// CHECK:         %[[ZP:.*]] = "core.Convert"(%[[ROUNDED]]) {destination_type = ui8} : (tensor<f32>) -> tensor<ui8>
// CHECK:         %[[Y:.*]] = "core.QuantizeLinear"(%x, %[[SCALE]], %[[ZP]]) {destination_type = ui8} : (tensor<6xf32>, tensor<f32>, tensor<ui8>) -> tensor<6xui8>
// CHECK:         func.return %[[Y]], %[[SCALE]], %[[ZP]]
builtin.module attributes {onnx.opset_import = {"" = 11 : i64}} {
  func.func @dynamic_quantize11(%x: tensor<6xf32>) -> (tensor<6xui8>, tensor<f32>, tensor<ui8>) {
    %y, %s, %zp = "onnx.DynamicQuantizeLinear"(%x) : (tensor<6xf32>) -> (tensor<6xui8>, tensor<f32>, tensor<ui8>)
    func.return %y, %s, %zp : tensor<6xui8>, tensor<f32>, tensor<ui8>
  }
}

// -----

// MatMulInteger: an int32 MatMul of the centred operands; A's zero point is per row.
// CHECK-LABEL: func.func @matmul_integer10
// CHECK:         %[[A:.*]] = "core.Convert"(%a) {destination_type = i32}
// CHECK:         %[[AZP:.*]] = "core.Convert"(%azp) {destination_type = i32}
// CHECK:         %[[ROWS:.*]] = "core.Unsqueeze"(%[[AZP]], %{{.*}}) : (tensor<4xi32>, tensor<1xi64>) -> tensor<4x1xi32>
// CHECK:         %[[CA:.*]] = "core.Subtract"(%[[A]], %[[ROWS]]) : (tensor<4x3xi32>, tensor<4x1xi32>) -> tensor<4x3xi32>
// CHECK:         %[[B:.*]] = "core.Convert"(%b) {destination_type = i32}
// CHECK:         %[[Y:.*]] = "core.MatMul"(%[[CA]], %[[B]]) : (tensor<4x3xi32>, tensor<3x2xi32>) -> tensor<4x2xi32>
// CHECK:         func.return %[[Y]]
builtin.module attributes {onnx.opset_import = {"" = 10 : i64}} {
  func.func @matmul_integer10(%a: tensor<4x3xui8>, %b: tensor<3x2xui8>, %azp: tensor<4xui8>) -> tensor<4x2xi32> {
    %y = "onnx.MatMulInteger"(%a, %b, %azp) {operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<4x3xui8>, tensor<3x2xui8>, tensor<4xui8>) -> tensor<4x2xi32>
    func.return %y : tensor<4x2xi32>
  }
}

// -----

// ConvInteger: an int32 Convolution; W's zero point is per output channel.
// CHECK-LABEL: func.func @conv_integer10_pads
// CHECK:         %[[X:.*]] = "core.Convert"(%x) {destination_type = i32}
// CHECK:         %[[XZP:.*]] = "core.Convert"(%xzp) {destination_type = i32}
// CHECK:         %[[CX:.*]] = "core.Subtract"(%[[X]], %[[XZP]])
// CHECK:         %[[W:.*]] = "core.Convert"(%w) {destination_type = i32}
// CHECK:         %[[WZP:.*]] = "core.Convert"(%wzp) {destination_type = i32}
// CHECK:         %[[CHANNELS:.*]] = "core.Unsqueeze"(%[[WZP]], %{{.*}}) : (tensor<2xi32>, tensor<3xi64>) -> tensor<2x1x1x1xi32>
// CHECK:         %[[CW:.*]] = "core.Subtract"(%[[W]], %[[CHANNELS]])
// CHECK:         %[[Y:.*]] = "core.Convolution"(%[[CX]], %[[CW]]) {strides = array<i64: 1, 1>, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, auto_pad = "explicit", dilations = array<i64: 1, 1>} : (tensor<1x1x3x3xi32>, tensor<2x1x2x2xi32>) -> tensor<1x2x4x4xi32>
// CHECK:         func.return %[[Y]]
builtin.module attributes {onnx.opset_import = {"" = 10 : i64}} {
  func.func @conv_integer10_pads(%x: tensor<1x1x3x3xui8>, %w: tensor<2x1x2x2xui8>, %xzp: tensor<ui8>, %wzp: tensor<2xui8>) -> tensor<1x2x4x4xi32> {
    %y = "onnx.ConvInteger"(%x, %w, %xzp, %wzp) {pads = [1 : i64, 1 : i64, 1 : i64, 1 : i64], operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (tensor<1x1x3x3xui8>, tensor<2x1x2x2xui8>, tensor<ui8>, tensor<2xui8>) -> tensor<1x2x4x4xi32>
    func.return %y : tensor<1x2x4x4xi32>
  }
}

// -----

// QLinearMatMul-21 (f16 scales): int32 accumulation, the multiplier in f16, the product in f64,
// round half to even, + zero point, saturate to int8.
// CHECK-LABEL: func.func @qlinear_matmul21
// CHECK:         %[[ACC:.*]] = "core.MatMul"(%{{.*}}, %{{.*}}) : (tensor<2x4xi32>, tensor<4x3xi32>) -> tensor<2x3xi32>
// CHECK:         %[[AB:.*]] = "core.Multiply"(%as, %bs) : (tensor<1xf16>, tensor<1xf16>) -> tensor<1xf16>
// CHECK:         %[[M:.*]] = "core.Divide"(%[[AB]], %ys) : (tensor<1xf16>, tensor<1xf16>) -> tensor<1xf16>
// CHECK:         %[[ACC64:.*]] = "core.Convert"(%[[ACC]]) {destination_type = f64}
// CHECK:         %[[M64:.*]] = "core.Convert"(%[[M]]) {destination_type = f64}
// CHECK:         %[[P:.*]] = "core.Multiply"(%[[ACC64]], %[[M64]])
// CHECK:         %[[R:.*]] = "core.Round"(%[[P]]) {mode = "half_to_even"}
// CHECK:         %[[ZP:.*]] = "core.Convert"(%yzp) {destination_type = f64}
// CHECK:         %[[S:.*]] = "core.Add"(%[[R]], %[[ZP]])
// CHECK:         %[[C:.*]] = "core.Clamp"(%[[S]]) {min = -1.280000e+02 : f64, max = 1.270000e+02 : f64}
// CHECK:         %[[Y:.*]] = "core.Convert"(%[[C]]) {destination_type = i8} : (tensor<2x3xf64>) -> tensor<2x3xi8>
// CHECK:         func.return %[[Y]]
builtin.module attributes {onnx.opset_import = {"" = 21 : i64}} {
  func.func @qlinear_matmul21(%a: tensor<2x4xi8>, %as: tensor<1xf16>, %azp: tensor<1xi8>, %b: tensor<4x3xi8>, %bs: tensor<1xf16>, %bzp: tensor<1xi8>, %ys: tensor<1xf16>, %yzp: tensor<1xi8>) -> tensor<2x3xi8> {
    %y = "onnx.QLinearMatMul"(%a, %as, %azp, %b, %bs, %bzp, %ys, %yzp) : (tensor<2x4xi8>, tensor<1xf16>, tensor<1xi8>, tensor<4x3xi8>, tensor<1xf16>, tensor<1xi8>, tensor<1xf16>, tensor<1xi8>) -> tensor<2x3xi8>
    func.return %y : tensor<2x3xi8>
  }
}

// -----

// QLinearConv with a bias and per-channel weight scales.
// CHECK-LABEL: func.func @qlinear_conv10_bias
// CHECK:         %[[ACC:.*]] = "core.Convolution"(%{{.*}}, %{{.*}})
// CHECK:         %[[BIAS:.*]] = "core.Unsqueeze"(%{{.*}}, %{{.*}}) : (tensor<2xi32>, tensor<2xi64>) -> tensor<2x1x1xi32>
// CHECK:         %[[SUM:.*]] = "core.Add"(%[[ACC]], %[[BIAS]]) : (tensor<1x2x4x4xi32>, tensor<2x1x1xi32>) -> tensor<1x2x4x4xi32>
// CHECK:         %[[WS:.*]] = "core.Unsqueeze"(%ws, %{{.*}}) : (tensor<2xf32>, tensor<2xi64>) -> tensor<2x1x1xf32>
// CHECK:         %[[XW:.*]] = "core.Multiply"(%xs, %[[WS]])
// CHECK:         %[[M:.*]] = "core.Divide"(%[[XW]], %ys)
// CHECK:         %[[SUM64:.*]] = "core.Convert"(%[[SUM]]) {destination_type = f64}
// CHECK:         %[[C:.*]] = "core.Clamp"(%{{.*}}) {min = 0.000000e+00 : f64, max = 2.550000e+02 : f64}
// CHECK:         %[[Y:.*]] = "core.Convert"(%[[C]]) {destination_type = ui8} : (tensor<1x2x4x4xf64>) -> tensor<1x2x4x4xui8>
// CHECK:         func.return %[[Y]]
builtin.module attributes {onnx.opset_import = {"" = 10 : i64}} {
  func.func @qlinear_conv10_bias(%x: tensor<1x1x4x4xui8>, %xs: tensor<f32>, %xzp: tensor<ui8>, %w: tensor<2x1x1x1xui8>, %ws: tensor<2xf32>, %wzp: tensor<2xui8>, %ys: tensor<f32>, %yzp: tensor<ui8>, %bias: tensor<2xi32>) -> tensor<1x2x4x4xui8> {
    %y = "onnx.QLinearConv"(%x, %xs, %xzp, %w, %ws, %wzp, %ys, %yzp, %bias) : (tensor<1x1x4x4xui8>, tensor<f32>, tensor<ui8>, tensor<2x1x1x1xui8>, tensor<2xf32>, tensor<2xui8>, tensor<f32>, tensor<ui8>, tensor<2xi32>) -> tensor<1x2x4x4xui8>
    func.return %y : tensor<1x2x4x4xui8>
  }
}

// -----

// BitCast-26: the bits reinterpreted.
// CHECK-LABEL: func.func @bitcast26
// CHECK:         %[[Y:.*]] = "core.BitCast"(%x) {destination_type = i32} : (tensor<2x3xf32>) -> tensor<2x3xi32>
// CHECK:         func.return %[[Y]]
builtin.module attributes {onnx.opset_import = {"" = 26 : i64}} {
  func.func @bitcast26(%x: tensor<2x3xf32>) -> tensor<2x3xi32> {
    %y = "onnx.BitCast"(%x) {to = 6 : i64} : (tensor<2x3xf32>) -> tensor<2x3xi32>
    func.return %y : tensor<2x3xi32>
  }
}

// -----

// CumProd-26 mirrors CumSum's exclusive/reverse.
// CHECK-LABEL: func.func @cumprod26_reverse_exclusive
// CHECK:         %[[AXIS:.*]] = core.Constant {value = dense<-1> : tensor<i32>}
// CHECK:         %[[Y:.*]] = "core.CumProd"(%x, %[[AXIS]]) {exclusive = true, reverse = true} : (tensor<5xf64>, tensor<i32>) -> tensor<5xf64>
// CHECK:         func.return %[[Y]]
builtin.module attributes {onnx.opset_import = {"" = 26 : i64}} {
  func.func @cumprod26_reverse_exclusive(%x: tensor<5xf64>) -> tensor<5xf64> {
    %axis = "onnx.Constant"() {value = dense<-1> : tensor<i32>} : () -> tensor<i32>
    %y = "onnx.CumProd"(%x, %axis) {exclusive = 1 : i64, reverse = 1 : i64} : (tensor<5xf64>, tensor<i32>) -> tensor<5xf64>
    func.return %y : tensor<5xf64>
  }
}
