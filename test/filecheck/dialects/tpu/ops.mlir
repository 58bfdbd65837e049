// Round trip of the tpu dialect: parse, verify, print, parse again.
// RUN: mlconv-opt %s --split-input-file | mlconv-opt --split-input-file | filecheck %s

// CHECK-LABEL: func.func @region
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK:         %[[R:.*]] = "tpu.region"(%[[X]]) ({
// CHECK:         ^{{.*}}(%[[A:.*]]: tensor<2x3xf32>):
// CHECK:           %[[C:.*]] = tpu.constant {value = dense<1.000000e+00> : tensor<2x3xf32>} : tensor<2x3xf32>
// CHECK:           %[[S:.*]] = "tpu.add"(%[[A]], %[[C]]) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK:           tpu.yield %[[S]] : tensor<2x3xf32>
// CHECK:         }) {device = "tpu"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK:         func.return %[[R]]
func.func @region(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = "tpu.region"(%x) ({
  ^bb0(%a: tensor<2x3xf32>):
    %c = tpu.constant {value = dense<1.0> : tensor<2x3xf32>} : tensor<2x3xf32>
    %s = "tpu.add"(%a, %c) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    tpu.yield %s : tensor<2x3xf32>
  }) {device = "tpu"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

// Several operands and results; a region without operands; tpu.yield with nothing.
// CHECK-LABEL: func.func @multi
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[I:.*]]: tensor<4xi64>)
// CHECK:         %[[R0:.*]], %[[R1:.*]] = "tpu.region"(%[[X]], %[[I]]) ({
// CHECK:         ^{{.*}}(%[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xi64>):
// CHECK:           %[[E:.*]] = "tpu.exp"(%[[A]]) {accuracy} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK:           tpu.yield %[[E]], %[[B]] : tensor<4xf32>, tensor<4xi64>
// CHECK:         }) : (tensor<4xf32>, tensor<4xi64>) -> (tensor<4xf32>, tensor<4xi64>)
// CHECK:         "tpu.region"() ({
// CHECK:           tpu.yield
// CHECK:         }) : () -> ()
// CHECK:         func.return %[[R0]], %[[R1]] : tensor<4xf32>, tensor<4xi64>
func.func @multi(%x: tensor<4xf32>, %i: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xi64>) {
  %r:2 = "tpu.region"(%x, %i) ({
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xi64>):
    %e = "tpu.exp"(%a) {accuracy} : (tensor<4xf32>) -> tensor<4xf32>
    tpu.yield %e, %b : tensor<4xf32>, tensor<4xi64>
  }) : (tensor<4xf32>, tensor<4xi64>) -> (tensor<4xf32>, tensor<4xi64>)
  "tpu.region"() ({
    tpu.yield
  }) : () -> ()
  func.return %r#0, %r#1 : tensor<4xf32>, tensor<4xi64>
}

// -----

// Primitive parameters: int tuples as dense arrays, named tuples and enums as dictionaries,
// dtypes as types, None as a unit attribute.
// CHECK-LABEL: func.func @primitives
// CHECK:         "tpu.conv_general_dilated"(%{{.*}}, %{{.*}}) {window_strides = array<i64: 1, 1>, padding = [array<i64: 1, 1>, array<i64: 1, 1>], lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, dimension_numbers = {__class__ = "ConvDimensionNumbers", lhs_spec = array<i64: 0, 1, 2, 3>, rhs_spec = array<i64: 0, 1, 2, 3>, out_spec = array<i64: 0, 1, 2, 3>}, feature_group_count = 1 : i64, batch_group_count = 1 : i64, precision, preferred_element_type = f32, out_sharding} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
// CHECK:         "tpu.reduce_window_max"(%{{.*}}) {window_dimensions = array<i64: 1, 1, 2, 2>
// CHECK-SAME:      -> tensor<1x4x4x4xf32>
// CHECK:         "tpu.gather"(%{{.*}}, %{{.*}}) {{{.*}}mode = {__enum__ = "GatherScatterMode", name = "CLIP"}
func.func @primitives(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %t: tensor<5xf32>, %i: tensor<2x1xi64>) -> (tensor<1x4x4x4xf32>, tensor<2xf32>) {
  %r:2 = "tpu.region"(%x, %w, %t, %i) ({
  ^bb0(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf32>, %c: tensor<5xf32>, %d: tensor<2x1xi64>):
    %y = "tpu.conv_general_dilated"(%a, %b) {window_strides = array<i64: 1, 1>, padding = [array<i64: 1, 1>, array<i64: 1, 1>], lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, dimension_numbers = {__class__ = "ConvDimensionNumbers", lhs_spec = array<i64: 0, 1, 2, 3>, rhs_spec = array<i64: 0, 1, 2, 3>, out_spec = array<i64: 0, 1, 2, 3>}, feature_group_count = 1 : i64, batch_group_count = 1 : i64, precision, preferred_element_type = f32, out_sharding} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
    %p = "tpu.reduce_window_max"(%y) {window_dimensions = array<i64: 1, 1, 2, 2>, window_strides = array<i64: 1, 1, 2, 2>, padding = [array<i64: 0, 0>, array<i64: 0, 0>, array<i64: 0, 0>, array<i64: 0, 0>], base_dilation = array<i64: 1, 1, 1, 1>, window_dilation = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
    %g = "tpu.gather"(%c, %d) {dimension_numbers = {__class__ = "GatherDimensionNumbers", offset_dims = array<i64>, collapsed_slice_dims = array<i64: 0>, start_index_map = array<i64: 0>, operand_batching_dims = array<i64>, start_indices_batching_dims = array<i64>}, slice_sizes = array<i64: 1>, indices_are_sorted = false, unique_indices = false, mode = {__enum__ = "GatherScatterMode", name = "CLIP"}, fill_value} : (tensor<5xf32>, tensor<2x1xi64>) -> tensor<2xf32>
    tpu.yield %p, %g : tensor<1x4x4x4xf32>, tensor<2xf32>
  }) {device = "tpu"} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<5xf32>, tensor<2x1xi64>) -> (tensor<1x4x4x4xf32>, tensor<2xf32>)
  func.return %r#0, %r#1 : tensor<1x4x4x4xf32>, tensor<2xf32>
}
