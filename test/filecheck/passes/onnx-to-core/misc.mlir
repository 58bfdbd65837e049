// RUN: mlconv-opt %s --pass-pipeline='builtin.module(onnx-to-core)' --split-input-file | filecheck %s

// GridSample-22's "cubic" is core.GridSample's "bicubic"; the other attributes carry over.
// CHECK-LABEL: func.func @grid_sample_bicubic_border
// CHECK-SAME:    (%[[X:.*]]: tensor<1x1x4x4xf32>, %[[G:.*]]: tensor<1x6x6x2xf32>)
// CHECK-NOT:     onnx.
// CHECK:         %[[Y:.*]] = "core.GridSample"(%[[X]], %[[G]]) {align_corners = true, mode = "bicubic", padding_mode = "border"} : (tensor<1x1x4x4xf32>, tensor<1x6x6x2xf32>) -> tensor<1x1x6x6xf32>
// CHECK:         func.return %[[Y]] : tensor<1x1x6x6xf32>
builtin.module attributes {onnx.opset_import = {"" = 22 : i64}} {
  func.func @grid_sample_bicubic_border(%x: tensor<1x1x4x4xf32>, %g: tensor<1x6x6x2xf32>) -> tensor<1x1x6x6xf32> {
    %y = "onnx.GridSample"(%x, %g) {align_corners = 1 : i64, mode = "cubic", padding_mode = "border"} : (tensor<1x1x4x4xf32>, tensor<1x6x6x2xf32>) -> tensor<1x1x6x6xf32>
    func.return %y : tensor<1x1x6x6xf32>
  }
}

// -----

// Hardmax: 1 where x equals its maximum along the axis and no earlier element did.
// CHECK-LABEL: func.func @hardmax_axis1
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NOT:     onnx.
// CHECK:         %[[AXIS:.*]] = core.Constant {value = dense<1> : tensor<i64>}
// CHECK:         %[[TOP:.*]] = "core.ReduceMax"(%[[X]], %[[AXIS]]) {keep_dims = true} : (tensor<2x3xf32>, tensor<i64>) -> tensor<2x1xf32>
// CHECK:         %[[IS_MAX:.*]] = "core.Equal"(%[[X]], %[[TOP]])
// CHECK:         %[[COUNT_I:.*]] = "core.Convert"(%[[IS_MAX]]) {destination_type = i64}
// CHECK:         %[[COUNT:.*]] = "core.CumSum"(%[[COUNT_I]], %[[AXIS]])
// CHECK:         %[[ONE:.*]] = core.Constant {value = dense<1> : tensor<i64>}
// CHECK:         %[[FIRST:.*]] = "core.Equal"(%[[COUNT]], %[[ONE]])
// CHECK:         %[[HARD:.*]] = "core.LogicalAnd"(%[[IS_MAX]], %[[FIRST]])
// CHECK:         %[[Y:.*]] = "core.Convert"(%[[HARD]]) {destination_type = f32} : (tensor<2x3xi1>) -> tensor<2x3xf32>
// CHECK:         func.return %[[Y]] : tensor<2x3xf32>
builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @hardmax_axis1(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %y = "onnx.Hardmax"(%x) {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %y : tensor<2x3xf32>
  }
}

// -----

// NonMaxSuppression: the selected (batch, class, box) triples are i64 whatever the boxes'
// element type; their count depends on the scores, so the first dim stays `?`.
// CHECK-LABEL: func.func @non_max_suppression_indices_are_i64
// CHECK-NOT:     onnx.
// CHECK:         %[[SEL:.*]] = "core.NonMaxSuppression"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}> {center_point_box = false} : (tensor<1x6x4xf32>, tensor<1x1x6xf32>, tensor<1xi64>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x3xi64>
// CHECK:         func.return %[[SEL]] : tensor<?x3xi64>
builtin.module attributes {onnx.opset_import = {"" = 17 : i64}} {
  func.func @non_max_suppression_indices_are_i64(%b: tensor<1x6x4xf32>, %s: tensor<1x1x6xf32>) -> tensor<?x3xi64> {
    %m = "onnx.Constant"() {value = dense<3> : tensor<1xi64>} : () -> tensor<1xi64>
    %i = "onnx.Constant"() {value = dense<5.000000e-01> : tensor<1xf32>} : () -> tensor<1xf32>
    %t = "onnx.Constant"() {value = dense<0.000000e+00> : tensor<1xf32>} : () -> tensor<1xf32>
    %sel = "onnx.NonMaxSuppression"(%b, %s, %m, %i, %t) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<1x6x4xf32>, tensor<1x1x6xf32>, tensor<1xi64>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x3xi64>
    func.return %sel : tensor<?x3xi64>
  }
}

// -----

// TfIdfVectorizer: the pool holds unigram 7 (id 0, below min_gram_length: never counted) and
// bigram (3, 4) (id 1 -> output 0). The bigram is counted at skip distances 1 and 2: per
// distance the row's two shifted slices are compared with the gram's items, and-ed, summed
// over positions, and a one-hot MatMul puts the counts at output index 0; TFIDF weighs them.
// CHECK-LABEL: func.func @tfidf
// CHECK:         %[[X:.*]] = "core.Convert"(%{{.*}}) {destination_type = i64} : (tensor<2x5xi32>) -> tensor<2x5xi64>
// CHECK:         "core.Slice"(%[[X]], {{.*}}) -> tensor<2x4xi64>
// CHECK:         %[[A1:.*]] = "core.Equal"(%{{.*}}, %{{.*}}) : (tensor<2x4x1xi64>, tensor<1xi64>) -> tensor<2x4x1xi1>
// CHECK:         "core.Slice"(%[[X]], {{.*}}) -> tensor<2x4xi64>
// CHECK:         %[[B1:.*]] = "core.Equal"
// CHECK:         %[[H1:.*]] = "core.LogicalAnd"(%[[A1]], %[[B1]])
// CHECK:         %[[F1:.*]] = "core.Convert"(%[[H1]]) {destination_type = f32}
// CHECK:         %[[C1:.*]] = "core.ReduceSum"(%[[F1]], %{{.*}}) {keep_dims = false} : (tensor<2x4x1xf32>, tensor<1xi64>) -> tensor<2x1xf32>
// CHECK:         %[[ONEHOT:.*]] = core.Constant {value = dense<{{\[\[}}1.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<1x3xf32>}
// CHECK:         %[[O1:.*]] = "core.MatMul"(%[[C1]], %[[ONEHOT]])
// CHECK:         "core.Slice"(%[[X]], {{.*}}) -> tensor<2x3xi64>
// CHECK:         "core.Slice"(%[[X]], {{.*}}) -> tensor<2x3xi64>
// CHECK:         %[[O2:.*]] = "core.MatMul"
// CHECK:         %[[T:.*]] = "core.Add"(%[[O1]], %[[O2]])
// CHECK:         %[[W:.*]] = core.Constant {value = dense<[5.000000e-01, 1.000000e+00, 2.000000e+00]> : tensor<3xf32>}
// CHECK:         %[[Y:.*]] = "core.Multiply"(%[[T]], %[[W]])
// CHECK:         func.return %[[Y]]
builtin.module attributes {onnx.opset_import = {"" = 17 : i64}} {
  func.func @tfidf(%x: tensor<2x5xi32>) -> tensor<2x3xf32> {
    %y = "onnx.TfIdfVectorizer"(%x) {mode = "TFIDF", min_gram_length = 2 : i64, max_gram_length = 2 : i64, max_skip_count = 1 : i64, ngram_counts = [0 : i64, 1 : i64], ngram_indexes = [2 : i64, 0 : i64], pool_int64s = [7 : i64, 3 : i64, 4 : i64], weights = [0.5 : f32, 1.0 : f32, 2.0 : f32]} : (tensor<2x5xi32>) -> tensor<2x3xf32>
    func.return %y : tensor<2x3xf32>
  }
}

// -----

// ImageDecoder: one core.ImageDecoder with the pixel format; its bytes (a model input) are a
// static operand, bound per call.
// CHECK-LABEL: func.func @image_decoder
// CHECK:         "core.ImageDecoder"(%{{.*}}) {pixel_format = "Grayscale"} : (tensor<?xui8>) -> tensor<?x?x1xui8>
builtin.module attributes {onnx.opset_import = {"" = 20 : i64}} {
  func.func @image_decoder(%bytes: tensor<?xui8>) -> tensor<?x?x1xui8> {
    %y = "onnx.ImageDecoder"(%bytes) {pixel_format = "Grayscale"} : (tensor<?xui8>) -> tensor<?x?x1xui8>
    func.return %y : tensor<?x?x1xui8>
  }
}

// -----

// MelWeightMatrix: one core.MelWeightMatrix of the five scalars, typed by output_datatype.
// CHECK-LABEL: func.func @mel_weight_matrix
// CHECK:         "core.MelWeightMatrix"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {output_type = f64} : (tensor<i64>, tensor<i64>, tensor<i64>, tensor<f32>, tensor<f32>) -> tensor<?x?xf64>
builtin.module attributes {onnx.opset_import = {"" = 17 : i64}} {
  func.func @mel_weight_matrix(%bins: tensor<i64>, %n: tensor<i64>, %rate: tensor<i64>, %low: tensor<f32>, %high: tensor<f32>) -> tensor<?x?xf64> {
    %m = "onnx.MelWeightMatrix"(%bins, %n, %rate, %low, %high) {output_datatype = 11 : i64} : (tensor<i64>, tensor<i64>, tensor<i64>, tensor<f32>, tensor<f32>) -> tensor<?x?xf64>
    func.return %m : tensor<?x?xf64>
  }
}

// -----

// DeformConv: the offsets (n, offset groups, kh, kw, y/x, oh, ow) are added to the regular
// sampling places and normalized for GridSample with align_corners ((x, y) order, last dim);
// one GridSample samples every tap at every output position, and one Einsum contracts the
// samples with W per group.
// CHECK-LABEL: func.func @deform_conv
// CHECK:         %[[OFF:.*]] = "core.Reshape"(%{{.*}}, %{{.*}}) : (tensor<1x8x3x3xf32>, tensor<7xi64>) -> tensor<1x1x2x2x2x3x3xf32>
// CHECK:         %[[Y:.*]] = "core.Gather"(%[[OFF]], %{{.*}}, %{{.*}}) {{.*}} -> tensor<1x1x2x2x3x3xf32>
// CHECK:         "core.Add"(%[[Y]], %{{.*}}) : (tensor<1x1x2x2x3x3xf32>, tensor<2x2x3x3xf32>)
// CHECK:         %[[X:.*]] = "core.Gather"(%[[OFF]], %{{.*}}, %{{.*}})
// CHECK:         %[[G:.*]] = "core.Concat"(%{{.*}}, %{{.*}}) {axis = -1 : i64} {{.*}} -> tensor<1x1x2x2x3x3x2xf32>
// CHECK:         %[[GRID:.*]] = "core.Reshape"(%[[G]], %{{.*}}) {{.*}} -> tensor<1x12x3x2xf32>
// CHECK:         %[[S:.*]] = "core.GridSample"(%{{.*}}, %[[GRID]]) {align_corners = true, mode = "bilinear", padding_mode = "zeros"} : (tensor<1x2x4x4xf32>, tensor<1x12x3x2xf32>) -> tensor<1x2x12x3xf32>
// CHECK:         "core.Einsum"(%{{.*}}, %{{.*}}) {equation = "ngcshw,gocs->ngohw"} : (tensor<1x1x2x4x3x3xf32>, tensor<1x3x2x4xf32>) -> tensor<1x1x3x3x3xf32>
builtin.module attributes {onnx.opset_import = {"" = 22 : i64}} {
  func.func @deform_conv(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x2x2xf32>, %off: tensor<1x8x3x3xf32>) -> tensor<1x3x3x3xf32> {
    %y = "onnx.DeformConv"(%x, %w, %off) {kernel_shape = [2 : i64, 2 : i64], operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<1x2x4x4xf32>, tensor<3x2x2x2xf32>, tensor<1x8x3x3xf32>) -> tensor<1x3x3x3xf32>
    func.return %y : tensor<1x3x3x3xf32>
  }
}
