// RUN: mlconv-opt %s --pass-pipeline='builtin.module(core-fold-constants,core-layout-nchw)' --split-input-file | filecheck %s

// An NHWC conv-bn-relu-pool graph as tf-to-core writes it: a Transpose pair around each
// NCHW op. Only the input's Transpose stays; the batch-norm constants are permuted to
// [1, C, 1, 1]; global pooling's NHWC axes [1, 2] become [2, 3].
// CHECK-LABEL: func.func @conv_bn_relu_pool
// CHECK-SAME:    (%[[X:.*]]: tensor<1x8x8x3xf32>)
// CHECK-COUNT-1: core.Transpose
// CHECK-NOT:     core.Transpose
// CHECK:         %[[C:.*]] = "core.Convolution"
// CHECK:         %[[S:.*]] = core.Constant {{.*}} : tensor<1x4x1x1xf32>
// CHECK-NEXT:    %[[M:.*]] = "core.Multiply"(%[[C]], %[[S]]) : (tensor<1x4x8x8xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x8x8xf32>
// CHECK:         "core.Add"(%[[M]], %{{.*}}) : (tensor<1x4x8x8xf32>, tensor<1x4x1x1xf32>)
// CHECK:         "core.Relu"
// CHECK:         %[[P:.*]] = "core.MaxPool"
// CHECK-NEXT:    %[[AXES:.*]] = core.Constant {value = dense<[2, 3]> : tensor<2xi64>}
// CHECK-NEXT:    %[[G:.*]] = "core.ReduceMean"(%[[P]], %[[AXES]])
// CHECK-NEXT:    func.return %[[G]] : tensor<1x4xf32>
func.func @conv_bn_relu_pool(%x: tensor<1x8x8x3xf32>) -> tensor<1x4xf32> {
  %to_nchw = core.Constant {value = dense<[0, 3, 1, 2]> : tensor<4xi64>} : tensor<4xi64>
  %to_nhwc = core.Constant {value = dense<[0, 2, 3, 1]> : tensor<4xi64>} : tensor<4xi64>
  %w = core.Constant {value = dense<0.5> : tensor<4x3x3x3xf32>} : tensor<4x3x3x3xf32>
  %scale = core.Constant {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : tensor<4xf32>
  %shift = core.Constant {value = dense<[0.5, -0.5, 1.0, -1.0]> : tensor<4xf32>} : tensor<4xf32>
  %axes = core.Constant {value = dense<[1, 2]> : tensor<2xi64>} : tensor<2xi64>
  %t0 = "core.Transpose"(%x, %to_nchw) : (tensor<1x8x8x3xf32>, tensor<4xi64>) -> tensor<1x3x8x8xf32>
  %c = "core.Convolution"(%t0, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 1, 1>, pads_end = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %t1 = "core.Transpose"(%c, %to_nhwc) : (tensor<1x4x8x8xf32>, tensor<4xi64>) -> tensor<1x8x8x4xf32>
  %m = "core.Multiply"(%t1, %scale) : (tensor<1x8x8x4xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
  %a = "core.Add"(%m, %shift) : (tensor<1x8x8x4xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
  %r = "core.Relu"(%a) : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %t2 = "core.Transpose"(%r, %to_nchw) : (tensor<1x8x8x4xf32>, tensor<4xi64>) -> tensor<1x4x8x8xf32>
  %p = "core.MaxPool"(%t2) {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  %t3 = "core.Transpose"(%p, %to_nhwc) : (tensor<1x4x4x4xf32>, tensor<4xi64>) -> tensor<1x4x4x4xf32>
  %g = "core.ReduceMean"(%t3, %axes) : (tensor<1x4x4x4xf32>, tensor<2xi64>) -> tensor<1x4xf32>
  func.return %g : tensor<1x4xf32>
}

// -----

// A residual Add of two transposed branches and a Concat: the Transposes meet below them and
// an NHWC result keeps one Transpose at the output (one at the input, one at the output).
// CHECK-LABEL: func.func @residual_concat
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x4x2xf32>)
// CHECK:         %[[IN:.*]] = "core.Transpose"(%[[X]], %{{.*}}) : {{.*}} -> tensor<1x2x4x4xf32>
// CHECK:         %[[C:.*]] = "core.Convolution"(%[[IN]], %{{.*}})
// CHECK-NEXT:    %[[D:.*]] = "core.Relu"(%[[C]])
// CHECK-NEXT:    %[[A:.*]] = "core.Add"(%[[C]], %[[D]])
// CHECK-NEXT:    %[[CAT:.*]] = "core.Concat"(%[[A]], %[[D]]) {axis = 1 : i64}
// CHECK:         %[[OUT:.*]] = "core.Transpose"(%[[CAT]], %{{.*}}) : {{.*}} -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    func.return %[[OUT]]
func.func @residual_concat(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x4xf32> {
  %to_nchw = core.Constant {value = dense<[0, 3, 1, 2]> : tensor<4xi64>} : tensor<4xi64>
  %to_nhwc = core.Constant {value = dense<[0, 2, 3, 1]> : tensor<4xi64>} : tensor<4xi64>
  %w = core.Constant {value = dense<0.25> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
  %t0 = "core.Transpose"(%x, %to_nchw) : (tensor<1x4x4x2xf32>, tensor<4xi64>) -> tensor<1x2x4x4xf32>
  %c = "core.Convolution"(%t0, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %t1 = "core.Transpose"(%c, %to_nhwc) : (tensor<1x2x4x4xf32>, tensor<4xi64>) -> tensor<1x4x4x2xf32>
  %d = "core.Relu"(%c) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %t2 = "core.Transpose"(%d, %to_nhwc) : (tensor<1x2x4x4xf32>, tensor<4xi64>) -> tensor<1x4x4x2xf32>
  %a = "core.Add"(%t1, %t2) : (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %cat = "core.Concat"(%a, %t2) {axis = 3 : i64} : (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x4xf32>
  func.return %cat : tensor<1x4x4x4xf32>
}
