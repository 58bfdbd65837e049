// RUN: mlconv-opt %s --pass-pipeline='builtin.module(onnx-normalize)' --split-input-file | filecheck %s

// CHECK-LABEL: func.func @topk_k
// CHECK:         %[[K:.*]] = "onnx.Constant"() {value = dense<2> : tensor<1xi64>}
// CHECK:         "onnx.TopK"(%{{.*}}, %[[K]]) {axis = 1 : i64}
// CHECK-NOT:     k =
builtin.module attributes {onnx.opset_import = {"" = 9 : i64}} {
  func.func @topk_k(%x: tensor<3x4xf32>) -> tensor<3x2xf32> {
    %v, %i = "onnx.TopK"(%x) {k = 2 : i64, axis = 1 : i64} : (tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
    func.return %v : tensor<3x2xf32>
  }
}

// -----

// CHECK-LABEL: func.func @pad_pads_value
// CHECK:         %[[PADS:.*]] = "onnx.Constant"() {value = dense<[0, 1, 0, 2]> : tensor<4xi64>}
// CHECK:         %[[VALUE:.*]] = "onnx.Constant"() {value = dense<1.500000e+00> : tensor<f32>}
// CHECK:         "onnx.Pad"(%{{.*}}, %[[PADS]], %[[VALUE]]) {mode = "constant", operandSegmentSizes = array<i32: 1, 1, 1, 0>}
builtin.module attributes {onnx.opset_import = {"" = 2 : i64}} {
  func.func @pad_pads_value(%x: tensor<2x2xf32>) -> tensor<2x5xf32> {
    %y = "onnx.Pad"(%x) {pads = [0 : i64, 1 : i64, 0 : i64, 2 : i64], value = 1.5 : f32, mode = "constant", operandSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<2x2xf32>) -> tensor<2x5xf32>
    func.return %y : tensor<2x5xf32>
  }
}

// -----

// CHECK-LABEL: func.func @split_split
// CHECK:         %[[SPLIT:.*]] = "onnx.Constant"() {value = dense<[1, 3]> : tensor<2xi64>}
// CHECK:         "onnx.Split"(%{{.*}}, %[[SPLIT]]) {axis = 0 : i64}
builtin.module attributes {onnx.opset_import = {"" = 11 : i64}} {
  func.func @split_split(%x: tensor<4xf32>) -> tensor<3xf32> {
    %a, %b = "onnx.Split"(%x) {axis = 0 : i64, split = [1 : i64, 3 : i64]} : (tensor<4xf32>) -> (tensor<1xf32>, tensor<3xf32>)
    func.return %b : tensor<3xf32>
  }
}

// -----

// CHECK-LABEL: func.func @slice_starts_ends_axes
// CHECK:         %[[STARTS:.*]] = "onnx.Constant"() {value = dense<1> : tensor<1xi64>}
// CHECK:         %[[ENDS:.*]] = "onnx.Constant"() {value = dense<3> : tensor<1xi64>}
// CHECK:         %[[AXES:.*]] = "onnx.Constant"() {value = dense<1> : tensor<1xi64>}
// CHECK:         "onnx.Slice"(%{{.*}}, %[[STARTS]], %[[ENDS]], %[[AXES]]) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>}
builtin.module attributes {onnx.opset_import = {"" = 9 : i64}} {
  func.func @slice_starts_ends_axes(%x: tensor<2x4xf32>) -> tensor<2x2xf32> {
    %y = "onnx.Slice"(%x) {starts = [1 : i64], ends = [3 : i64], axes = [1 : i64], operandSegmentSizes = array<i32: 1, 0, 0, 0, 0>} : (tensor<2x4xf32>) -> tensor<2x2xf32>
    func.return %y : tensor<2x2xf32>
  }
}

// -----

// CHECK-LABEL: func.func @squeeze_unsqueeze_axes
// CHECK:         %[[SAXES:.*]] = "onnx.Constant"() {value = dense<0> : tensor<1xi64>}
// CHECK:         %[[SQ:.*]] = "onnx.Squeeze"(%{{.*}}, %[[SAXES]])
// CHECK:         %[[UAXES:.*]] = "onnx.Constant"() {value = dense<[0, 2]> : tensor<2xi64>}
// CHECK:         "onnx.Unsqueeze"(%[[SQ]], %[[UAXES]])
builtin.module attributes {onnx.opset_import = {"" = 11 : i64}} {
  func.func @squeeze_unsqueeze_axes(%x: tensor<1x3xf32>) -> tensor<1x3x1xf32> {
    %s = "onnx.Squeeze"(%x) {axes = [0 : i64]} : (tensor<1x3xf32>) -> tensor<3xf32>
    %u = "onnx.Unsqueeze"(%s) {axes = [0 : i64, 2 : i64]} : (tensor<3xf32>) -> tensor<1x3x1xf32>
    func.return %u : tensor<1x3x1xf32>
  }
}

// -----

// CHECK-LABEL: func.func @reduce_axes
// CHECK:         %[[AXES:.*]] = "onnx.Constant"() {value = dense<1> : tensor<1xi64>}
// CHECK:         "onnx.ReduceSum"(%{{.*}}, %[[AXES]]) {keepdims = 0 : i64}
// CHECK:         %[[MAXES:.*]] = "onnx.Constant"() {value = dense<0> : tensor<1xi64>}
// CHECK:         "onnx.ReduceMean"(%{{.*}}, %[[MAXES]])
builtin.module attributes {onnx.opset_import = {"" = 11 : i64}} {
  func.func @reduce_axes(%x: tensor<2x3xf32>) -> tensor<f32> {
    %s = "onnx.ReduceSum"(%x) {axes = [1 : i64], keepdims = 0 : i64} : (tensor<2x3xf32>) -> tensor<2xf32>
    %m = "onnx.ReduceMean"(%s) {axes = [0 : i64], keepdims = 0 : i64} : (tensor<2xf32>) -> tensor<f32>
    func.return %m : tensor<f32>
  }
}

// -----

// CHECK-LABEL: func.func @clip_min_max
// CHECK:         %[[MIN:.*]] = "onnx.Constant"() {value = dense<-1.000000e+00> : tensor<f32>}
// CHECK:         %[[MAX:.*]] = "onnx.Constant"() {value = dense<2.000000e+00> : tensor<f32>}
// CHECK:         "onnx.Clip"(%{{.*}}, %[[MIN]], %[[MAX]]) {operandSegmentSizes = array<i32: 1, 1, 1>}
builtin.module attributes {onnx.opset_import = {"" = 6 : i64}} {
  func.func @clip_min_max(%x: tensor<3xf32>) -> tensor<3xf32> {
    %y = "onnx.Clip"(%x) {min = -1.0 : f32, max = 2.0 : f32, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<3xf32>) -> tensor<3xf32>
    func.return %y : tensor<3xf32>
  }
}

// -----

// CHECK-LABEL: func.func @upsample_scales
// CHECK:         %[[SCALES:.*]] = "onnx.Constant"() {value = dense<[1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00]> : tensor<4xf32>}
// CHECK:         "onnx.Upsample"(%{{.*}}, %[[SCALES]]) {mode = "nearest"}
builtin.module attributes {onnx.opset_import = {"" = 7 : i64}} {
  func.func @upsample_scales(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32> {
    %y = "onnx.Upsample"(%x) {scales = [1.0 : f32, 1.0 : f32, 2.0 : f32, 2.0 : f32], mode = "nearest"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
    func.return %y : tensor<1x1x4x4xf32>
  }
}

// -----

// CHECK-LABEL: func.func @reshape_shape
// CHECK:         %[[SHAPE:.*]] = "onnx.Constant"() {value = dense<[3, 2]> : tensor<2xi64>}
// CHECK:         "onnx.Reshape"(%{{.*}}, %[[SHAPE]])
builtin.module attributes {onnx.opset_import = {"" = 1 : i64}} {
  func.func @reshape_shape(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
    %y = "onnx.Reshape"(%x) {shape = [3 : i64, 2 : i64]} : (tensor<2x3xf32>) -> tensor<3x2xf32>
    func.return %y : tensor<3x2xf32>
  }
}

// -----

// An op already in the input form is left as it is.
// CHECK-LABEL: func.func @already_inputs
// CHECK:         "onnx.Unsqueeze"(%{{.*}}, %{{.*}}) : (tensor<3xf32>, tensor<1xi64>)
builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @already_inputs(%x: tensor<3xf32>, %axes: tensor<1xi64>) -> tensor<1x3xf32> {
    %y = "onnx.Unsqueeze"(%x, %axes) : (tensor<3xf32>, tensor<1xi64>) -> tensor<1x3xf32>
    func.return %y : tensor<1x3xf32>
  }
}
