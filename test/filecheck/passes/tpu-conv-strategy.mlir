// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-conv-strategy{device=cpu})' --split-input-file | filecheck %s
// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-conv-strategy{device=gpu})' --split-input-file | filecheck %s --check-prefix=GPU
// RUN: not mlconv-opt %s -p 'tpu-conv-strategy{device=npu}' 2>&1 | filecheck %s --check-prefix=BAD

// BAD: error: tpu-conv-strategy: unknown device 'npu' (expected cpu, gpu or tpu)

// Depthwise 3x3 (groups = channels): shifted multiply-adds in NHWC, one strided slice of the
// padded input per tap; no convolution is left.

// CHECK-LABEL: func.func @depthwise
// CHECK:         %[[T:.*]] = "tpu.transpose"(%{{.*}}) {permutation = array<i64: 0, 2, 3, 1>}
// CHECK:         %[[P:.*]] = "tpu.pad"(%[[T]], %{{.*}}) {padding_config = [array<i64: 0, 0, 0>, array<i64: 1, 1, 0>, array<i64: 1, 1, 0>, array<i64: 0, 0, 0>]}
// CHECK-COUNT-9: "tpu.slice"(%[[P]])
// CHECK-NOT:     tpu.conv_general_dilated
// CHECK:         %[[Y:.*]] = "tpu.add"
// CHECK:         "tpu.transpose"(%[[Y]]) {permutation = array<i64: 0, 3, 1, 2>}
func.func @depthwise(%x: tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xf32>) {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x2x4x4xf32>):
    %2 = tpu.constant {value = dense<[[[[1.000000e-01, -1.000000e-01, 6.000000e-01], [1.000000e-01, -5.000000e-01, 4.000000e-01], [1.300000e+00, 9.000000e-01, -7.000000e-01]]], [[[-1.300000e+00, -6.000000e-01, 0.000000e+00], [-2.300000e+00, -2.000000e-01, -1.200000e+00], [-7.000000e-01, -5.000000e-01, -3.000000e-01]]]]> : tensor<2x1x3x3xf32>} : tensor<2x1x3x3xf32>
    %3 = "tpu.conv_general_dilated"(%1, %2) {window_strides = array<i64: 1, 1>, padding = [array<i64: 1, 1>, array<i64: 1, 1>], lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, dimension_numbers = {__class__ = "ConvDimensionNumbers", lhs_spec = array<i64: 0, 1, 2, 3>, rhs_spec = array<i64: 0, 1, 2, 3>, out_spec = array<i64: 0, 1, 2, 3>}, feature_group_count = 2 : i64, batch_group_count = 1 : i64, precision, preferred_element_type = f32, out_sharding} : (tensor<1x2x4x4xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x4x4xf32>
    %4 = tpu.constant {value = dense<[[[[4.000000e-01]], [[1.000000e+00]]]]> : tensor<1x2x1x1xf32>} : tensor<1x2x1x1xf32>
    %5 = "tpu.add"(%3, %4) : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %6 = tpu.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %7 = "tpu.max"(%5, %6) : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
    tpu.yield %7 : tensor<1x2x4x4xf32>
  }) {device = "tpu"} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %0 : tensor<1x2x4x4xf32>
}

// -----

// 1x1 convolution: a convolution in NHWC with the filter pre-transposed to a constant HWIO
// tensor (XLA:CPU makes it a dot after fusing; see tpu_conv_strategy.choose).

// CHECK-LABEL: func.func @pointwise
// CHECK:         %[[W:.*]] = tpu.constant {value = dense<{{\[\[\[\[}}-1.000000e-01, 4.000000e-01], [1.400000e+00, 9.000000e-01], [-7.000000e-01, 1.000000e-01]]]]> : tensor<1x1x3x2xf32>}
// CHECK:         %[[T:.*]] = "tpu.transpose"(%{{.*}}) {permutation = array<i64: 0, 2, 3, 1>}
// CHECK:         %[[C:.*]] = "tpu.conv_general_dilated"(%[[T]], %[[W]]) {{.*}}lhs_spec = array<i64: 0, 3, 1, 2>, rhs_spec = array<i64: 3, 2, 0, 1>, out_spec = array<i64: 0, 3, 1, 2>}
// CHECK-SAME:      -> tensor<1x4x4x2xf32>
// CHECK:         "tpu.transpose"(%[[C]]) {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NOT:     tpu.dot_general
func.func @pointwise(%x: tensor<1x3x4x4xf32>) -> (tensor<1x2x4x4xf32>) {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x3x4x4xf32>):
    %2 = tpu.constant {value = dense<[[[[-1.000000e-01]], [[1.400000e+00]], [[-7.000000e-01]]], [[[4.000000e-01]], [[9.000000e-01]], [[1.000000e-01]]]]> : tensor<2x3x1x1xf32>} : tensor<2x3x1x1xf32>
    %3 = "tpu.conv_general_dilated"(%1, %2) {window_strides = array<i64: 1, 1>, padding = [array<i64: 0, 0>, array<i64: 0, 0>], lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, dimension_numbers = {__class__ = "ConvDimensionNumbers", lhs_spec = array<i64: 0, 1, 2, 3>, rhs_spec = array<i64: 0, 1, 2, 3>, out_spec = array<i64: 0, 1, 2, 3>}, feature_group_count = 1 : i64, batch_group_count = 1 : i64, precision, preferred_element_type = f32, out_sharding} : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x4x4xf32>
    %4 = tpu.constant {value = dense<[[[[-7.000000e-01]], [[-9.000000e-01]]]]> : tensor<1x2x1x1xf32>} : tensor<1x2x1x1xf32>
    %5 = "tpu.add"(%3, %4) : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %6 = tpu.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %7 = "tpu.max"(%5, %6) : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
    tpu.yield %7 : tensor<1x2x4x4xf32>
  }) {device = "tpu"} : (tensor<1x3x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %0 : tensor<1x2x4x4xf32>
}

// -----

// A strided 1x1 convolution keeps its strides (no slice of the input first).

// CHECK-LABEL: func.func @pointwise_strided
// CHECK:         %[[T:.*]] = "tpu.transpose"
// CHECK-NOT:     tpu.slice
// CHECK:         "tpu.conv_general_dilated"(%[[T]], %{{.*}}) {window_strides = array<i64: 2, 2>{{.*}} -> tensor<1x2x2x2xf32>
func.func @pointwise_strided(%x: tensor<1x3x4x4xf32>) -> (tensor<1x2x2x2xf32>) {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x3x4x4xf32>):
    %2 = tpu.constant {value = dense<[[[[-5.000000e-01]], [[2.000000e-01]], [[-1.000000e+00]]], [[[-2.000000e-01]], [[-2.000000e-01]], [[5.000000e-01]]]]> : tensor<2x3x1x1xf32>} : tensor<2x3x1x1xf32>
    %3 = "tpu.conv_general_dilated"(%1, %2) {window_strides = array<i64: 2, 2>, padding = [array<i64: 0, 0>, array<i64: 0, 0>], lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, dimension_numbers = {__class__ = "ConvDimensionNumbers", lhs_spec = array<i64: 0, 1, 2, 3>, rhs_spec = array<i64: 0, 1, 2, 3>, out_spec = array<i64: 0, 1, 2, 3>}, feature_group_count = 1 : i64, batch_group_count = 1 : i64, precision, preferred_element_type = f32, out_sharding} : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x2x2xf32>
    %4 = tpu.constant {value = dense<[[[[2.000000e-01]], [[4.000000e-01]]]]> : tensor<1x2x1x1xf32>} : tensor<1x2x1x1xf32>
    %5 = "tpu.add"(%3, %4) : (tensor<1x2x2x2xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x2x2xf32>
    %6 = tpu.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %7 = "tpu.max"(%5, %6) : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
    tpu.yield %7 : tensor<1x2x2x2xf32>
  }) {device = "tpu"} : (tensor<1x3x4x4xf32>) -> tensor<1x2x2x2xf32>
  func.return %0 : tensor<1x2x2x2xf32>
}

// -----

// Grouped 1x1 (2 groups of 2 channels, few channels): one dense dot_general whose filter is
// block-diagonal, built at compile time; no slice per group, no concatenation.

// CHECK-LABEL: func.func @grouped
// CHECK:         %[[W:.*]] = tpu.constant {value = dense<{{\[\[}}-7.000000e-01, 0.000000e+00], [-1.000000e-01, 0.000000e+00], [0.000000e+00, 8.000000e-01], [0.000000e+00, 1.500000e+00]]> : tensor<4x2xf32>}
// CHECK:         %[[T:.*]] = "tpu.transpose"(%{{.*}}) {permutation = array<i64: 0, 2, 3, 1>}
// CHECK-NOT:     "tpu.slice"
// CHECK:         %[[D:.*]] = "tpu.dot_general"(%[[T]], %[[W]]) {dimension_numbers = {{\[\[}}array<i64: 3>, array<i64: 0>], [array<i64>, array<i64>]]
// CHECK:         "tpu.transpose"(%[[D]]) {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NOT:     tpu.conv_general_dilated
// On gpu a grouped convolution keeps XLA's own layout (in NHWC / OHWI light ShuffleNet ran
// 0.85x a naive JAX translation against 0.78x left alone, H100, one run).
// GPU-LABEL: func.func @grouped
// GPU-NOT:     tpu.transpose
// GPU:         "tpu.conv_general_dilated"{{.*}}lhs_spec = array<i64: 0, 1, 2, 3>{{.*}}feature_group_count = 2
func.func @grouped(%x: tensor<1x4x4x4xf32>) -> (tensor<1x2x4x4xf32>) {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x4x4x4xf32>):
    %2 = tpu.constant {value = dense<[[[[-7.000000e-01]], [[-1.000000e-01]]], [[[8.000000e-01]], [[1.500000e+00]]]]> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
    %3 = "tpu.conv_general_dilated"(%1, %2) {window_strides = array<i64: 1, 1>, padding = [array<i64: 0, 0>, array<i64: 0, 0>], lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, dimension_numbers = {__class__ = "ConvDimensionNumbers", lhs_spec = array<i64: 0, 1, 2, 3>, rhs_spec = array<i64: 0, 1, 2, 3>, out_spec = array<i64: 0, 1, 2, 3>}, feature_group_count = 2 : i64, batch_group_count = 1 : i64, precision, preferred_element_type = f32, out_sharding} : (tensor<1x4x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %4 = tpu.constant {value = dense<[[[[-1.300000e+00]], [[1.500000e+00]]]]> : tensor<1x2x1x1xf32>} : tensor<1x2x1x1xf32>
    %5 = "tpu.add"(%3, %4) : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %6 = tpu.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %7 = "tpu.max"(%5, %6) : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
    tpu.yield %7 : tensor<1x2x4x4xf32>
  }) {device = "tpu"} : (tensor<1x4x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %0 : tensor<1x2x4x4xf32>
}

// -----

// Grouped 3x3 (2 groups of 2 channels): one ungrouped convolution per group on its channel
// slice, concatenated on the NHWC channel axis.

// CHECK-LABEL: func.func @grouped_3x3
// CHECK:         %[[T:.*]] = "tpu.transpose"
// CHECK:         %[[S0:.*]] = "tpu.slice"(%[[T]]) {start_indices = array<i64: 0, 0, 0, 0>, limit_indices = array<i64: 1, 4, 4, 2>
// CHECK:         %[[C0:.*]] = "tpu.conv_general_dilated"(%[[S0]]
// CHECK-SAME:        feature_group_count = 1
// CHECK:         %[[S1:.*]] = "tpu.slice"(%[[T]]) {start_indices = array<i64: 0, 0, 0, 2>, limit_indices = array<i64: 1, 4, 4, 4>
// CHECK:         %[[C1:.*]] = "tpu.conv_general_dilated"(%[[S1]]
// CHECK:         "tpu.concatenate"(%[[C0]], %[[C1]]) {dimension = 3 : i64}
func.func @grouped_3x3(%x: tensor<1x4x4x4xf32>) -> (tensor<1x2x4x4xf32>) {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x4x4x4xf32>):
    %2 = tpu.constant {value = dense<0.5> : tensor<2x2x3x3xf32>} : tensor<2x2x3x3xf32>
    %3 = "tpu.conv_general_dilated"(%1, %2) {window_strides = array<i64: 1, 1>, padding = [array<i64: 1, 1>, array<i64: 1, 1>], lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, dimension_numbers = {__class__ = "ConvDimensionNumbers", lhs_spec = array<i64: 0, 1, 2, 3>, rhs_spec = array<i64: 0, 1, 2, 3>, out_spec = array<i64: 0, 1, 2, 3>}, feature_group_count = 2 : i64, batch_group_count = 1 : i64, precision, preferred_element_type = f32, out_sharding} : (tensor<1x4x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32>
    tpu.yield %3 : tensor<1x2x4x4xf32>
  }) {device = "tpu"} : (tensor<1x4x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %0 : tensor<1x2x4x4xf32>
}

// -----

// An ordinary 3x3 convolution runs in NHWC/HWIO.

// CHECK-LABEL: func.func @dense
// CHECK:         %[[T:.*]] = "tpu.transpose"(%{{.*}}) {permutation = array<i64: 0, 2, 3, 1>}
// CHECK:         %[[C:.*]] = "tpu.conv_general_dilated"(%[[T]], %{{.*}}) {{.*}}lhs_spec = array<i64: 0, 3, 1, 2>, rhs_spec = array<i64: 3, 2, 0, 1>, out_spec = array<i64: 0, 3, 1, 2>}
// CHECK-SAME:      (tensor<1x4x4x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x4x4x2xf32>
// CHECK:         "tpu.transpose"(%[[C]]) {permutation = array<i64: 0, 3, 1, 2>}
func.func @dense(%x: tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xf32>) {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x2x4x4xf32>):
    %2 = tpu.constant {value = dense<[[[[1.300000e+00, 8.000000e-01, 3.000000e-01], [-3.000000e-01, 1.500000e+00, 2.000000e+00], [1.800000e+00, 1.300000e+00, 4.000000e-01]], [[-1.200000e+00, -0.000000e+00, 7.000000e-01], [-1.300000e+00, 4.000000e-01, 4.000000e-01], [7.000000e-01, -1.200000e+00, -7.000000e-01]]], [[[-4.000000e-01, -1.200000e+00, 1.700000e+00], [-5.000000e-01, 3.000000e-01, -3.000000e-01], [1.600000e+00, 1.300000e+00, 6.000000e-01]], [[-2.200000e+00, 1.000000e-01, 7.000000e-01], [1.000000e+00, -6.000000e-01, 1.800000e+00], [-1.300000e+00, -7.000000e-01, 9.000000e-01]]]]> : tensor<2x2x3x3xf32>} : tensor<2x2x3x3xf32>
    %3 = "tpu.conv_general_dilated"(%1, %2) {window_strides = array<i64: 1, 1>, padding = [array<i64: 1, 1>, array<i64: 1, 1>], lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, dimension_numbers = {__class__ = "ConvDimensionNumbers", lhs_spec = array<i64: 0, 1, 2, 3>, rhs_spec = array<i64: 0, 1, 2, 3>, out_spec = array<i64: 0, 1, 2, 3>}, feature_group_count = 1 : i64, batch_group_count = 1 : i64, precision, preferred_element_type = f32, out_sharding} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32>
    %4 = tpu.constant {value = dense<[[[[0.000000e+00]], [[2.000000e+00]]]]> : tensor<1x2x1x1xf32>} : tensor<1x2x1x1xf32>
    %5 = "tpu.add"(%3, %4) : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %6 = tpu.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %7 = "tpu.max"(%5, %6) : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
    tpu.yield %7 : tensor<1x2x4x4xf32>
  }) {device = "tpu"} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %0 : tensor<1x2x4x4xf32>
}

// -----

// On gpu an ungrouped convolution runs in NHWC data / OHWI filters (cuDNN's layout on
// XLA:GPU), the constant filter transposed here: [O=2, H=3, W=3, I=2], its first row the
// OIHW filter's [0, :, 0, 0].

// GPU-LABEL: func.func @dense_gpu
// GPU:         %[[W:.*]] = tpu.constant {value = dense<{{\[\[\[\[}}1.300000e+00, -1.200000e+00], [8.000000e-01, -0.000000e+00]{{.*}}> : tensor<2x3x3x2xf32>}
// GPU:         %[[T:.*]] = "tpu.transpose"(%{{.*}}) {permutation = array<i64: 0, 2, 3, 1>}
// GPU:         %[[C:.*]] = "tpu.conv_general_dilated"(%[[T]], %[[W]]) {{.*}}lhs_spec = array<i64: 0, 3, 1, 2>, rhs_spec = array<i64: 0, 3, 1, 2>, out_spec = array<i64: 0, 3, 1, 2>}
// GPU-SAME:      (tensor<1x4x4x2xf32>, tensor<2x3x3x2xf32>) -> tensor<1x4x4x2xf32>
// GPU:         "tpu.transpose"(%[[C]]) {permutation = array<i64: 0, 3, 1, 2>}
func.func @dense_gpu(%x: tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xf32>) {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x2x4x4xf32>):
    %2 = tpu.constant {value = dense<[[[[1.300000e+00, 8.000000e-01, 3.000000e-01], [-3.000000e-01, 1.500000e+00, 2.000000e+00], [1.800000e+00, 1.300000e+00, 4.000000e-01]], [[-1.200000e+00, -0.000000e+00, 7.000000e-01], [-1.300000e+00, 4.000000e-01, 4.000000e-01], [7.000000e-01, -1.200000e+00, -7.000000e-01]]], [[[-4.000000e-01, -1.200000e+00, 1.700000e+00], [-5.000000e-01, 3.000000e-01, -3.000000e-01], [1.600000e+00, 1.300000e+00, 6.000000e-01]], [[-2.200000e+00, 1.000000e-01, 7.000000e-01], [1.000000e+00, -6.000000e-01, 1.800000e+00], [-1.300000e+00, -7.000000e-01, 9.000000e-01]]]]> : tensor<2x2x3x3xf32>} : tensor<2x2x3x3xf32>
    %3 = "tpu.conv_general_dilated"(%1, %2) {window_strides = array<i64: 1, 1>, padding = [array<i64: 1, 1>, array<i64: 1, 1>], lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, dimension_numbers = {__class__ = "ConvDimensionNumbers", lhs_spec = array<i64: 0, 1, 2, 3>, rhs_spec = array<i64: 0, 1, 2, 3>, out_spec = array<i64: 0, 1, 2, 3>}, feature_group_count = 1 : i64, batch_group_count = 1 : i64, precision, preferred_element_type = f32, out_sharding} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32>
    %4 = tpu.constant {value = dense<[[[[0.000000e+00]], [[2.000000e+00]]]]> : tensor<1x2x1x1xf32>} : tensor<1x2x1x1xf32>
    %5 = "tpu.add"(%3, %4) : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %6 = tpu.constant {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %7 = "tpu.max"(%5, %6) : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
    tpu.yield %7 : tensor<1x2x4x4xf32>
  }) {device = "tpu"} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %0 : tensor<1x2x4x4xf32>
}


// -----

// A 3x3 convolution of a 2x2 map (the kernel larger than the map): one dot of the patches,
// nine strided slices of the padded input concatenated along the channels, with the filter as
// a constant [taps * in, out] matrix.

// CHECK-LABEL: func.func @small_map
// CHECK:         %[[W:.*]] = tpu.constant {value = dense<{{.*}}> : tensor<18x2xf32>}
// CHECK:         %[[P:.*]] = "tpu.pad"
// CHECK-COUNT-9: "tpu.slice"(%[[P]])
// CHECK:         %[[C:.*]] = "tpu.concatenate"({{.*}}) {dimension = 3 : i64} : {{.*}} -> tensor<1x2x2x18xf32>
// CHECK:         "tpu.dot_general"(%[[C]], %[[W]])
// CHECK-NOT:     tpu.conv_general_dilated
func.func @small_map(%x: tensor<1x2x2x2xf32>) -> (tensor<1x2x2x2xf32>) {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<1x2x2x2xf32>):
    %2 = tpu.constant {value = dense<[[[[-8.000000e-01, -5.000000e-01, 6.000000e-01], [2.000000e-01, -8.000000e-01, -1.000000e-01], [-0.000000e+00, -7.000000e-01, 5.000000e-01]], [[-8.000000e-01, -2.000000e-01, 0.000000e+00], [-1.000000e-01, 2.000000e-01, 5.000000e-01], [9.000000e-01, -4.000000e-01, 3.000000e-01]]], [[[4.000000e-01, -4.000000e-01, -1.000000e+00], [9.000000e-01, -4.000000e-01, -4.000000e-01], [8.000000e-01, 2.000000e-01, -1.000000e-01]], [[5.000000e-01, -9.000000e-01, 4.000000e-01], [-3.000000e-01, -8.000000e-01, 3.000000e-01], [9.000000e-01, -6.000000e-01, 3.000000e-01]]]]> : tensor<2x2x3x3xf32>} : tensor<2x2x3x3xf32>
    %3 = "tpu.conv_general_dilated"(%1, %2) {window_strides = array<i64: 1, 1>, padding = [array<i64: 1, 1>, array<i64: 1, 1>], lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, dimension_numbers = {__class__ = "ConvDimensionNumbers", lhs_spec = array<i64: 0, 1, 2, 3>, rhs_spec = array<i64: 0, 1, 2, 3>, out_spec = array<i64: 0, 1, 2, 3>}, feature_group_count = 1 : i64, batch_group_count = 1 : i64, precision, preferred_element_type = f32, out_sharding} : (tensor<1x2x2x2xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x2x2xf32>
    tpu.yield %3 : tensor<1x2x2x2xf32>
  }) {device = "tpu"} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  func.return %0 : tensor<1x2x2x2xf32>
}
