// RUN: mlconv-opt %s -p core-fuse,core-to-tpu,tpu-conv-strategy{device=cpu} --check-numerics=1e-5,1e-6 --inputs %S/Inputs/x-1x1x4x4.npz -o /dev/null 2>&1 | filecheck %s
// RUN: mlconv-opt %s -p core-fuse,core-to-tpu --check-numerics -q 2>/dev/null | filecheck %s --check-prefix=IR

// --check-numerics runs the IR before and after every pass by the interpreter of its level
// (core, then tpu) on the same inputs and reports each pass's largest change of the outputs.

// CHECK:      numerics after every pass:
// CHECK-NEXT:   (input)            core
// CHECK-NEXT:   core-fuse          core {{.*}} ms  max |change| {{.*}}  ok
// CHECK-NEXT:   core-to-tpu        tpu  {{.*}} ms  max |change| {{.*}}  ok
// CHECK-NEXT:   tpu-conv-strategy  tpu  {{.*}} ms  max |change| {{.*}}  ok
// CHECK-NEXT: numerics preserved by every pass
// IR:         tpu.conv_general_dilated
func.func @main(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = core.Constant {value = dense<1.0> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %c = "core.Convolution"(%x, %w) {strides = array<i64: 1, 1>, pads_begin = array<i64: 0, 0>, pads_end = array<i64: 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %gamma = core.Constant {value = dense<2.0> : tensor<2xf32>} : tensor<2xf32>
  %beta = core.Constant {value = dense<[0.0, 4.0]> : tensor<2xf32>} : tensor<2xf32>
  %mean = core.Constant {value = dense<[0.5, 0.5]> : tensor<2xf32>} : tensor<2xf32>
  %var = core.Constant {value = dense<1.0> : tensor<2xf32>} : tensor<2xf32>
  %y = "core.BatchNormInference"(%c, %gamma, %beta, %mean, %var) {epsilon = 0.0 : f64} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}
