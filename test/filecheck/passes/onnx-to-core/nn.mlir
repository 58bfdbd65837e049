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

// -----

// Dropout in training mode (decided at run time) with a seed: U drawn at compile time from
// numpy's RandomState(0) as onnx's reference draws it, mask U >= ratio, kept values scaled by
// 1 / (1 - ratio); with training_mode false, the input and an all-true mask.
// CHECK-LABEL: func.func @dropout_training_seeded
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>, %[[RATIO:.*]]: tensor<f32>, %[[TRAINING:.*]]: tensor<i1>)
// CHECK:         %[[U:.*]] = core.Constant {value = dense<{{\[\[}}0.548813462, 0.715189338, 0.602763355], [0.544883132, 0.423654795, 0.64589411]]> : tensor<2x3xf32>}
// CHECK:         %[[KEEP:.*]] = "core.GreaterEqual"(%[[U]], %[[RATIO]])
// CHECK:         %[[ONE:.*]] = core.Constant {value = dense<1.000000e+00> : tensor<f32>}
// CHECK:         %[[SCALE:.*]] = "core.Divide"(%[[ONE]], %{{.*}})
// CHECK:         %[[KEPT:.*]] = "core.Multiply"(%[[X]], %{{.*}})
// CHECK:         %[[SCALED:.*]] = "core.Multiply"(%[[KEPT]], %[[SCALE]])
// CHECK:         %[[Y:.*]] = "core.Select"(%[[TRAINING]], %[[SCALED]], %[[X]])
// CHECK:         %[[MASK:.*]] = "core.Select"(%[[TRAINING]], %[[KEEP]], %{{.*}})
// CHECK:         func.return %[[Y]], %[[MASK]] : tensor<2x3xf32>, tensor<2x3xi1>
builtin.module attributes {onnx.opset_import = {"" = 22 : i64}} {
  func.func @dropout_training_seeded(%x: tensor<2x3xf32>, %ratio: tensor<f32>, %training: tensor<i1>) -> (tensor<2x3xf32>, tensor<2x3xi1>) {
    %y, %mask = "onnx.Dropout"(%x, %ratio, %training) {seed = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1>} : (tensor<2x3xf32>, tensor<f32>, tensor<i1>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
    func.return %y, %mask : tensor<2x3xf32>, tensor<2x3xi1>
  }
}

// -----

// BatchNormalization-7 with spatial = 0: statistics per element (C x D1), broadcast over N.
// CHECK-LABEL: func.func @batch_norm_spatial_0
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>, %[[S:.*]]: tensor<3x4xf32>, %[[B:.*]]: tensor<3x4xf32>, %[[M:.*]]: tensor<3x4xf32>, %[[V:.*]]: tensor<3x4xf32>)
// CHECK-NOT:     core.BatchNormInference
// CHECK:         %[[VE:.*]] = "core.Add"(%[[V]], %{{.*}}) : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
// CHECK:         %[[STD:.*]] = "core.Sqrt"(%[[VE]])
// CHECK:         %[[C:.*]] = "core.Subtract"(%[[X]], %[[M]]) : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
// CHECK:         %[[K:.*]] = "core.Divide"(%[[S]], %[[STD]])
// CHECK:         %[[N:.*]] = "core.Multiply"(%[[C]], %[[K]])
// CHECK:         %[[Y:.*]] = "core.Add"(%[[N]], %[[B]]) : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
// CHECK:         func.return %[[Y]]
builtin.module attributes {onnx.opset_import = {"" = 7 : i64}} {
  func.func @batch_norm_spatial_0(%x: tensor<2x3x4xf32>, %s: tensor<3x4xf32>, %b: tensor<3x4xf32>, %m: tensor<3x4xf32>, %v: tensor<3x4xf32>) -> tensor<2x3x4xf32> {
    %y = "onnx.BatchNormalization"(%x, %s, %b, %m, %v) {spatial = 0 : i64, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0>} : (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
    func.return %y : tensor<2x3x4xf32>
  }
}

// -----

// BatchNormalization-15 in training mode: normalized with the batch's own mean and population
// variance over N and the spatial dims; the running statistics come out as
// running * momentum + batch * (1 - momentum).
// CHECK-LABEL: func.func @batch_norm_training
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>, %[[S:.*]]: tensor<3xf32>, %[[B:.*]]: tensor<3xf32>, %[[M:.*]]: tensor<3xf32>, %[[V:.*]]: tensor<3xf32>)
// CHECK:         %[[AXES:.*]] = core.Constant {value = dense<[0, 2]> : tensor<2xi64>}
// CHECK:         %[[MEAN:.*]] = "core.ReduceMean"(%[[X]], %[[AXES]]) {keep_dims = true} : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<1x3x1xf32>
// CHECK:         %[[C:.*]] = "core.Subtract"(%[[X]], %[[MEAN]])
// CHECK:         %[[SQ:.*]] = "core.Multiply"(%[[C]], %[[C]])
// CHECK:         %[[VAR:.*]] = "core.ReduceMean"(%[[SQ]], %[[AXES]]) {keep_dims = true}
// CHECK:         %[[VE:.*]] = "core.Add"(%[[VAR]], %{{.*}})
// CHECK:         %[[STD:.*]] = "core.Sqrt"(%[[VE]])
// CHECK:         %[[CS:.*]] = "core.Multiply"(%[[C]], %{{.*}})
// CHECK:         %[[N:.*]] = "core.Divide"(%[[CS]], %[[STD]])
// CHECK:         %[[Y:.*]] = "core.Add"(%[[N]], %{{.*}})
// CHECK:         %[[KEPT:.*]] = core.Constant {value = dense<7.500000e-01> : tensor<f32>}
// CHECK:         %[[NEW:.*]] = core.Constant {value = dense<2.500000e-01> : tensor<f32>}
// CHECK:         %[[BM:.*]] = "core.Reshape"(%[[MEAN]], %{{.*}}) : (tensor<1x3x1xf32>, tensor<1xi64>) -> tensor<3xf32>
// CHECK:         %[[RM:.*]] = "core.Multiply"(%[[M]], %[[KEPT]])
// CHECK:         %[[NM:.*]] = "core.Multiply"(%[[BM]], %[[NEW]])
// CHECK:         %[[OM:.*]] = "core.Add"(%[[RM]], %[[NM]])
// CHECK:         %[[BV:.*]] = "core.Reshape"(%[[VAR]], %{{.*}})
// CHECK:         %[[RV:.*]] = "core.Multiply"(%[[V]], %[[KEPT]])
// CHECK:         %[[OV:.*]] = "core.Add"
// CHECK:         func.return %[[Y]], %[[OM]], %[[OV]]
builtin.module attributes {onnx.opset_import = {"" = 15 : i64}} {
  func.func @batch_norm_training(%x: tensor<2x3x4xf32>, %s: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>) {
    %y:3 = "onnx.BatchNormalization"(%x, %s, %b, %m, %v) {training_mode = 1 : i64, momentum = 0.75 : f32, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
    func.return %y#0, %y#1, %y#2 : tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>
  }
}

// -----

// Col2Im-18: one core.Col2Im; ONNX's pads (begins then ends) split into pads_begin/pads_end,
// and the image and block shapes (model inputs here) stay static operands, bound per call.
// CHECK-LABEL: func.func @col2im
// CHECK-SAME:    (%[[X:.*]]: tensor<1x5x15xf32>, %[[I:.*]]: tensor<2xi64>, %[[B:.*]]: tensor<2xi64>)
// CHECK:         "core.Col2Im"(%[[X]], %[[I]], %[[B]]) {strides = array<i64>, pads_begin = array<i64: 0, 1>, pads_end = array<i64: 0, 1>, dilations = array<i64>} : (tensor<1x5x15xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x?x?x?xf32>
builtin.module attributes {onnx.opset_import = {"" = 18 : i64}} {
  func.func @col2im(%x: tensor<1x5x15xf32>, %image: tensor<2xi64>, %block: tensor<2xi64>) -> tensor<?x?x?x?xf32> {
    %y = "onnx.Col2Im"(%x, %image, %block) {pads = [0 : i64, 1 : i64, 0 : i64, 1 : i64]} : (tensor<1x5x15xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x?x?x?xf32>
    func.return %y : tensor<?x?x?x?xf32>
  }
}

// -----

// MaxPool's Indices (storage_order 1: column-major over H, W): per kernel tap, last to first,
// a strided slice of the input (padded with -inf) is compared with the pooled maximum and
// selects that tap's flat indices, so the first tap holding the maximum wins. Tap (1, 1) of
// output (0, 0) is input (1, 1): 1 * 5 + 1 = 6 column-major.
// CHECK-LABEL: func.func @max_pool_indices
// CHECK:         %[[Y:.*]] = "core.MaxPool"(%{{.*}})
// CHECK:         %[[P:.*]] = "core.Pad"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {pad_mode = "constant"}
// CHECK:         %[[S11:.*]] = "core.Slice"(%[[P]], {{.*}}) -> tensor<1x1x2x2xf32>
// CHECK:         %[[I11:.*]] = core.Constant {value = dense<{{\[\[\[\[}}6, 16], [8, 18]]]]> : tensor<1x1x2x2xi64>}
// CHECK:         "core.Equal"(%[[S11]], %[[Y]])
// CHECK-COUNT-3: "core.Select"
// CHECK:         func.return %[[Y]], %{{.*}}
builtin.module attributes {onnx.opset_import = {"" = 22 : i64}} {
  func.func @max_pool_indices(%x: tensor<1x1x5x5xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>) {
    %y, %i = "onnx.MaxPool"(%x) {kernel_shape = [2 : i64, 2 : i64], strides = [2 : i64, 2 : i64], storage_order = 1 : i64} : (tensor<1x1x5x5xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>)
    func.return %y, %i : tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>
  }
}
