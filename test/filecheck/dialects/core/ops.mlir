// Round trip of the core dialect: parse, verify, print, parse again; one op of each family.
// RUN: mlconv-opt %s --split-input-file | mlconv-opt --split-input-file | filecheck %s

// CHECK-LABEL: func.func @constant
// CHECK:         %[[C:.*]] = core.Constant {value = dense<[1, 2, 3]> : tensor<3xi64>} : tensor<3xi64>
// CHECK:         func.return %[[C]] : tensor<3xi64>
func.func @constant() -> tensor<3xi64> {
  %c = core.Constant {value = dense<[1, 2, 3]> : tensor<3xi64>} : tensor<3xi64>
  func.return %c : tensor<3xi64>
}

// -----

// Constants of more than 100 elements are bytes, printed as hex (0, 1, ..., 127 here); a splat
// stays a splat.
// CHECK-LABEL: func.func @constant_hex
// CHECK:         core.Constant {value = dense<"0x000000000000803F{{[0-9A-F]+}}0000FE42"> : tensor<128xf32>} : tensor<128xf32>
// CHECK:         core.Constant {value = dense<1.500000e+00> : tensor<128xf32>} : tensor<128xf32>
func.func @constant_hex() -> (tensor<128xf32>, tensor<128xf32>) {
  %c = core.Constant {value = dense<"0x000000000000803F0000004000004040000080400000A0400000C0400000E0400000004100001041000020410000304100004041000050410000604100007041000080410000884100009041000098410000A0410000A8410000B0410000B8410000C0410000C8410000D0410000D8410000E0410000E8410000F0410000F84100000042000004420000084200000C4200001042000014420000184200001C4200002042000024420000284200002C4200003042000034420000384200003C4200004042000044420000484200004C4200005042000054420000584200005C4200006042000064420000684200006C4200007042000074420000784200007C42000080420000824200008442000086420000884200008A4200008C4200008E42000090420000924200009442000096420000984200009A4200009C4200009E420000A0420000A2420000A4420000A6420000A8420000AA420000AC420000AE420000B0420000B2420000B4420000B6420000B8420000BA420000BC420000BE420000C0420000C2420000C4420000C6420000C8420000CA420000CC420000CE420000D0420000D2420000D4420000D6420000D8420000DA420000DC420000DE420000E0420000E2420000E4420000E6420000E8420000EA420000EC420000EE420000F0420000F2420000F4420000F6420000F8420000FA420000FC420000FE42"> : tensor<128xf32>} : tensor<128xf32>
  %s = core.Constant {value = dense<1.5> : tensor<128xf32>} : tensor<128xf32>
  func.return %c, %s : tensor<128xf32>, tensor<128xf32>
}

// -----

// CHECK-LABEL: func.func @elementwise
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3xf32>)
// CHECK:         %[[SUM:.*]] = "core.Add"(%[[A]], %[[B]]) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK:         %[[DIV:.*]] = "core.Divide"(%[[SUM]], %[[B]]) {m_pythondiv = false} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK:         %[[RELU:.*]] = "core.Relu"(%[[DIV]]) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK:         %[[LESS:.*]] = "core.Less"(%[[RELU]], %[[A]]) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK:         func.return %[[RELU]], %[[LESS]]
func.func @elementwise(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>) {
  %sum = "core.Add"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %div = "core.Divide"(%sum, %b) {m_pythondiv = false} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %relu = "core.Relu"(%div) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %less = "core.Less"(%relu, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  func.return %relu, %less : tensor<2x3xf32>, tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @convolution
// CHECK-SAME:    (%[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>)
// CHECK:         %[[Y:.*]] = "core.Convolution"(%[[X]], %[[W]]) {strides = array<i64: 1, 1>, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
// CHECK:         %[[P:.*]] = "core.MaxPool"(%[[Y]]) {strides = array<i64: 2, 2>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, kernel = array<i64: 2, 2>, rounding_type = "ceil"} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
// CHECK:         func.return %[[P]]
func.func @convolution(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %y = "core.Convolution"(%x, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %p = "core.MaxPool"(%y) {strides = array<i64: 2, 2>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, kernel = array<i64: 2, 2>, rounding_type = "ceil"} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  func.return %p : tensor<1x4x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_softmax
// CHECK-SAME:    (%[[A:.*]]: tensor<2x16xf32>, %[[B:.*]]: tensor<10x16xf32>)
// CHECK:         %[[M:.*]] = "core.MatMul"(%[[A]], %[[B]]) {transpose_b = true} : (tensor<2x16xf32>, tensor<10x16xf32>) -> tensor<2x10xf32>
// CHECK:         %[[S:.*]] = "core.Softmax"(%[[M]]) {axis = 1 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
// CHECK:         func.return %[[S]]
func.func @matmul_softmax(%a: tensor<2x16xf32>, %b: tensor<10x16xf32>) -> tensor<2x10xf32> {
  %m = "core.MatMul"(%a, %b) {transpose_b = true} : (tensor<2x16xf32>, tensor<10x16xf32>) -> tensor<2x10xf32>
  %s = "core.Softmax"(%m) {axis = 1 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
  func.return %s : tensor<2x10xf32>
}

// -----

// Concat is variadic: any number of operands.
// CHECK-LABEL: func.func @concat
// CHECK-SAME:    (%[[A:.*]]: tensor<1x2xf32>, %[[B:.*]]: tensor<1x3xf32>, %[[C:.*]]: tensor<1x4xf32>)
// CHECK:         %[[ONE:.*]] = "core.Concat"(%[[A]]) {axis = 1 : i64} : (tensor<1x2xf32>) -> tensor<1x2xf32>
// CHECK:         %[[ALL:.*]] = "core.Concat"(%[[ONE]], %[[B]], %[[C]]) {axis = -1 : i64} : (tensor<1x2xf32>, tensor<1x3xf32>, tensor<1x4xf32>) -> tensor<1x9xf32>
// CHECK:         func.return %[[ALL]]
func.func @concat(%a: tensor<1x2xf32>, %b: tensor<1x3xf32>, %c: tensor<1x4xf32>) -> tensor<1x9xf32> {
  %one = "core.Concat"(%a) {axis = 1 : i64} : (tensor<1x2xf32>) -> tensor<1x2xf32>
  %all = "core.Concat"(%one, %b, %c) {axis = -1 : i64} : (tensor<1x2xf32>, tensor<1x3xf32>, tensor<1x4xf32>) -> tensor<1x9xf32>
  func.return %all : tensor<1x9xf32>
}

// -----

// Squeeze's axes are optional.
// CHECK-LABEL: func.func @squeeze
// CHECK-SAME:    (%[[X:.*]]: tensor<1x5x1xf32>)
// CHECK:         %[[AXES:.*]] = core.Constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
// CHECK:         %[[SOME:.*]] = "core.Squeeze"(%[[X]], %[[AXES]]) : (tensor<1x5x1xf32>, tensor<1xi64>) -> tensor<5x1xf32>
// CHECK:         %[[ALL:.*]] = "core.Squeeze"(%[[X]]) : (tensor<1x5x1xf32>) -> tensor<5xf32>
// CHECK:         func.return %[[SOME]], %[[ALL]]
func.func @squeeze(%x: tensor<1x5x1xf32>) -> (tensor<5x1xf32>, tensor<5xf32>) {
  %axes = core.Constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %some = "core.Squeeze"(%x, %axes) : (tensor<1x5x1xf32>, tensor<1xi64>) -> tensor<5x1xf32>
  %all = "core.Squeeze"(%x) : (tensor<1x5x1xf32>) -> tensor<5xf32>
  func.return %some, %all : tensor<5x1xf32>, tensor<5xf32>
}

// -----

// Shape ops on a dynamic batch; `?` dims survive the round trip.
// CHECK-LABEL: func.func @shape_subgraph
// CHECK-SAME:    (%[[X:.*]]: tensor<?x3x4xf32>)
// CHECK:         %[[SHAPE:.*]] = "core.ShapeOf"(%[[X]]) {output_type = i32} : (tensor<?x3x4xf32>) -> tensor<3xi32>
// CHECK:         %[[PATTERN:.*]] = core.Constant {value = dense<[0, -1]> : tensor<2xi64>} : tensor<2xi64>
// CHECK:         %[[R:.*]] = "core.Reshape"(%[[X]], %[[PATTERN]]) {special_zero = true} : (tensor<?x3x4xf32>, tensor<2xi64>) -> tensor<?x12xf32>
// CHECK:         %[[ORDER:.*]] = core.Constant {value = dense<[1, 0]> : tensor<2xi64>} : tensor<2xi64>
// CHECK:         %[[T:.*]] = "core.Transpose"(%[[R]], %[[ORDER]]) : (tensor<?x12xf32>, tensor<2xi64>) -> tensor<12x?xf32>
// CHECK:         %[[CAST:.*]] = "core.Convert"(%[[SHAPE]]) {destination_type = i64} : (tensor<3xi32>) -> tensor<3xi64>
// CHECK:         %[[AXES:.*]] = core.Constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
// CHECK:         %[[N:.*]] = "core.ReduceProd"(%[[CAST]], %[[AXES]]) {keep_dims = true} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
// CHECK:         func.return %[[T]], %[[N]]
func.func @shape_subgraph(%x: tensor<?x3x4xf32>) -> (tensor<12x?xf32>, tensor<1xi64>) {
  %shape = "core.ShapeOf"(%x) {output_type = i32} : (tensor<?x3x4xf32>) -> tensor<3xi32>
  %pattern = core.Constant {value = dense<[0, -1]> : tensor<2xi64>} : tensor<2xi64>
  %r = "core.Reshape"(%x, %pattern) {special_zero = true} : (tensor<?x3x4xf32>, tensor<2xi64>) -> tensor<?x12xf32>
  %order = core.Constant {value = dense<[1, 0]> : tensor<2xi64>} : tensor<2xi64>
  %t = "core.Transpose"(%r, %order) : (tensor<?x12xf32>, tensor<2xi64>) -> tensor<12x?xf32>
  %cast = "core.Convert"(%shape) {destination_type = i64} : (tensor<3xi32>) -> tensor<3xi64>
  %axes = core.Constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %n = "core.ReduceProd"(%cast, %axes) {keep_dims = true} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
  func.return %t, %n : tensor<12x?xf32>, tensor<1xi64>
}

// -----

// Gather with its batch_dims attribute; Broadcast with optional axes_mapping.
// CHECK-LABEL: func.func @gather_broadcast
// CHECK-SAME:    (%[[X:.*]]: tensor<5x4xf32>, %[[I:.*]]: tensor<2xi64>)
// CHECK:         %[[AXIS:.*]] = core.Constant {value = dense<0> : tensor<i64>} : tensor<i64>
// CHECK:         %[[G:.*]] = "core.Gather"(%[[X]], %[[I]], %[[AXIS]]) {batch_dims = 0 : i64} : (tensor<5x4xf32>, tensor<2xi64>, tensor<i64>) -> tensor<2x4xf32>
// CHECK:         %[[SHAPE:.*]] = core.Constant {value = dense<[3, 2, 4]> : tensor<3xi64>} : tensor<3xi64>
// CHECK:         %[[B:.*]] = "core.Broadcast"(%[[G]], %[[SHAPE]]) : (tensor<2x4xf32>, tensor<3xi64>) -> tensor<3x2x4xf32>
// CHECK:         func.return %[[B]]
func.func @gather_broadcast(%x: tensor<5x4xf32>, %i: tensor<2xi64>) -> tensor<3x2x4xf32> {
  %axis = core.Constant {value = dense<0> : tensor<i64>} : tensor<i64>
  %g = "core.Gather"(%x, %i, %axis) {batch_dims = 0 : i64} : (tensor<5x4xf32>, tensor<2xi64>, tensor<i64>) -> tensor<2x4xf32>
  %shape = core.Constant {value = dense<[3, 2, 4]> : tensor<3xi64>} : tensor<3xi64>
  %b = "core.Broadcast"(%g, %shape) : (tensor<2x4xf32>, tensor<3xi64>) -> tensor<3x2x4xf32>
  func.return %b : tensor<3x2x4xf32>
}

// -----

// The ops core-fuse writes: NormalizeL2 and ShuffleChannels.

// CHECK-LABEL: func.func @fused_ops
// CHECK:         %[[N:.*]] = "core.NormalizeL2"(%{{.*}}, %{{.*}}) {eps = 1.000000e-12 : f64, eps_mode = "max"} : (tensor<1x8x2x2xf32>, tensor<1xi64>) -> tensor<1x8x2x2xf32>
// CHECK:         %[[S:.*]] = "core.ShuffleChannels"(%[[N]]) {axis = 1 : i64, group = 2 : i64} : (tensor<1x8x2x2xf32>) -> tensor<1x8x2x2xf32>
func.func @fused_ops(%x: tensor<1x8x2x2xf32>) -> tensor<1x8x2x2xf32> {
  %axes = core.Constant {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
  %n = "core.NormalizeL2"(%x, %axes) {eps = 1.0e-12 : f64, eps_mode = "max"} : (tensor<1x8x2x2xf32>, tensor<1xi64>) -> tensor<1x8x2x2xf32>
  %s = "core.ShuffleChannels"(%n) {axis = 1 : i64, group = 2 : i64} : (tensor<1x8x2x2xf32>) -> tensor<1x8x2x2xf32>
  func.return %s : tensor<1x8x2x2xf32>
}

// -----

// The region ops of two-stage detectors: ROIAlign and ROIPooling.

// CHECK-LABEL: func.func @roi_ops
// CHECK:         "core.ROIAlign"(%{{.*}}, %{{.*}}, %{{.*}}) {pooled_h = 2 : i64, pooled_w = 2 : i64, sampling_ratio = 2 : i64, spatial_scale = 2.500000e-01 : f64, mode = "max", aligned_mode = "half_pixel"} : (tensor<1x3x8x8xf32>, tensor<4x4xf32>, tensor<4xi64>) -> tensor<4x3x2x2xf32>
// CHECK:         "core.ROIPooling"(%{{.*}}, %{{.*}}) {pooled_h = 3 : i64, pooled_w = 2 : i64, spatial_scale = 1.000000e+00 : f64, method = "max"} : (tensor<1x3x8x8xf32>, tensor<4x5xf32>) -> tensor<4x3x3x2xf32>
func.func @roi_ops(%x: tensor<1x3x8x8xf32>, %rois: tensor<4x4xf32>, %idx: tensor<4xi64>, %rois5: tensor<4x5xf32>) -> (tensor<4x3x2x2xf32>, tensor<4x3x3x2xf32>) {
  %a = "core.ROIAlign"(%x, %rois, %idx) {pooled_h = 2 : i64, pooled_w = 2 : i64, sampling_ratio = 2 : i64, spatial_scale = 2.500000e-01 : f64, mode = "max", aligned_mode = "half_pixel"} : (tensor<1x3x8x8xf32>, tensor<4x4xf32>, tensor<4xi64>) -> tensor<4x3x2x2xf32>
  %p = "core.ROIPooling"(%x, %rois5) {pooled_h = 3 : i64, pooled_w = 2 : i64, spatial_scale = 1.0 : f64, method = "max"} : (tensor<1x3x8x8xf32>, tensor<4x5xf32>) -> tensor<4x3x3x2xf32>
  func.return %a, %p : tensor<4x3x2x2xf32>, tensor<4x3x3x2xf32>
}

// -----

// libsvm's pairwise coupling (SVM classifiers with probabilities).

// CHECK-LABEL: func.func @pairwise_coupling
// CHECK:         "core.PairwiseCoupling"(%{{.*}}) : (tensor<?x3x3xf32>) -> tensor<?x3xf32>
func.func @pairwise_coupling(%r: tensor<?x3x3xf32>) -> tensor<?x3xf32> {
  %p = "core.PairwiseCoupling"(%r) : (tensor<?x3x3xf32>) -> tensor<?x3xf32>
  func.return %p : tensor<?x3xf32>
}

// -----

// Col2Im: columns of 2x2 blocks at 2x2 positions (stride 1) back into a 3x3 image, summing
// where the blocks overlap.

// CHECK-LABEL: func.func @col2im
// CHECK:         "core.Col2Im"(%{{.*}}, %{{.*}}, %{{.*}}) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x8x4xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<1x2x3x3xf32>
func.func @col2im(%x: tensor<1x8x4xf32>) -> tensor<1x2x3x3xf32> {
  %image = core.Constant {value = dense<3> : tensor<2xi64>} : tensor<2xi64>
  %block = core.Constant {value = dense<2> : tensor<2xi64>} : tensor<2xi64>
  %y = "core.Col2Im"(%x, %image, %block) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x8x4xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// -----

// ImageDecoder: encoded bytes to pixels; the shape depends on the bytes, so it is folded
// where they are known (here a 1-D byte tensor of unknown content and a dynamic result).

// CHECK-LABEL: func.func @image_decoder
// CHECK:         "core.ImageDecoder"(%{{.*}}) {pixel_format = "BGR"} : (tensor<64xui8>) -> tensor<?x?x3xui8>
func.func @image_decoder(%bytes: tensor<64xui8>) -> tensor<?x?x3xui8> {
  %y = "core.ImageDecoder"(%bytes) {pixel_format = "BGR"} : (tensor<64xui8>) -> tensor<?x?x3xui8>
  func.return %y : tensor<?x?x3xui8>
}

// -----

// MelWeightMatrix: every operand is static (the shape depends on the values).

// CHECK-LABEL: func.func @mel_weight_matrix
// CHECK:         "core.MelWeightMatrix"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {output_type = f32} : (tensor<i64>, tensor<i64>, tensor<i64>, tensor<f32>, tensor<f32>) -> tensor<?x?xf32>
func.func @mel_weight_matrix(%bins: tensor<i64>, %n: tensor<i64>, %rate: tensor<i64>, %low: tensor<f32>, %high: tensor<f32>) -> tensor<?x?xf32> {
  %m = "core.MelWeightMatrix"(%bins, %n, %rate, %low, %high) {output_type = f32} : (tensor<i64>, tensor<i64>, tensor<i64>, tensor<f32>, tensor<f32>) -> tensor<?x?xf32>
  func.return %m : tensor<?x?xf32>
}

// -----

// DynamicSlice / DynamicUpdateSlice: a computed start, a static block.

// CHECK-LABEL: func.func @dynamic_slices
// CHECK:         %[[R:.*]] = "core.DynamicSlice"(%x, %s) {sizes = array<i64: 1, 4>} : (tensor<5x4xf32>, tensor<2xi32>) -> tensor<1x4xf32>
// CHECK:         "core.DynamicUpdateSlice"(%x, %[[R]], %s) : (tensor<5x4xf32>, tensor<1x4xf32>, tensor<2xi32>) -> tensor<5x4xf32>
func.func @dynamic_slices(%x: tensor<5x4xf32>, %s: tensor<2xi32>) -> tensor<5x4xf32> {
  %r = "core.DynamicSlice"(%x, %s) {sizes = array<i64: 1, 4>} : (tensor<5x4xf32>, tensor<2xi32>) -> tensor<1x4xf32>
  %y = "core.DynamicUpdateSlice"(%x, %r, %s) : (tensor<5x4xf32>, tensor<1x4xf32>, tensor<2xi32>) -> tensor<5x4xf32>
  func.return %y : tensor<5x4xf32>
}
