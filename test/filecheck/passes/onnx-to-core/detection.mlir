// RUN: mlconv-opt %s --pass-pipeline='builtin.module(onnx-to-core)' --split-input-file | filecheck %s

// RoiAlign-16: coordinate_transformation_mode defaults to half_pixel; a dynamic ROI count stays `?`.
// CHECK-LABEL: func.func @roi_align
// CHECK:         "core.ROIAlign"(%{{.*}}, %{{.*}}, %{{.*}}) {pooled_h = 3 : i64, pooled_w = 4 : i64, sampling_ratio = 2 : i64, spatial_scale = 2.500000e-01 : f64, mode = "max", aligned_mode = "half_pixel"} : (tensor<1x8x16x16xf32>, tensor<?x4xf32>, tensor<?xi64>) -> tensor<?x8x3x4xf32>

builtin.module attributes {onnx.opset_import = {"" = 16 : i64}} {
  func.func @roi_align(%x: tensor<1x8x16x16xf32>, %rois: tensor<?x4xf32>, %idx: tensor<?xi64>) -> tensor<*xf32> {
    %y = "onnx.RoiAlign"(%x, %rois, %idx) {mode = "max", output_height = 3 : i64, output_width = 4 : i64, sampling_ratio = 2 : i64, spatial_scale = 0.25 : f32} : (tensor<1x8x16x16xf32>, tensor<?x4xf32>, tensor<?xi64>) -> tensor<*xf32>
    func.return %y : tensor<*xf32>
  }
}

// -----

// RoiAlign-10 has no coordinate_transformation_mode: its ROIs are not shifted (asymmetric).
// CHECK-LABEL: func.func @roi_align_10
// CHECK:         "core.ROIAlign"{{.*}}mode = "avg", aligned_mode = "asymmetric"}

builtin.module attributes {onnx.opset_import = {"" = 11 : i64}} {
  func.func @roi_align_10(%x: tensor<1x8x16x16xf32>, %rois: tensor<5x4xf32>, %idx: tensor<5xi64>) -> tensor<5x8x1x1xf32> {
    %y = "onnx.RoiAlign"(%x, %rois, %idx) : (tensor<1x8x16x16xf32>, tensor<5x4xf32>, tensor<5xi64>) -> tensor<5x8x1x1xf32>
    func.return %y : tensor<5x8x1x1xf32>
  }
}

// -----

// MaxRoiPool's pooled_shape is (height, width).
// CHECK-LABEL: func.func @max_roi_pool
// CHECK:         "core.ROIPooling"(%{{.*}}, %{{.*}}) {pooled_h = 3 : i64, pooled_w = 2 : i64, spatial_scale = 5.000000e-01 : f64, method = "max"} : (tensor<2x4x9x9xf32>, tensor<6x5xf32>) -> tensor<6x4x3x2xf32>

builtin.module attributes {onnx.opset_import = {"" = 13 : i64}} {
  func.func @max_roi_pool(%x: tensor<2x4x9x9xf32>, %rois: tensor<6x5xf32>) -> tensor<*xf32> {
    %y = "onnx.MaxRoiPool"(%x, %rois) {pooled_shape = [3 : i64, 2 : i64], spatial_scale = 0.5 : f32} : (tensor<2x4x9x9xf32>, tensor<6x5xf32>) -> tensor<*xf32>
    func.return %y : tensor<*xf32>
  }
}
