// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tflite-to-core)' --split-input-file | filecheck %s

// TFLite custom operators are keyed by their custom code: without a lowering, every one is listed at
// once; with allow-custom each becomes core.Custom (domain "tflite", its decoded options as
// attrs, bytes options as `raw_options`), the CAST lowers.
// RUN: not mlconv-opt %S/Inputs/tflite-custom.mlir -p tflite-to-core 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: mlconv-opt %S/Inputs/tflite-custom.mlir -p 'tflite-to-core{allow-custom=true}' | mlconv-opt | filecheck %s --check-prefix=CUSTOM
// MISSING: error: no lowering to core for 2 tflite op type(s): tflite.ApproximateEqual (1 node: approx); tflite.Packed (1 node: packed)
// CUSTOM:      %[[E:.*]] = "core.Custom"(%{{.*}}, %{{.*}}) {domain = "tflite", op_type = "ApproximateEqual", attrs = {T = 0 : i64, tolerance = 3.000000e-01 : f64}} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xi1>
// CUSTOM-NEXT: %[[C:.*]] = "core.Convert"(%[[E]]) {destination_type = f32}
// CUSTOM-NEXT: %[[P:.*]] = "core.Custom"(%[[C]]) {domain = "tflite", op_type = "Packed", attrs = {raw_options = dense<[0, 0, 192, 63]> : tensor<4xui8>}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CUSTOM-NEXT: func.return %[[P]]

// A quantized custom op computes as every TFLite lowering does: on dequantized operands, its
// real result requantized.
// RUN: mlconv-opt %S/Inputs/tflite-custom-quantized.mlir -p 'tflite-to-core{allow-custom=true}' | mlconv-opt | filecheck %s --check-prefix=QUANT
// QUANT:       %[[R:.*]] = "core.Multiply"
// QUANT:       %[[C:.*]] = "core.Custom"(%[[R]]) {domain = "tflite", op_type = "Scale", attrs = {factor = 2.000000e+00 : f64}} : (tensor<1x4xf32>) -> tensor<1x4xf32>
// QUANT:       %[[D:.*]] = "core.Divide"(%[[C]], %{{.*}})
// QUANT:       %[[Q:.*]] = "core.Convert"(%{{.*}}) {destination_type = i8}
// QUANT-NEXT:  func.return %[[Q]] : tensor<1x4xi8>

// CHECK-LABEL: func.func @main
// CHECK:         %[[NCHW:.*]] = "core.Transpose"(%{{.*}}, %{{.*}})
// CHECK:         %[[CONV:.*]] = "core.Convolution"(%[[NCHW]], %{{.*}}) {{.*}}auto_pad = "same_upper"
// CHECK:         %[[BIAS:.*]] = "core.Add"(%[[CONV]], %{{.*}})
// CHECK:         %[[RELU6:.*]] = "core.Clamp"(%[[BIAS]]) {{.*}}max = 6.000000e+00
// CHECK:         %[[NHWC:.*]] = "core.Transpose"(%[[RELU6]], %{{.*}})
// CHECK:         func.return %[[NHWC]]
func.func @main(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x3xf32> {
  %w = "tflite.CONST"() {value = dense<0.5> : tensor<3x1x1x2xf32>} : () -> tensor<3x1x1x2xf32>
  %b = "tflite.CONST"() {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : () -> tensor<3xf32>
  %y = "tflite.CONV_2D"(%x, %w, %b) {padding = "SAME", stride_w = 1 : i32, stride_h = 1 : i32, fused_activation_function = "RELU6", version = 1 : i32} : (tensor<1x4x4x2xf32>, tensor<3x1x1x2xf32>, tensor<3xf32>) -> tensor<1x4x4x3xf32>
  func.return %y : tensor<1x4x4x3xf32>
}

// -----

// CHECK-LABEL: func.func @main
// CHECK-SAME:    tensor<1x4xi8>
// CHECK:         %[[F:.*]] = "core.Convert"(%{{.*}}) {destination_type = f32}
// CHECK:         %[[SUB:.*]] = "core.Subtract"(%[[F]], %{{.*}})
// CHECK:         %[[REAL:.*]] = "core.Multiply"(%[[SUB]], %{{.*}})
// CHECK:         %[[SIG:.*]] = "core.Sigmoid"(%[[REAL]])
// CHECK:         %[[Q:.*]] = "core.Divide"(%[[SIG]], %{{.*}})
// CHECK:         %[[R:.*]] = "core.Round"(%[[Q]]) {mode = "half_away_from_zero"}
// CHECK:         %[[ZP:.*]] = "core.Add"(%[[R]], %{{.*}})
// CHECK:         %[[C:.*]] = "core.Clamp"(%[[ZP]]) {min = -1.280000e+02 : f64, max = 1.270000e+02 : f64}
// CHECK:         %[[OUT:.*]] = "core.Convert"(%[[C]]) {destination_type = i8}
// CHECK:         func.return %[[OUT]] : tensor<1x4xi8>
func.func @main(%x: tensor<1x4x!quant.uniform<i8:f32, 0.05:3>>) -> tensor<1x4x!quant.uniform<i8:f32, 0.00390625:-128>> {
  %y = "tflite.LOGISTIC"(%x) {version = 2 : i32} : (tensor<1x4x!quant.uniform<i8:f32, 0.05:3>>) -> tensor<1x4x!quant.uniform<i8:f32, 0.00390625:-128>> loc("sigmoid")
  func.return %y : tensor<1x4x!quant.uniform<i8:f32, 0.00390625:-128>>
}

// -----

// A dilated depthwise convolution as Keras writes it (dynamic batch): the spatial block and
// paddings/crops become full-rank core.SpaceToBatch / core.BatchToSpace operands.
// CHECK-LABEL: func.func @main
// CHECK:         %[[S2B:.*]] = "core.SpaceToBatch"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<?x4x4x3xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x4x4x3xf32>
// CHECK:         %[[B2S:.*]] = "core.BatchToSpace"(%[[S2B]], %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<?x4x4x3xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) -> tensor<?x6x6x3xf32>
// CHECK:         func.return %[[B2S]]
func.func @main(%x: tensor<?x4x4x3xf32>) -> tensor<?x6x6x3xf32> {
  %block = "tflite.CONST"() {value = dense<2> : tensor<2xi32>} : () -> tensor<2xi32>
  %pads = "tflite.CONST"() {value = dense<[[2, 2], [2, 2]]> : tensor<2x2xi32>} : () -> tensor<2x2xi32>
  %crops = "tflite.CONST"() {value = dense<[[1, 1], [1, 1]]> : tensor<2x2xi32>} : () -> tensor<2x2xi32>
  %s = "tflite.SPACE_TO_BATCH_ND"(%x, %block, %pads) {version = 1 : i32} : (tensor<?x4x4x3xf32>, tensor<2xi32>, tensor<2x2xi32>) -> tensor<?x4x4x3xf32>
  %y = "tflite.BATCH_TO_SPACE_ND"(%s, %block, %crops) {version = 1 : i32} : (tensor<?x4x4x3xf32>, tensor<2xi32>, tensor<2x2xi32>) -> tensor<?x6x6x3xf32>
  func.return %y : tensor<?x6x6x3xf32>
}

// -----

// A dynamic batch stays `?`: Keras's Flatten as SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE
// reshapes to a computed shape, whose value is evaluated with probe sizes for the batch, so
// the result is `?x32` (the file says `?x?`); PAD keeps the batch dynamic and its other dims.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    (%{{.*}}: tensor<?x2x2x8xf32>) -> tensor<?x4xf32>
// CHECK:         %[[SHAPE:.*]] = "core.ShapeOf"
// CHECK:         %[[FLAT:.*]] = "core.Reshape"(%{{.*}}, %{{.*}}) : (tensor<?x2x2x8xf32>, tensor<2xi64>) -> tensor<?x32xf32>
// CHECK:         "core.MatMul"(%[[FLAT]], %{{.*}}) {{.*}} -> tensor<?x4xf32>
// CHECK:         "core.Pad"({{.*}}) {{.*}} -> tensor<?x6xf32>
func.func @main(%x: tensor<?x2x2x8xf32>) -> tensor<?x4xf32> {
  %s = "tflite.SHAPE"(%x) {out_type = "INT32", version = 1 : i32} : (tensor<?x2x2x8xf32>) -> tensor<4xi32>
  %b0 = "tflite.CONST"() {value = dense<0> : tensor<1xi32>} : () -> tensor<1xi32>
  %b1 = "tflite.CONST"() {value = dense<1> : tensor<1xi32>} : () -> tensor<1xi32>
  %n = "tflite.STRIDED_SLICE"(%s, %b0, %b1, %b1) {begin_mask = 0 : i32, end_mask = 0 : i32, ellipsis_mask = 0 : i32, new_axis_mask = 0 : i32, shrink_axis_mask = 1 : i32, offset = false, version = 1 : i32} : (tensor<4xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<i32>
  %m1 = "tflite.CONST"() {value = dense<-1> : tensor<i32>} : () -> tensor<i32>
  %shape = "tflite.PACK"(%n, %m1) {values_count = 2 : i32, axis = 0 : i32, version = 1 : i32} : (tensor<i32>, tensor<i32>) -> tensor<2xi32>
  %flat = "tflite.RESHAPE"(%x, %shape) {version = 1 : i32} : (tensor<?x2x2x8xf32>, tensor<2xi32>) -> tensor<?x?xf32>
  %w = "tflite.CONST"() {value = dense<0.5> : tensor<4x32xf32>} : () -> tensor<4x32xf32>
  %none = "tflite.NO_VALUE"() : () -> none
  %y = "tflite.FULLY_CONNECTED"(%flat, %w, %none) {fused_activation_function = "NONE", weights_format = "DEFAULT", keep_num_dims = false, asymmetric_quantize_inputs = false, version = 1 : i32} : (tensor<?x?xf32>, tensor<4x32xf32>, none) -> tensor<?x4xf32>
  %pads = "tflite.CONST"() {value = dense<[[0, 0], [1, 1]]> : tensor<2x2xi32>} : () -> tensor<2x2xi32>
  %p = "tflite.PAD"(%y, %pads) {version = 1 : i32} : (tensor<?x4xf32>, tensor<2x2xi32>) -> tensor<?x?xf32>
  func.return %y : tensor<?x4xf32>
}

// -----

// RESIZE_NEAREST_NEIGHBOR with align_corners: Interpolate over NHWC height and width, sizes
// given, TF's align_corners coordinates rounded half up; UNSORTED_SEGMENT_PROD: a mask of
// `ids == segment` selects the data or 1, multiplied over the data's rows.
// CHECK-LABEL: func.func @main
// CHECK:         "core.Interpolate"(%{{.*}}, %{{.*}}, %{{.*}}) {{.*}}mode = "nearest", shape_calculation_mode = "sizes", coordinate_transformation_mode = "align_corners", nearest_mode = "round_prefer_ceil"{{.*}} -> tensor<1x3x5x2xf32>
// CHECK:         %[[MASK:.*]] = "core.Equal"(%{{.*}}, %{{.*}}) : (tensor<1x4xi32>, tensor<3x1xi32>) -> tensor<3x4xi1>
// CHECK:         %[[PICK:.*]] = "core.Select"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<3x4x1xi1>, tensor<1x4x2xf32>, tensor<f32>) -> tensor<3x4x2xf32>
// CHECK:         "core.ReduceProd"(%[[PICK]], %{{.*}}) {keep_dims = false} : {{.*}} -> tensor<3x2xf32>
func.func @main(%x: tensor<1x2x3x2xf32>, %d: tensor<4x2xf32>, %ids: tensor<4xi32>) -> (tensor<1x3x5x2xf32>, tensor<3x2xf32>) {
  %size = "tflite.CONST"() {value = dense<[3, 5]> : tensor<2xi32>} : () -> tensor<2xi32>
  %y = "tflite.RESIZE_NEAREST_NEIGHBOR"(%x, %size) {align_corners = true, half_pixel_centers = false, version = 1 : i32} : (tensor<1x2x3x2xf32>, tensor<2xi32>) -> tensor<1x3x5x2xf32>
  %n = "tflite.CONST"() {value = dense<3> : tensor<i32>} : () -> tensor<i32>
  %p = "tflite.UNSORTED_SEGMENT_PROD"(%d, %ids, %n) {version = 1 : i32} : (tensor<4x2xf32>, tensor<4xi32>, tensor<i32>) -> tensor<3x2xf32>
  func.return %y, %p : tensor<1x3x5x2xf32>, tensor<3x2xf32>
}

// -----

// IF -> core.If (the regions moved, lowered first); WHILE -> core.Loop without a trip count,
// its cond inlined before the loop and at the end of the body.
// CHECK-LABEL: func.func @control_flow
// CHECK:         %[[R:.*]] = "core.If"(%{{.*}}, %{{.*}}) ({
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: tensor<?x4xf32>):
// CHECK-NEXT:      core.Yield %[[A]] : tensor<?x4xf32>
// CHECK:           %[[N:.*]] = "core.Negative"
// CHECK-NEXT:      core.Yield %[[N]] : tensor<?x4xf32>
// CHECK:         %[[I0:.*]] = core.Constant {value = dense<0> : tensor<i32>}
// CHECK:         %[[GO:.*]] = "core.Less"(%[[I0]], %{{.*}})
// CHECK:         "core.Loop"(%{{.*}}, %[[GO]], %[[I0]], %[[R]]) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>}> ({
// CHECK-NEXT:    ^{{.*}}(%{{.*}}: tensor<i64>, %{{.*}}: tensor<i1>, %[[I:.*]]: tensor<i32>, %[[W:.*]]: tensor<?x4xf32>):
// CHECK:           %[[I1:.*]] = "core.Add"(%[[I]], %{{.*}})
// CHECK:           %[[W1:.*]] = "core.Add"(%[[W]], %[[W]])
// CHECK:           %[[AGAIN:.*]] = "core.Less"(%[[I1]], %{{.*}})
// CHECK-NEXT:      core.Yield %[[AGAIN]], %[[I1]], %[[W1]] : tensor<i1>, tensor<i32>, tensor<?x4xf32>
// CHECK-NEXT:    }) {max_iterations = -1 : i64}
// CHECK-NOT:     tflite.
func.func @control_flow(%c: tensor<i1>, %x: tensor<?x4xf32>) -> (tensor<i32>, tensor<?x4xf32>) {
  %r = "tflite.IF"(%c, %x) ({
  ^bb0(%a: tensor<?x4xf32>):
    "tflite.YIELD"(%a) : (tensor<?x4xf32>) -> ()
  }, {
  ^bb0(%a: tensor<?x4xf32>):
    %n = "tflite.NEG"(%a) {version = 1 : i32} : (tensor<?x4xf32>) -> tensor<?x4xf32>
    "tflite.YIELD"(%n) : (tensor<?x4xf32>) -> ()
  }) {version = 1 : i32} : (tensor<i1>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %i0 = "tflite.CONST"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
  %n, %v = "tflite.WHILE"(%i0, %r) ({
  ^bb0(%i: tensor<i32>, %w: tensor<?x4xf32>):
    %ten = "tflite.CONST"() {value = dense<10> : tensor<i32>} : () -> tensor<i32>
    %lt = "tflite.LESS"(%i, %ten) {version = 1 : i32} : (tensor<i32>, tensor<i32>) -> tensor<i1>
    "tflite.YIELD"(%lt) : (tensor<i1>) -> ()
  }, {
  ^bb0(%i: tensor<i32>, %w: tensor<?x4xf32>):
    %one = "tflite.CONST"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>
    %i1 = "tflite.ADD"(%i, %one) {fused_activation_function = "NONE", version = 1 : i32} : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %w1 = "tflite.ADD"(%w, %w) {fused_activation_function = "NONE", version = 1 : i32} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    "tflite.YIELD"(%i1, %w1) : (tensor<i32>, tensor<?x4xf32>) -> ()
  }) {version = 1 : i32} : (tensor<i32>, tensor<?x4xf32>) -> (tensor<i32>, tensor<?x4xf32>)
  func.return %n, %v : tensor<i32>, tensor<?x4xf32>
}

// -----

// int8 as LiteRT computes it. f32 -> int8 QUANTIZE as XNNPACK's convert: x * (1 / scale)
// rounded half to even. int8 LEAKY_RELU (XNNPACK's 8-bit multipliers) and HARD_SWISH (TFLite's
// 16-bit fixed point) are tabulated over the 256 int8 inputs at compile time and looked up,
// the int8 value itself the index (q = 0 first, -1 last). Leaky, q = 0: x = -15,
// m- = round(256 * 0.05 / 0.03 * 0.2) = 85, floor((-15 * 85 + 128) / 256) - 76 = -81 (0xAF).
// CHECK-LABEL: func.func @int8_exact
// CHECK-SAME:    (%{{.*}}: tensor<1x4xf32>) -> (tensor<1x4xi8>, tensor<1x4xi8>)
// CHECK:         %[[INV:.*]] = core.Constant {value = dense<2.000000e+01> : tensor<f32>}
// CHECK:         %[[S:.*]] = "core.Multiply"(%{{.*}}, %[[INV]])
// CHECK:         %[[R:.*]] = "core.Round"(%[[S]]) {mode = "half_to_even"}
// CHECK:         %[[X:.*]] = "core.Convert"(%{{.*}}) {destination_type = i8}
// CHECK:         %[[I:.*]] = "core.Convert"(%[[X]]) {destination_type = i32}
// CHECK:         %[[LEAKY:.*]] = core.Constant {value = dense<"0xAFAFB0B0B0B1{{.*}}"> : tensor<256xi8>}
// CHECK:         %[[L:.*]] = "core.Gather"(%[[LEAKY]], %[[I]], %{{.*}}) : (tensor<256xi8>, tensor<1x4xi32>, tensor<i64>) -> tensor<1x4xi8>
// CHECK:         %[[H:.*]] = "core.Gather"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<256xi8>, tensor<1x4xi32>, tensor<i64>) -> tensor<1x4xi8>
// CHECK:         func.return %[[L]], %[[H]]
func.func @int8_exact(%f: tensor<1x4xf32>) -> (tensor<1x4x!quant.uniform<i8:f32, 0.03:-76>>, tensor<1x4x!quant.uniform<i8:f32, 0.0375:-118>>) {
  %x = "tflite.QUANTIZE"(%f) {version = 1 : i32} : (tensor<1x4xf32>) -> tensor<1x4x!quant.uniform<i8:f32, 0.05:15>> loc("quantize")
  %l = "tflite.LEAKY_RELU"(%x) {alpha = 2.000000e-01 : f32, version = 2 : i32} : (tensor<1x4x!quant.uniform<i8:f32, 0.05:15>>) -> tensor<1x4x!quant.uniform<i8:f32, 0.03:-76>> loc("leaky")
  %h = "tflite.HARD_SWISH"(%x) {version = 1 : i32} : (tensor<1x4x!quant.uniform<i8:f32, 0.05:15>>) -> tensor<1x4x!quant.uniform<i8:f32, 0.0375:-118>> loc("hard_swish")
  func.return %l, %h : tensor<1x4x!quant.uniform<i8:f32, 0.03:-76>>, tensor<1x4x!quant.uniform<i8:f32, 0.0375:-118>>
}

// -----

// A TensorList write as TFLiteConverter lowers it (Keras GRU/LSTM/SimpleRNN without fusion):
// CONCATENATION(SLICE(L, 0, [t,-1,-1]), item, SLICE(L, [t+1,0,0], [-1,2,4])) is L with row t
// replaced: one core.DynamicUpdateSlice at the second begin minus one row; the two SLICEs of
// value-dependent shape are gone. A SLICE with a computed begin and a constant size is a
// core.DynamicSlice (static shape).
// CHECK-LABEL: func.func @list_write
// CHECK-SAME:    (%[[L:[a-z0-9_]+]]: tensor<5x2x4xf32>, %[[T:[a-z0-9_]+]]: tensor<1xi32>, %[[ITEM:[a-z0-9_]+]]: tensor<1x2x4xf32>)
// CHECK:         "core.Add"
// CHECK:         %[[B2:[a-z0-9_]+]] = "core.Concat"
// CHECK:         %[[ROW:[a-z0-9_]+]] = core.Constant {value = dense<[1, 0, 0]> : tensor<3xi32>}
// CHECK:         %[[START:[a-z0-9_]+]] = "core.Subtract"(%[[B2]], %[[ROW]])
// CHECK:         %[[W:[a-z0-9_]+]] = "core.DynamicUpdateSlice"(%[[L]], %[[ITEM]], %[[START]]) : (tensor<5x2x4xf32>, tensor<1x2x4xf32>, tensor<3xi32>) -> tensor<5x2x4xf32>
// CHECK:         %[[AT:[a-z0-9_]+]] = "core.Subtract"(%[[B2]], %{{.*}})
// CHECK:         "core.DynamicSlice"(%[[W]], %[[AT]]) {sizes = array<i64: 2, 2, 4>} : (tensor<5x2x4xf32>, tensor<3xi32>) -> tensor<2x2x4xf32>
// CHECK-NOT:     "core.StridedSlice"
// CHECK-NOT:     tflite.
func.func @list_write(%l: tensor<5x2x4xf32>, %t: tensor<1xi32>, %item: tensor<1x2x4xf32>) -> (tensor<5x2x4xf32>, tensor<2x2x4xf32>) {
  %zeros = "tflite.CONST"() {value = dense<0> : tensor<3xi32>} : () -> tensor<3xi32>
  %rest = "tflite.CONST"() {value = dense<-1> : tensor<2xi32>} : () -> tensor<2xi32>
  %tail_size = "tflite.CONST"() {value = dense<[-1, 2, 4]> : tensor<3xi32>} : () -> tensor<3xi32>
  %row0 = "tflite.CONST"() {value = dense<0> : tensor<2xi32>} : () -> tensor<2xi32>
  %one = "tflite.CONST"() {value = dense<1> : tensor<1xi32>} : () -> tensor<1xi32>
  %block = "tflite.CONST"() {value = dense<[2, 2, 4]> : tensor<3xi32>} : () -> tensor<3xi32>
  %s1 = "tflite.CONCATENATION"(%t, %rest) {axis = 0 : i32, fused_activation_function = "NONE", version = 1 : i32} : (tensor<1xi32>, tensor<2xi32>) -> tensor<3xi32>
  %head = "tflite.SLICE"(%l, %zeros, %s1) {version = 1 : i32} : (tensor<5x2x4xf32>, tensor<3xi32>, tensor<3xi32>) -> tensor<?x?x?xf32>
  %t1 = "tflite.ADD"(%t, %one) {fused_activation_function = "NONE", version = 1 : i32} : (tensor<1xi32>, tensor<1xi32>) -> tensor<1xi32>
  %b2 = "tflite.CONCATENATION"(%t1, %row0) {axis = 0 : i32, fused_activation_function = "NONE", version = 1 : i32} : (tensor<1xi32>, tensor<2xi32>) -> tensor<3xi32>
  %tail = "tflite.SLICE"(%l, %b2, %tail_size) {version = 1 : i32} : (tensor<5x2x4xf32>, tensor<3xi32>, tensor<3xi32>) -> tensor<?x2x4xf32>
  %w = "tflite.CONCATENATION"(%head, %item, %tail) {axis = 0 : i32, fused_activation_function = "NONE", version = 1 : i32} : (tensor<?x?x?xf32>, tensor<1x2x4xf32>, tensor<?x2x4xf32>) -> tensor<5x2x4xf32>
  %start = "tflite.SUB"(%b2, %one) {fused_activation_function = "NONE", version = 1 : i32} : (tensor<3xi32>, tensor<1xi32>) -> tensor<3xi32>
  %r = "tflite.SLICE"(%w, %start, %block) {version = 1 : i32} : (tensor<5x2x4xf32>, tensor<3xi32>, tensor<3xi32>) -> tensor<2x2x4xf32>
  func.return %w, %r : tensor<5x2x4xf32>, tensor<2x2x4xf32>
}

// -----

// int8 RSQRT as TFLite's kernel: 1 / sqrt(q - zp) by fixed-point Newton-Raphson, rescaled by
// 1 / (sqrt(s_in) s_out); tabulated. q = 0: 1 / sqrt(128 * 0.0247) / 0.00554 - 128 = -26
// (0xE6); q = zp = -128 (entry 128) gives 127 (0x7F).
// CHECK-LABEL: func.func @int8_rsqrt
// CHECK:         %[[I:.*]] = "core.Convert"(%{{.*}}) {destination_type = i32}
// CHECK:         %[[T:.*]] = core.Constant {value = dense<"0xE6E5E5E4{{[0-9A-F]*}}C8C8C8C8C87F7F{{.*}}"> : tensor<256xi8>}
// CHECK:         %[[Y:.*]] = "core.Gather"(%[[T]], %[[I]], %{{.*}})
// CHECK:         func.return %[[Y]] : tensor<1x4xi8>
func.func @int8_rsqrt(%x: tensor<1x4x!quant.uniform<i8:f32, 0.0247:-128>>) -> tensor<1x4x!quant.uniform<i8:f32, 0.00554:-128>> {
  %y = "tflite.RSQRT"(%x) {version = 2 : i32} : (tensor<1x4x!quant.uniform<i8:f32, 0.0247:-128>>) -> tensor<1x4x!quant.uniform<i8:f32, 0.00554:-128>> loc("rsqrt")
  func.return %y : tensor<1x4x!quant.uniform<i8:f32, 0.00554:-128>>
}

// -----

// L2_NORMALIZATION over the last axis: float as TFLite's kernel, x / max(sqrt(sum x^2), 1e-6);
// int8 as TFLite's integer kernel, in int64 core ops: the row's sum of (q - zp)^2, its inverse
// square root as a fixed-point multiplier and shift (Newton-Raphson), the rescaled value
// saturated to int8.
// CHECK-LABEL: func.func @l2_normalization
// CHECK-SAME:    -> (tensor<2x4xf32>, tensor<2x4xi8>)
// CHECK:         %[[SUM:.*]] = "core.ReduceSum"(%{{.*}}, %{{.*}}) {keep_dims = true} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x1xf32>
// CHECK:         %[[NORM:.*]] = "core.Sqrt"(%[[SUM]])
// CHECK:         %[[EPS:.*]] = core.Constant {value = dense<1.000000e-06> : tensor<f32>}
// CHECK:         %[[SAFE:.*]] = "core.Maximum"(%[[NORM]], %[[EPS]])
// CHECK:         %[[Y:.*]] = "core.Divide"(%{{.*}}, %[[SAFE]]) : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
// CHECK:         %[[Q:.*]] = "core.Convert"(%{{.*}}) {destination_type = i64} : (tensor<2x4xi8>) -> tensor<2x4xi64>
// CHECK:         "core.ReduceSum"(%{{.*}}, %{{.*}}) {keep_dims = true} : (tensor<2x4xi64>, tensor<1xi64>) -> tensor<2x1xi64>
// CHECK:         "core.BitwiseRightShift"
// CHECK:         %[[Z:.*]] = "core.Convert"(%{{.*}}) {destination_type = i8} : (tensor<2x4xi64>) -> tensor<2x4xi8>
// CHECK:         func.return %[[Y]], %[[Z]]
func.func @l2_normalization(%f: tensor<2x4xf32>, %q: tensor<2x4x!quant.uniform<i8:f32, 0.08:15>>) -> (tensor<2x4xf32>, tensor<2x4x!quant.uniform<i8:f32, 0.0078125>>) {
  %y = "tflite.L2_NORMALIZATION"(%f) {fused_activation_function = "NONE", version = 1 : i32} : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("l2_float")
  %z = "tflite.L2_NORMALIZATION"(%q) {fused_activation_function = "NONE", version = 2 : i32} : (tensor<2x4x!quant.uniform<i8:f32, 0.08:15>>) -> tensor<2x4x!quant.uniform<i8:f32, 0.0078125>> loc("l2_int8")
  func.return %y, %z : tensor<2x4xf32>, tensor<2x4x!quant.uniform<i8:f32, 0.0078125>>
}

// -----

// int8 RESIZE_BILINEAR as XNNPACK on the stored integers: rows and columns gathered at the
// source indices TF's half-pixel rule gives (computed in f32, clamped to the input), blended
// with weights of 11 fractional bits, 2048 a + (b - a) w, then (acc + 2^21) >> 22. Columns
// 3 -> 5: positions -0.2 (clamped to 0), 0.4, 1.0, 1.6, 2.2 (clamped to 2), weights
// 0, round(0.4 * 2048) = 819, 0, 1229, 0.
// CHECK-LABEL: func.func @int8_resize_bilinear
// CHECK:         %[[X:.*]] = "core.Convert"(%{{.*}}) {destination_type = i32}
// CHECK:         %[[TOP:.*]] = "core.Gather"(%[[X]], %{{.*}}, %{{.*}}) : (tensor<1x2x3x4xi32>, tensor<3xi64>, tensor<i64>) -> tensor<1x3x3x4xi32>
// CHECK:         core.Constant {value = dense<[0, 0, 1, 1, 2]> : tensor<5xi64>}
// CHECK:         core.Constant {value = dense<[1, 1, 2, 2, 2]> : tensor<5xi64>}
// CHECK:         core.Constant {value = dense<{{\[\[\[\[}}0], [819], [0], [1229], [0]]]]> : tensor<1x1x5x1xi32>}
// CHECK:         core.Constant {value = dense<{{\[\[\[\[}}0]], {{\[\[}}1024]], {{\[\[}}0]]]]> : tensor<1x3x1x1xi32>}
// CHECK:         %[[R:.*]] = "core.BitwiseRightShift"
// CHECK:         %[[Y:.*]] = "core.Convert"(%[[R]]) {destination_type = i8} : (tensor<1x3x5x4xi32>) -> tensor<1x3x5x4xi8>
// CHECK:         func.return %[[Y]]
func.func @int8_resize_bilinear(%x: tensor<1x2x3x4x!quant.uniform<i8:f32, 0.02:3>>) -> tensor<1x3x5x4x!quant.uniform<i8:f32, 0.02:3>> {
  %size = "tflite.CONST"() {value = dense<[3, 5]> : tensor<2xi32>} : () -> tensor<2xi32>
  %y = "tflite.RESIZE_BILINEAR"(%x, %size) {align_corners = false, half_pixel_centers = true, version = 3 : i32} : (tensor<1x2x3x4x!quant.uniform<i8:f32, 0.02:3>>, tensor<2xi32>) -> tensor<1x3x5x4x!quant.uniform<i8:f32, 0.02:3>> loc("resize")
  func.return %y : tensor<1x3x5x4x!quant.uniform<i8:f32, 0.02:3>>
}

// -----

// int8 DIV as TFLite's fixed-point kernel: a table over all 65536 pairs of int8 operands,
// looked up at q_a * 256 + q_b + 32896.
// CHECK-LABEL: func.func @int8_div
// CHECK:         %[[A:.*]] = "core.Convert"(%{{.*}}) {destination_type = i32}
// CHECK:         %[[B:.*]] = "core.Convert"(%{{.*}}) {destination_type = i32}
// CHECK:         %[[ROW:.*]] = "core.Multiply"(%[[A]], %{{.*}})
// CHECK:         %[[AT:.*]] = "core.Add"(%[[ROW]], %[[B]])
// CHECK:         %[[INDEX:.*]] = "core.Add"(%[[AT]], %{{.*}})
// CHECK:         %[[Y:.*]] = "core.Gather"(%{{.*}}, %[[INDEX]], %{{.*}}) : (tensor<65536xi8>, tensor<1x4xi32>, tensor<i64>) -> tensor<1x4xi8>
// CHECK:         func.return %[[Y]]
func.func @int8_div(%a: tensor<1x4x!quant.uniform<i8:f32, 0.0366:-2>>, %b: tensor<1x4x!quant.uniform<i8:f32, 0.0118:-128>>) -> tensor<1x4x!quant.uniform<i8:f32, 0.0564:-7>> {
  %y = "tflite.DIV"(%a, %b) {fused_activation_function = "NONE", version = 2 : i32} : (tensor<1x4x!quant.uniform<i8:f32, 0.0366:-2>>, tensor<1x4x!quant.uniform<i8:f32, 0.0118:-128>>) -> tensor<1x4x!quant.uniform<i8:f32, 0.0564:-7>> loc("div")
  func.return %y : tensor<1x4x!quant.uniform<i8:f32, 0.0564:-7>>
}

// -----

// int8 RELU that rescales (TFLite's ReluX): zp_out + MultiplyByQuantizedMultiplier(q - zp_in,
// 0.028 / 0.084), tabulated. Its double rounding takes q = 12 (1/3 of a step) to 12, not 11:
// the doubling high product rounds 2/3 up to 1, and the halving rounds 1/2 away from zero.
// CHECK-LABEL: func.func @int8_relu
// CHECK:         %[[T:.*]] = core.Constant {value = dense<"0x0B0B0B0B0B0B0B0B0B0B0B0B0C0C0C0D{{.*}}"> : tensor<256xi8>}
// CHECK:         %[[Y:.*]] = "core.Gather"(%[[T]], %{{.*}}, %{{.*}})
// CHECK:         func.return %[[Y]]
func.func @int8_relu(%x: tensor<1x4x!quant.uniform<i8:f32, 0.028:11>>) -> tensor<1x4x!quant.uniform<i8:f32, 0.084:11>> {
  %y = "tflite.RELU"(%x) {version = 2 : i32} : (tensor<1x4x!quant.uniform<i8:f32, 0.028:11>>) -> tensor<1x4x!quant.uniform<i8:f32, 0.084:11>> loc("relu")
  func.return %y : tensor<1x4x!quant.uniform<i8:f32, 0.084:11>>
}

// -----

// UNIDIRECTIONAL_SEQUENCE_LSTM (tf.keras LSTM fused by TFLiteConverter) -> core.LSTMSequence:
// W, R, B stacked in core's gate order f, i, c, o (TFLite's operands 2, 1, 3, 4 / 6, 5, 7, 8 /
// 13, 12, 14, 15), one direction; the states batch x 1 x n; TFLite's cell_clip kept.
// CHECK-LABEL: func.func @sequence_lstm
// CHECK:         %[[W:[a-z0-9_]+]] = "core.Concat"(%wf, %wi, %wc, %wo) {axis = 0 : i64}
// CHECK:         %[[R:[a-z0-9_]+]] = "core.Concat"(%rf, %ri, %rc, %ro) {axis = 0 : i64}
// CHECK:         %[[B:[a-z0-9_]+]] = "core.Concat"(%bf, %bi, %bc, %bo) {axis = 0 : i64}
// CHECK:         %{{.*}}, %{{.*}}, %{{.*}} = "core.LSTMSequence"(%x, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 1, 0>}> {hidden_size = 1 : i64, activations = ["sigmoid", "tanh", "tanh"], cell_clip = 1.000000e+01 : f64} : (tensor<2x3x2xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>, tensor<1x4x2xf32>, tensor<1x4x1xf32>, tensor<1x4xf32>) -> (tensor<2x1x3x1xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
// CHECK:         "core.Squeeze"
// CHECK-NOT:     tflite.
func.func @sequence_lstm(%x: tensor<2x3x2xf32>, %wi: tensor<1x2xf32>, %wf: tensor<1x2xf32>, %wc: tensor<1x2xf32>, %wo: tensor<1x2xf32>, %ri: tensor<1x1xf32>, %rf: tensor<1x1xf32>, %rc: tensor<1x1xf32>, %ro: tensor<1x1xf32>, %bi: tensor<1xf32>, %bf: tensor<1xf32>, %bc: tensor<1xf32>, %bo: tensor<1xf32>, %h: tensor<2x1xf32>, %c: tensor<2x1xf32>) -> tensor<2x3x1xf32> {
  %none = "tflite.NO_VALUE"() : () -> none
  %y = "tflite.UNIDIRECTIONAL_SEQUENCE_LSTM"(%x, %wi, %wf, %wc, %wo, %ri, %rf, %rc, %ro, %none, %none, %none, %bi, %bf, %bc, %bo, %none, %none, %h, %c, %none, %none, %none, %none) {version = 1 : i32, fused_activation_function = "TANH", cell_clip = 1.000000e+01 : f32, proj_clip = 0.000000e+00 : f32, time_major = false, asymmetric_quantize_inputs = false, diagonal_recurrent_tensors = false} : (tensor<2x3x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>, none, none, none, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, none, none, tensor<2x1xf32>, tensor<2x1xf32>, none, none, none, none) -> tensor<2x3x1xf32>
  func.return %y : tensor<2x3x1xf32>
}

// -----

// int8 MUL as XNNPACK: (q_a - zp_a)(q_b - zp_b) in int32 (a float product by the constant
// would be folded into the scale), times float32(s_a s_b / s_out), rounded half to even.
// CHECK-LABEL: func.func @int8_mul
// CHECK:         %[[A:.*]] = "core.Convert"(%{{.*}}) {destination_type = i32}
// CHECK:         %[[CA:.*]] = "core.Subtract"(%[[A]], %{{.*}}) : (tensor<1x4xi32>, tensor<i32>)
// CHECK:         %[[B:.*]] = core.Constant {value = dense<255> : tensor<i32>}
// CHECK:         %[[ACC:.*]] = "core.Multiply"(%[[CA]], %[[B]]) : (tensor<1x4xi32>, tensor<i32>) -> tensor<1x4xi32>
// CHECK:         %[[F:.*]] = "core.Convert"(%[[ACC]]) {destination_type = f32}
// CHECK:         %[[S:.*]] = "core.Multiply"(%[[F]], %{{.*}})
// CHECK:         "core.Round"(%[[S]]) {mode = "half_to_even"}
func.func @int8_mul(%a: tensor<1x4x!quant.uniform<i8:f32, 0.0217:52>>) -> tensor<1x4x!quant.uniform<i8:f32, 0.0217:52>> {
  %half = "tflite.CONST"() {value = dense<127> : tensor<i8>} : () -> tensor<!quant.uniform<i8:f32, 0.00196:-128>>
  %y = "tflite.MUL"(%a, %half) {fused_activation_function = "NONE", version = 2 : i32} : (tensor<1x4x!quant.uniform<i8:f32, 0.0217:52>>, tensor<!quant.uniform<i8:f32, 0.00196:-128>>) -> tensor<1x4x!quant.uniform<i8:f32, 0.0217:52>> loc("mul")
  func.return %y : tensor<1x4x!quant.uniform<i8:f32, 0.0217:52>>
}
