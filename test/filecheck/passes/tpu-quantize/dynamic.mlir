// RUN: mlconv-opt %s -p tpu-quantize --split-input-file | filecheck %s

// Dynamic range: the data's range computed at run time (ReduceMin/ReduceMax). The input is core-quantize{mode=dynamic},core-to-tpu of
// three cases: a 3x3 stride-2 padded convolution, a depthwise one, a MatMul.

// -----

// CHECK-LABEL: func.func @conv3x3
// CHECK:         %[[LO:.*]] = "tpu.min"
// CHECK:         %[[HI:.*]] = "tpu.max"
// CHECK-COUNT-9: "tpu.dot_general"({{.*}}) {{{.*}}preferred_element_type = i32{{.*}}}
// CHECK-NOT:     tpu.fake_quantize
// CHECK:         tpu.yield
func.func @conv3x3(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x2x5x5xf32>):
    %2 = tpu.constant {value = dense<[[[[5.000000e-01, -1.000000e+00, 2.500000e-01], [0.000000e+00, 1.000000e+00, 5.000000e-01], [2.500000e-01, 1.250000e-01, -5.000000e-01]], [[1.000000e+00, 5.000000e-01, 0.000000e+00], [-2.500000e-01, 7.500000e-01, 5.000000e-01], [0.000000e+00, 0.000000e+00, 1.000000e+00]]], [[[-5.000000e-01, 1.000000e+00, 5.000000e-01], [2.500000e-01, 5.000000e-01, -1.000000e+00], [0.000000e+00, 5.000000e-01, 5.000000e-01]], [[5.000000e-01, -5.000000e-01, 5.000000e-01], [1.000000e+00, 2.500000e-01, 0.000000e+00], [5.000000e-01, 1.250000e-01, -2.500000e-01]]]]> : tensor<2x2x3x3xf32>} : tensor<2x2x3x3xf32>
    %3 = tpu.constant {value = dense<-1.000000e+00> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
    %4 = tpu.constant {value = dense<1.000000e+00> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
    %5 = "tpu.fake_quantize"(%2, %3, %4, %3, %4) {levels = 255 : i64} : (tensor<2x2x3x3xf32>, tensor<2x1x1x1xf32>, tensor<2x1x1x1xf32>, tensor<2x1x1x1xf32>, tensor<2x1x1x1xf32>) -> tensor<2x2x3x3xf32>
    %6 = "tpu.reduce_min"(%1) {axes = array<i64: 0, 1, 2, 3>} : (tensor<1x2x5x5xf32>) -> tensor<f32>
    %7 = "tpu.reduce_max"(%1) {axes = array<i64: 0, 1, 2, 3>} : (tensor<1x2x5x5xf32>) -> tensor<f32>
    %8 = tpu.constant {value = dense<0.000000e+00> : tensor<1xf32>} : tensor<1xf32>
    %9 = "tpu.min"(%6, %8) : (tensor<f32>, tensor<1xf32>) -> tensor<1xf32>
    %10 = tpu.constant {value = dense<1.000000e-06> : tensor<1xf32>} : tensor<1xf32>
    %11 = "tpu.max"(%7, %10) : (tensor<f32>, tensor<1xf32>) -> tensor<1xf32>
    %12 = "tpu.fake_quantize"(%1, %9, %11, %9, %11) {levels = 256 : i64} : (tensor<1x2x5x5xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x5x5xf32>
    %13 = "tpu.conv_general_dilated"(%12, %5) {window_strides = array<i64: 2, 2>, padding = [array<i64: 1, 1>, array<i64: 1, 1>], lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, dimension_numbers = {__class__ = "ConvDimensionNumbers", lhs_spec = array<i64: 0, 1, 2, 3>, rhs_spec = array<i64: 0, 1, 2, 3>, out_spec = array<i64: 0, 1, 2, 3>}, feature_group_count = 1 : i64, batch_group_count = 1 : i64, precision, preferred_element_type = f32, out_sharding} : (tensor<1x2x5x5xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    tpu.yield %13 : tensor<1x2x3x3xf32>
  }) {device = "tpu"} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
  func.return %0 : tensor<1x2x3x3xf32>
}

// -----

// CHECK-LABEL: func.func @depthwise
// CHECK-COUNT-9: "tpu.mul"(%{{.*}}, %{{.*}}) {{.*}} : (tensor<1x2x3x3xi32>, tensor<1x2x1x1xi32>) -> tensor<1x2x3x3xi32>
// CHECK-NOT:     tpu.fake_quantize
// CHECK:         tpu.yield
func.func @depthwise(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x2x3x3xf32>):
    %2 = tpu.constant {value = dense<[[[[[5.000000e-01, -1.000000e+00, 2.500000e-01], [0.000000e+00, 1.000000e+00, 5.000000e-01], [2.500000e-01, 1.250000e-01, -5.000000e-01]]]], [[[[1.000000e+00, 5.000000e-01, 0.000000e+00], [-2.500000e-01, 7.500000e-01, 5.000000e-01], [0.000000e+00, 0.000000e+00, 1.000000e+00]]]]]> : tensor<2x1x1x3x3xf32>} : tensor<2x1x1x3x3xf32>
    %3 = tpu.constant {value = dense<-1.000000e+00> : tensor<2x1x1x1x1xf32>} : tensor<2x1x1x1x1xf32>
    %4 = tpu.constant {value = dense<1.000000e+00> : tensor<2x1x1x1x1xf32>} : tensor<2x1x1x1x1xf32>
    %5 = "tpu.fake_quantize"(%2, %3, %4, %3, %4) {levels = 255 : i64} : (tensor<2x1x1x3x3xf32>, tensor<2x1x1x1x1xf32>, tensor<2x1x1x1x1xf32>, tensor<2x1x1x1x1xf32>, tensor<2x1x1x1x1xf32>) -> tensor<2x1x1x3x3xf32>
    %6 = "tpu.reduce_min"(%1) {axes = array<i64: 0, 1, 2, 3>} : (tensor<1x2x3x3xf32>) -> tensor<f32>
    %7 = "tpu.reduce_max"(%1) {axes = array<i64: 0, 1, 2, 3>} : (tensor<1x2x3x3xf32>) -> tensor<f32>
    %8 = tpu.constant {value = dense<0.000000e+00> : tensor<1xf32>} : tensor<1xf32>
    %9 = "tpu.min"(%6, %8) : (tensor<f32>, tensor<1xf32>) -> tensor<1xf32>
    %10 = tpu.constant {value = dense<1.000000e-06> : tensor<1xf32>} : tensor<1xf32>
    %11 = "tpu.max"(%7, %10) : (tensor<f32>, tensor<1xf32>) -> tensor<1xf32>
    %12 = "tpu.fake_quantize"(%1, %9, %11, %9, %11) {levels = 256 : i64} : (tensor<1x2x3x3xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x3x3xf32>
    %13 = "tpu.reshape"(%5) {new_sizes = array<i64: 2, 1, 3, 3>, dimensions, sharding} : (tensor<2x1x1x3x3xf32>) -> tensor<2x1x3x3xf32>
    %14 = "tpu.conv_general_dilated"(%12, %13) {window_strides = array<i64: 1, 1>, padding = [array<i64: 1, 1>, array<i64: 1, 1>], lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, dimension_numbers = {__class__ = "ConvDimensionNumbers", lhs_spec = array<i64: 0, 1, 2, 3>, rhs_spec = array<i64: 0, 1, 2, 3>, out_spec = array<i64: 0, 1, 2, 3>}, feature_group_count = 2 : i64, batch_group_count = 1 : i64, precision, preferred_element_type = f32, out_sharding} : (tensor<1x2x3x3xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x3x3xf32>
    tpu.yield %14 : tensor<1x2x3x3xf32>
  }) {device = "tpu"} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  func.return %0 : tensor<1x2x3x3xf32>
}

// -----

// CHECK-LABEL: func.func @matmul
// CHECK:         "tpu.dot_general"(%{{.*}}, %{{.*}}) {{{.*}}preferred_element_type = i32{{.*}}} : (tensor<2x3xi8>, tensor<3x2xi8>) -> tensor<2x2xi32>
// CHECK:         tpu.yield
func.func @matmul(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<2x3xf32>):
    %2 = tpu.constant {value = dense<[[1.000000e+00, -2.000000e+00], [5.000000e-01, 4.000000e+00], [1.000000e+00, -3.000000e+00]]> : tensor<3x2xf32>} : tensor<3x2xf32>
    %3 = tpu.constant {value = dense<[[-1.000000e+00, -4.000000e+00]]> : tensor<1x2xf32>} : tensor<1x2xf32>
    %4 = tpu.constant {value = dense<[[1.000000e+00, 4.000000e+00]]> : tensor<1x2xf32>} : tensor<1x2xf32>
    %5 = "tpu.fake_quantize"(%2, %3, %4, %3, %4) {levels = 255 : i64} : (tensor<3x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<3x2xf32>
    %6 = "tpu.reduce_min"(%1) {axes = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<f32>
    %7 = "tpu.reduce_max"(%1) {axes = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<f32>
    %8 = tpu.constant {value = dense<0.000000e+00> : tensor<1xf32>} : tensor<1xf32>
    %9 = "tpu.min"(%6, %8) : (tensor<f32>, tensor<1xf32>) -> tensor<1xf32>
    %10 = tpu.constant {value = dense<1.000000e-06> : tensor<1xf32>} : tensor<1xf32>
    %11 = "tpu.max"(%7, %10) : (tensor<f32>, tensor<1xf32>) -> tensor<1xf32>
    %12 = "tpu.fake_quantize"(%1, %9, %11, %9, %11) {levels = 256 : i64} : (tensor<2x3xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3xf32>
    %13 = "tpu.dot_general"(%12, %5) {dimension_numbers = [[array<i64: 1>, array<i64: 0>], [array<i64>, array<i64>]], precision, preferred_element_type = f32, out_sharding} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
    tpu.yield %13 : tensor<2x2xf32>
  }) {device = "tpu"} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  func.return %0 : tensor<2x2xf32>
}
