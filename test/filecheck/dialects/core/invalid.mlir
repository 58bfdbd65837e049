// Verifier messages of the core dialect (dialects/core_*.py).
// RUN: mlconv-opt %s --split-input-file --verify-diagnostics

func.func @missing_required_attribute(%a: tensor<1x2xf32>, %b: tensor<1x3xf32>) -> tensor<1x5xf32> {
  // expected-error @+1 {{'core.Concat' op missing required attribute 'axis'}}
  %y = "core.Concat"(%a, %b) : (tensor<1x2xf32>, tensor<1x3xf32>) -> tensor<1x5xf32>
  func.return %y : tensor<1x5xf32>
}

// -----

func.func @missing_required_ints(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> {
  // expected-error @+1 {{'core.MaxPool' op missing required attribute 'kernel'}}
  %y = "core.MaxPool"(%x) {strides = array<i64: 2, 2>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  func.return %y : tensor<1x4x4x4xf32>
}

// -----

func.func @float_ints_attribute(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'core.Convolution' op attribute 'strides' must be an array of integers}}
  %y = "core.Convolution"(%x, %w) {strides = array<f64: 1.0, 1.0>, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return %y : tensor<1x4x8x8xf32>
}

// -----

func.func @constant_type_mismatch() -> tensor<3xi32> {
  // expected-error @+1 {{'core.Constant' op value type must equal the result type}}
  %c = core.Constant {value = dense<[1, 2, 3]> : tensor<3xi64>} : tensor<3xi32>
  func.return %c : tensor<3xi32>
}

// -----

func.func @constant_shape_mismatch() -> tensor<2x2xf32> {
  // expected-error @+1 {{'core.Constant' op value type must equal the result type}}
  %c = core.Constant {value = dense<1.0> : tensor<4xf32>} : tensor<2x2xf32>
  func.return %c : tensor<2x2xf32>
}

// -----

func.func @constant_without_value() -> tensor<2xf32> {
  // expected-error @+1 {{'core.Constant' op attribute 'value' expected in operation 'core.Constant'}}
  %c = "core.Constant"() : () -> tensor<2xf32>
  func.return %c : tensor<2xf32>
}

// -----

func.func @wrong_attribute_kind(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'core.Softmax' op "one" should be of base attribute integer}}
  %y = "core.Softmax"(%x) {axis = "one"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @too_few_operands(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'core.Add' op Expected 2 operands, but got 1}}
  %y = "core.Add"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @non_tensor_operand(%x: f32) -> tensor<f32> {
  // expected-error @+1 {{'core.Relu' op operand 'arg' at position 0 does not verify: Unexpected attribute f32}}
  %y = "core.Relu"(%x) : (f32) -> tensor<f32>
  func.return %y : tensor<f32>
}

// -----

func.func @normalize_l2_bad_eps_mode(%x: tensor<2x3xf32>, %axes: tensor<1xi64>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'core.NormalizeL2' op eps_mode must be 'add' or 'max', not 'min'}}
  %y = "core.NormalizeL2"(%x, %axes) {eps = 1.0e-12 : f64, eps_mode = "min"} : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @roi_align_bad(%x: tensor<1x3x8x8xf32>, %rois: tensor<4x4xf32>, %idx: tensor<4xi64>) -> tensor<*xf32> {
  // expected-error @+1 {{'core.ROIAlign' op mode must be avg or max, got 'median'}}
  %y = "core.ROIAlign"(%x, %rois, %idx) {mode = "median", aligned_mode = "half_pixel", pooled_h = 2 : i64, pooled_w = 2 : i64} : (tensor<1x3x8x8xf32>, tensor<4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  func.return %y : tensor<*xf32>
}

// -----

func.func @roi_align_bad(%x: tensor<1x3x8x8xf32>, %rois: tensor<4x4xf32>, %idx: tensor<4xi64>) -> tensor<*xf32> {
  // expected-error @+1 {{'core.ROIAlign' op aligned_mode must be asymmetric or half_pixel, got 'half_pixel_for_nn'}}
  %y = "core.ROIAlign"(%x, %rois, %idx) {mode = "avg", aligned_mode = "half_pixel_for_nn", pooled_h = 2 : i64, pooled_w = 2 : i64} : (tensor<1x3x8x8xf32>, tensor<4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  func.return %y : tensor<*xf32>
}

// -----

func.func @roi_align_bad(%x: tensor<1x3x8x8xf32>, %rois: tensor<4x4xf32>, %idx: tensor<4xi64>) -> tensor<*xf32> {
  // expected-error @+1 {{'core.ROIAlign' op pooled_h and pooled_w must be positive}}
  %y = "core.ROIAlign"(%x, %rois, %idx) {mode = "avg", aligned_mode = "half_pixel", pooled_h = 0 : i64, pooled_w = 2 : i64} : (tensor<1x3x8x8xf32>, tensor<4x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  func.return %y : tensor<*xf32>
}

// -----

func.func @roi_pooling_bilinear(%x: tensor<1x3x8x8xf32>, %rois: tensor<4x5xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{'core.ROIPooling' op method must be max, got 'bilinear'}}
  %y = "core.ROIPooling"(%x, %rois) {pooled_h = 2 : i64, pooled_w = 2 : i64, method = "bilinear"} : (tensor<1x3x8x8xf32>, tensor<4x5xf32>) -> tensor<*xf32>
  func.return %y : tensor<*xf32>
}

// -----

func.func @col2im_ranks_differ(%x: tensor<1x8x4xf32>, %image: tensor<2xi64>, %block: tensor<2xi64>) -> tensor<*xf32> {
  // expected-error @+1 {{'core.Col2Im' op strides, pads_begin, pads_end and dilations must have one value per spatial dim}}
  %y = "core.Col2Im"(%x, %image, %block) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1, 1>} : (tensor<1x8x4xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<*xf32>
  func.return %y : tensor<*xf32>
}

// -----

func.func @image_decoder_bad_format(%bytes: tensor<64xui8>) -> tensor<*xui8> {
  // expected-error @+1 {{'core.ImageDecoder' op pixel_format must be RGB, BGR or Grayscale, got 'RGBA'}}
  %y = "core.ImageDecoder"(%bytes) {pixel_format = "RGBA"} : (tensor<64xui8>) -> tensor<*xui8>
  func.return %y : tensor<*xui8>
}

// -----

func.func @dynamic_slice_sizes_rank(%x: tensor<5x4xf32>, %s: tensor<2xi32>) -> tensor<1xf32> {
  // expected-error @+1 {{'core.DynamicSlice' op sizes has 1 entries for data of rank 2}}
  %y = "core.DynamicSlice"(%x, %s) {sizes = array<i64: 1>} : (tensor<5x4xf32>, tensor<2xi32>) -> tensor<1xf32>
  func.return %y : tensor<1xf32>
}

// -----

func.func @dynamic_slice_float_start(%x: tensor<5x4xf32>, %s: tensor<2xf32>) -> tensor<1x4xf32> {
  // expected-error @+1 {{'core.DynamicSlice' op start must be a tensor of integers}}
  %y = "core.DynamicSlice"(%x, %s) {sizes = array<i64: 1, 4>} : (tensor<5x4xf32>, tensor<2xf32>) -> tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}

// -----

func.func @dynamic_slice_start_length(%x: tensor<5x4xf32>, %s: tensor<3xi32>) -> tensor<1x4xf32> {
  // expected-error @+1 {{'core.DynamicSlice' op start must be 1-D with one index per data dim (2)}}
  %y = "core.DynamicSlice"(%x, %s) {sizes = array<i64: 1, 4>} : (tensor<5x4xf32>, tensor<3xi32>) -> tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}

// -----

func.func @dynamic_slice_too_large(%x: tensor<5x4xf32>, %s: tensor<2xi32>) -> tensor<1x6xf32> {
  // expected-error @+1 {{'core.DynamicSlice' op size 6 of dim 1 is outside 0..4}}
  %y = "core.DynamicSlice"(%x, %s) {sizes = array<i64: 1, 6>} : (tensor<5x4xf32>, tensor<2xi32>) -> tensor<1x6xf32>
  func.return %y : tensor<1x6xf32>
}

// -----

func.func @dynamic_slice_result(%x: tensor<5x4xf32>, %s: tensor<2xi32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'core.DynamicSlice' op result shape ?x4 must equal sizes [1, 4]}}
  %y = "core.DynamicSlice"(%x, %s) {sizes = array<i64: 1, 4>} : (tensor<5x4xf32>, tensor<2xi32>) -> tensor<?x4xf32>
  func.return %y : tensor<?x4xf32>
}

// -----

func.func @dynamic_update_slice_rank(%x: tensor<5x4xf32>, %u: tensor<4xf32>, %s: tensor<2xi32>) -> tensor<5x4xf32> {
  // expected-error @+1 {{'core.DynamicUpdateSlice' op update has rank 1, data rank 2}}
  %y = "core.DynamicUpdateSlice"(%x, %u, %s) : (tensor<5x4xf32>, tensor<4xf32>, tensor<2xi32>) -> tensor<5x4xf32>
  func.return %y : tensor<5x4xf32>
}

// -----

func.func @dynamic_update_slice_too_large(%x: tensor<5x4xf32>, %u: tensor<1x8xf32>, %s: tensor<2xi32>) -> tensor<5x4xf32> {
  // expected-error @+1 {{'core.DynamicUpdateSlice' op update dim 1 (8) is larger than the data's (4)}}
  %y = "core.DynamicUpdateSlice"(%x, %u, %s) : (tensor<5x4xf32>, tensor<1x8xf32>, tensor<2xi32>) -> tensor<5x4xf32>
  func.return %y : tensor<5x4xf32>
}

// -----

func.func @dynamic_update_slice_start(%x: tensor<5x4xf32>, %u: tensor<1x4xf32>, %s: tensor<2x1xi32>) -> tensor<5x4xf32> {
  // expected-error @+1 {{'core.DynamicUpdateSlice' op start must be 1-D with one index per data dim (2)}}
  %y = "core.DynamicUpdateSlice"(%x, %u, %s) : (tensor<5x4xf32>, tensor<1x4xf32>, tensor<2x1xi32>) -> tensor<5x4xf32>
  func.return %y : tensor<5x4xf32>
}

// -----

func.func @dynamic_update_slice_result(%x: tensor<5x4xf32>, %u: tensor<1x4xf32>, %s: tensor<2xi32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'core.DynamicUpdateSlice' op result type must equal the data's type}}
  %y = "core.DynamicUpdateSlice"(%x, %u, %s) : (tensor<5x4xf32>, tensor<1x4xf32>, tensor<2xi32>) -> tensor<?x4xf32>
  func.return %y : tensor<?x4xf32>
}
