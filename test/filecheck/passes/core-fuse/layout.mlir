// RUN: mlconv-opt %s --pass-pipeline='builtin.module(core-fuse)' --split-input-file | filecheck %s

// ShuffleNet's channel shuffle as torch.onnx writes it: (N, G, C/G, H, W), swap, merge.

// CHECK-LABEL: func.func @shuffle_channels
// CHECK:         %[[S:.*]] = "core.ShuffleChannels"(%[[X:.*]]) {axis = 1 : i64, group = 2 : i64} : (tensor<1x8x3x3xf32>) -> tensor<1x8x3x3xf32>
// CHECK-NOT:     core.Transpose
// CHECK:         func.return %[[S]]
func.func @shuffle_channels(%x: tensor<1x8x3x3xf32>) -> tensor<1x8x3x3xf32> {
  %s1 = core.Constant {value = dense<[1, 2, 4, 3, 3]> : tensor<5xi64>} : tensor<5xi64>
  %p = core.Constant {value = dense<[0, 2, 1, 3, 4]> : tensor<5xi64>} : tensor<5xi64>
  %s2 = core.Constant {value = dense<[1, 8, 3, 3]> : tensor<4xi64>} : tensor<4xi64>
  %a = "core.Reshape"(%x, %s1) : (tensor<1x8x3x3xf32>, tensor<5xi64>) -> tensor<1x2x4x3x3xf32>
  %b = "core.Transpose"(%a, %p) : (tensor<1x2x4x3x3xf32>, tensor<5xi64>) -> tensor<1x4x2x3x3xf32>
  %y = "core.Reshape"(%b, %s2) : (tensor<1x4x2x3x3xf32>, tensor<4xi64>) -> tensor<1x8x3x3xf32>
  func.return %y : tensor<1x8x3x3xf32>
}

// -----

// DepthToSpace, blocks_first (DCR): (N, b, b, C', H, W) -> (N, C', H, b, W, b).

// CHECK-LABEL: func.func @depth_to_space_blocks_first
// CHECK:         %[[D:.*]] = "core.DepthToSpace"(%[[X:.*]]) {block_size = 2 : i64, mode = "blocks_first"} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
// CHECK:         func.return %[[D]]
func.func @depth_to_space_blocks_first(%x: tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32> {
  %s1 = core.Constant {value = dense<[1, 2, 2, 2, 2, 3]> : tensor<6xi64>} : tensor<6xi64>
  %p = core.Constant {value = dense<[0, 3, 4, 1, 5, 2]> : tensor<6xi64>} : tensor<6xi64>
  %s2 = core.Constant {value = dense<[1, 2, 4, 6]> : tensor<4xi64>} : tensor<4xi64>
  %a = "core.Reshape"(%x, %s1) : (tensor<1x8x2x3xf32>, tensor<6xi64>) -> tensor<1x2x2x2x2x3xf32>
  %b = "core.Transpose"(%a, %p) : (tensor<1x2x2x2x2x3xf32>, tensor<6xi64>) -> tensor<1x2x2x2x3x2xf32>
  %y = "core.Reshape"(%b, %s2) : (tensor<1x2x2x2x3x2xf32>, tensor<4xi64>) -> tensor<1x2x4x6xf32>
  func.return %y : tensor<1x2x4x6xf32>
}

// -----

// torch's PixelShuffle: depth_first (CRD): (N, C', b, b, H, W) -> (N, C', H, b, W, b).

// CHECK-LABEL: func.func @depth_to_space_depth_first
// CHECK:         %[[D:.*]] = "core.DepthToSpace"(%[[X:.*]]) {block_size = 2 : i64, mode = "depth_first"} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
// CHECK:         func.return %[[D]]
func.func @depth_to_space_depth_first(%x: tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32> {
  %s1 = core.Constant {value = dense<[1, 2, 2, 2, 2, 3]> : tensor<6xi64>} : tensor<6xi64>
  %p = core.Constant {value = dense<[0, 1, 4, 2, 5, 3]> : tensor<6xi64>} : tensor<6xi64>
  %s2 = core.Constant {value = dense<[1, 2, 4, 6]> : tensor<4xi64>} : tensor<4xi64>
  %a = "core.Reshape"(%x, %s1) : (tensor<1x8x2x3xf32>, tensor<6xi64>) -> tensor<1x2x2x2x2x3xf32>
  %b = "core.Transpose"(%a, %p) : (tensor<1x2x2x2x2x3xf32>, tensor<6xi64>) -> tensor<1x2x2x2x3x2xf32>
  %y = "core.Reshape"(%b, %s2) : (tensor<1x2x2x2x3x2xf32>, tensor<4xi64>) -> tensor<1x2x4x6xf32>
  func.return %y : tensor<1x2x4x6xf32>
}

// -----

// Negative: a permutation that is neither (H and W swapped as well).

// CHECK-LABEL: func.func @no_depth_to_space_other_order
// CHECK:         core.Transpose
// CHECK-NOT:     core.DepthToSpace
func.func @no_depth_to_space_other_order(%x: tensor<1x8x2x2xf32>) -> tensor<1x2x4x4xf32> {
  %s1 = core.Constant {value = dense<[1, 2, 2, 2, 2, 2]> : tensor<6xi64>} : tensor<6xi64>
  %p = core.Constant {value = dense<[0, 3, 5, 1, 4, 2]> : tensor<6xi64>} : tensor<6xi64>
  %s2 = core.Constant {value = dense<[1, 2, 4, 4]> : tensor<4xi64>} : tensor<4xi64>
  %a = "core.Reshape"(%x, %s1) : (tensor<1x8x2x2xf32>, tensor<6xi64>) -> tensor<1x2x2x2x2x2xf32>
  %b = "core.Transpose"(%a, %p) : (tensor<1x2x2x2x2x2xf32>, tensor<6xi64>) -> tensor<1x2x2x2x2x2xf32>
  %y = "core.Reshape"(%b, %s2) : (tensor<1x2x2x2x2x2xf32>, tensor<4xi64>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// Negative: the transposed tensor is also returned (an extra use).

// CHECK-LABEL: func.func @no_shuffle_extra_use
// CHECK:         core.Transpose
// CHECK-NOT:     core.ShuffleChannels
func.func @no_shuffle_extra_use(%x: tensor<1x8x3x3xf32>) -> (tensor<1x8x3x3xf32>, tensor<1x4x2x3x3xf32>) {
  %s1 = core.Constant {value = dense<[1, 2, 4, 3, 3]> : tensor<5xi64>} : tensor<5xi64>
  %p = core.Constant {value = dense<[0, 2, 1, 3, 4]> : tensor<5xi64>} : tensor<5xi64>
  %s2 = core.Constant {value = dense<[1, 8, 3, 3]> : tensor<4xi64>} : tensor<4xi64>
  %a = "core.Reshape"(%x, %s1) : (tensor<1x8x3x3xf32>, tensor<5xi64>) -> tensor<1x2x4x3x3xf32>
  %b = "core.Transpose"(%a, %p) : (tensor<1x2x4x3x3xf32>, tensor<5xi64>) -> tensor<1x4x2x3x3xf32>
  %y = "core.Reshape"(%b, %s2) : (tensor<1x4x2x3x3xf32>, tensor<4xi64>) -> tensor<1x8x3x3xf32>
  func.return %y, %b : tensor<1x8x3x3xf32>, tensor<1x4x2x3x3xf32>
}

// -----

// Negative: a block of 2 read off the shapes, but 6 channels do not divide by 2*2 (the
// candidate's semantics refuse the shape: no DepthToSpace, and no crash).

// CHECK-LABEL: func.func @no_depth_to_space_channels_not_divisible
// CHECK:         core.Transpose
// CHECK-NOT:     core.DepthToSpace
func.func @no_depth_to_space_channels_not_divisible(%x: tensor<1x6x2x3xf32>) -> tensor<1x3x4x3xf32> {
  %s = core.Constant {value = dense<[1, 3, 2, 2, 3]> : tensor<5xi64>} : tensor<5xi64>
  %r = "core.Reshape"(%x, %s) : (tensor<1x6x2x3xf32>, tensor<5xi64>) -> tensor<1x3x2x2x3xf32>
  %o = core.Constant {value = dense<[0, 1, 3, 2, 4]> : tensor<5xi64>} : tensor<5xi64>
  %t = "core.Transpose"(%r, %o) : (tensor<1x3x2x2x3xf32>, tensor<5xi64>) -> tensor<1x3x2x2x3xf32>
  %s2 = core.Constant {value = dense<[1, 3, 4, 3]> : tensor<4xi64>} : tensor<4xi64>
  %y = "core.Reshape"(%t, %s2) : (tensor<1x3x2x2x3xf32>, tensor<4xi64>) -> tensor<1x3x4x3xf32>
  func.return %y : tensor<1x3x4x3xf32>
}

// -----

// Negative: a rank-2 chain that is neither op (no candidate read off a third dimension it lacks).

// CHECK-LABEL: func.func @no_fusion_of_a_rank_2_chain
// CHECK:         core.Transpose
// CHECK-NOT:     core.DepthToSpace
func.func @no_fusion_of_a_rank_2_chain(%x: tensor<4x6xf32>) -> tensor<2x12xf32> {
  %s = core.Constant {value = dense<[2, 2, 6]> : tensor<3xi64>} : tensor<3xi64>
  %r = "core.Reshape"(%x, %s) : (tensor<4x6xf32>, tensor<3xi64>) -> tensor<2x2x6xf32>
  %o = core.Constant {value = dense<[0, 2, 1]> : tensor<3xi64>} : tensor<3xi64>
  %t = "core.Transpose"(%r, %o) : (tensor<2x2x6xf32>, tensor<3xi64>) -> tensor<2x6x2xf32>
  %s2 = core.Constant {value = dense<[2, 12]> : tensor<2xi64>} : tensor<2xi64>
  %y = "core.Reshape"(%t, %s2) : (tensor<2x6x2xf32>, tensor<2xi64>) -> tensor<2x12xf32>
  func.return %y : tensor<2x12xf32>
}
