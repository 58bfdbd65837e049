// RUN: mlconv-opt %s --pass-pipeline='builtin.module(onnx-to-core)' --split-input-file | filecheck %s

// ConvTranspose with group 2: W (C_in x C_out/group x k) is reshaped to G x C_in/G x C_out/G x k.
// CHECK-LABEL: func.func @conv_transpose_group
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x3x3xf32>, %[[W:.*]]: tensor<4x1x3x3xf32>)
// CHECK-NOT:     onnx.
// CHECK:         %[[SHAPE:.*]] = core.Constant {value = dense<[2, 2, 1, 3, 3]> : tensor<5xi64>}
// CHECK:         %[[F:.*]] = "core.Reshape"(%[[W]], %[[SHAPE]]) : (tensor<4x1x3x3xf32>, tensor<5xi64>) -> tensor<2x2x1x3x3xf32>
// CHECK:         %[[Y:.*]] = "core.GroupConvolutionBackpropData"(%[[X]], %[[F]]) {strides = array<i64: 2, 2>, {{.*}}output_padding = array<i64: 1, 1>} : (tensor<1x4x3x3xf32>, tensor<2x2x1x3x3xf32>) -> tensor<1x2x8x8xf32>
// CHECK:         func.return %[[Y]] : tensor<1x2x8x8xf32>
builtin.module attributes {onnx.opset_import = {"" = 11 : i64}} {
  func.func @conv_transpose_group(%x: tensor<1x4x3x3xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x2x8x8xf32> {
    %y = "onnx.ConvTranspose"(%x, %w) {group = 2 : i64, output_padding = [1 : i64, 1 : i64], strides = [2 : i64, 2 : i64]} : (tensor<1x4x3x3xf32>, tensor<4x1x3x3xf32>) -> tensor<1x2x8x8xf32>
    func.return %y : tensor<1x2x8x8xf32>
  }
}

// -----

// Resize with scales (no roi, no sizes): Interpolate in scales mode, ONNX linear as linear_onnx.
// CHECK-LABEL: func.func @resize_linear_align_corners
// CHECK-SAME:    (%[[X:.*]]: tensor<1x1x4x4xf32>)
// CHECK-NOT:     onnx.
// CHECK:         %[[S:.*]] = core.Constant {value = dense<[1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00]> : tensor<4xf32>}
// CHECK:         %[[Y:.*]] = "core.Interpolate"(%[[X]], %[[S]]) {{.*}}mode = "linear_onnx", shape_calculation_mode = "scales", coordinate_transformation_mode = "align_corners"{{.*}} : (tensor<1x1x4x4xf32>, tensor<4xf32>) -> tensor<1x1x8x8xf32>
// CHECK:         func.return %[[Y]] : tensor<1x1x8x8xf32>
builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @resize_linear_align_corners(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x8x8xf32> {
    %scales = "onnx.Constant"() {value = dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
    %y = "onnx.Resize"(%x, %scales) {coordinate_transformation_mode = "align_corners", mode = "linear", operandSegmentSizes = array<i32: 1, 0, 1, 0>} : (tensor<1x1x4x4xf32>, tensor<4xf32>) -> tensor<1x1x8x8xf32>
    func.return %y : tensor<1x1x8x8xf32>
  }
}

// -----

// LSTM with only Y_h: X to batch-major, gates i,o,f,c reordered to f,i,c,o, zero states and
// bias; Y_h back to dirs x batch x hidden.
// CHECK-LABEL: func.func @lstm_yh_only
// CHECK-SAME:    (%[[X:.*]]: tensor<3x2x5xf32>, %[[W:.*]]: tensor<1x16x5xf32>, %[[R:.*]]: tensor<1x16x4xf32>)
// CHECK-NOT:     onnx.
// CHECK:         %[[XB:.*]] = "core.Transpose"(%[[X]], %{{.*}}) : (tensor<3x2x5xf32>, tensor<3xi64>) -> tensor<2x3x5xf32>
// CHECK:         %[[ORDER:.*]] = core.Constant {value = dense<[8, 9, 10, 11, 0, 1, 2, 3, 12, 13, 14, 15, 4, 5, 6, 7]> : tensor<16xi64>}
// CHECK:         %[[B:.*]] = "core.Gather"(%{{.*}}, %[[ORDER]], %{{.*}}) : (tensor<1x16xf32>, tensor<16xi64>, tensor<i64>) -> tensor<1x16xf32>
// CHECK:         %[[H0:.*]] = core.Constant {value = dense<0.000000e+00> : tensor<2x1x4xf32>}
// CHECK:         %[[C0:.*]] = core.Constant {value = dense<0.000000e+00> : tensor<2x1x4xf32>}
// CHECK:         %[[WF:.*]] = "core.Gather"(%[[W]], %[[ORDER]], %{{.*}})
// CHECK:         %[[RF:.*]] = "core.Gather"(%[[R]], %[[ORDER]], %{{.*}})
// CHECK:         %{{.*}}, %[[HO:.*]], %{{.*}} = "core.LSTMSequence"(%[[XB]], %[[H0]], %[[C0]], %[[WF]], %[[RF]], %[[B]]) {{.*}}hidden_size = 4 : i64, direction = "forward"{{.*}} -> (tensor<2x1x3x4xf32>, tensor<2x1x4xf32>, tensor<2x1x4xf32>)
// CHECK:         %[[YH:.*]] = "core.Transpose"(%[[HO]], %{{.*}}) : (tensor<2x1x4xf32>, tensor<3xi64>) -> tensor<1x2x4xf32>
// CHECK:         func.return %[[YH]] : tensor<1x2x4xf32>
builtin.module attributes {onnx.opset_import = {"" = 14 : i64}} {
  func.func @lstm_yh_only(%x: tensor<3x2x5xf32>, %w: tensor<1x16x5xf32>, %r: tensor<1x16x4xf32>) -> tensor<1x2x4xf32> {
    %yh = "onnx.LSTM"(%x, %w, %r) {hidden_size = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 1, 0>} : (tensor<3x2x5xf32>, tensor<1x16x5xf32>, tensor<1x16x4xf32>) -> tensor<1x2x4xf32>
    func.return %yh : tensor<1x2x4xf32>
  }
}
