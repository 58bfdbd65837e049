// RUN: mlconv-opt %s --pass-pipeline='builtin.module(core-fuse)' --split-input-file | filecheck %s

// torch.onnx's LayerNorm before opset 17: (x - mean) / sqrt(mean((x - mean)^2) + eps).

// CHECK-LABEL: func.func @mvn_torch
// CHECK:         %[[AXES:.*]] = core.Constant {value = dense<2> : tensor<1xi64>}
// CHECK:         %[[M:.*]] = "core.MVN"(%[[X:.*]], %[[AXES]]) {normalize_variance = true, eps = 1.000000e-05 : f64, eps_mode = "inside_sqrt"}
// CHECK-NOT:     core.ReduceMean
// CHECK:         func.return %[[M]]
func.func @mvn_torch(%x: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  %axes = core.Constant {value = dense<-1> : tensor<1xi64>} : tensor<1xi64>
  %two = core.Constant {value = dense<2.0> : tensor<f32>} : tensor<f32>
  %eps = core.Constant {value = dense<1.0e-05> : tensor<f32>} : tensor<f32>
  %mean = "core.ReduceMean"(%x, %axes) {keep_dims = true} : (tensor<2x3x8xf32>, tensor<1xi64>) -> tensor<2x3x1xf32>
  %d = "core.Subtract"(%x, %mean) : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
  %sq = "core.Power"(%d, %two) : (tensor<2x3x8xf32>, tensor<f32>) -> tensor<2x3x8xf32>
  %var = "core.ReduceMean"(%sq, %axes) {keep_dims = true} : (tensor<2x3x8xf32>, tensor<1xi64>) -> tensor<2x3x1xf32>
  %ve = "core.Add"(%var, %eps) : (tensor<2x3x1xf32>, tensor<f32>) -> tensor<2x3x1xf32>
  %std = "core.Sqrt"(%ve) : (tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
  %y = "core.Divide"(%d, %std) : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
  func.return %y : tensor<2x3x8xf32>
}

// -----

// Negative: the variance is taken over another axis than the mean.

// CHECK-LABEL: func.func @no_mvn_other_axes
// CHECK-NOT:     core.MVN
func.func @no_mvn_other_axes(%x: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  %axes = core.Constant {value = dense<-1> : tensor<1xi64>} : tensor<1xi64>
  %axes1 = core.Constant {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
  %two = core.Constant {value = dense<2.0> : tensor<f32>} : tensor<f32>
  %eps = core.Constant {value = dense<1.0e-05> : tensor<f32>} : tensor<f32>
  %mean = "core.ReduceMean"(%x, %axes) {keep_dims = true} : (tensor<2x3x8xf32>, tensor<1xi64>) -> tensor<2x3x1xf32>
  %d = "core.Subtract"(%x, %mean) : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
  %sq = "core.Power"(%d, %two) : (tensor<2x3x8xf32>, tensor<f32>) -> tensor<2x3x8xf32>
  %var = "core.ReduceMean"(%sq, %axes1) {keep_dims = true} : (tensor<2x3x8xf32>, tensor<1xi64>) -> tensor<2x1x8xf32>
  %ve = "core.Add"(%var, %eps) : (tensor<2x1x8xf32>, tensor<f32>) -> tensor<2x1x8xf32>
  %std = "core.Sqrt"(%ve) : (tensor<2x1x8xf32>) -> tensor<2x1x8xf32>
  %y = "core.Divide"(%d, %std) : (tensor<2x3x8xf32>, tensor<2x1x8xf32>) -> tensor<2x3x8xf32>
  func.return %y : tensor<2x3x8xf32>
}

// -----

// Keras' LayerNormalization: s = gamma / sqrt(var + eps); x * s + (beta - mean * s) written
// as x * s + (-mean * s + beta). It becomes MVN(x) * gamma + beta.

// CHECK-LABEL: func.func @layer_norm_keras
// CHECK:         %[[M:.*]] = "core.MVN"(%[[X:.*]], %{{.*}}) {normalize_variance = true, eps = 1.000000e-03 : f64, eps_mode = "inside_sqrt"}
// CHECK:         %[[G:.*]] = "core.Multiply"(%[[M]], %{{.*}})
// CHECK:         %[[B:.*]] = "core.Add"(%[[G]], %{{.*}})
// CHECK-NOT:     core.SquaredDifference
// CHECK:         func.return %[[B]]
func.func @layer_norm_keras(%x: tensor<1x6x4xf32>) -> tensor<1x6x4xf32> {
  %axes = core.Constant {value = dense<-1> : tensor<1xi32>} : tensor<1xi32>
  %eps = core.Constant {value = dense<1.0e-03> : tensor<f32>} : tensor<f32>
  %one = core.Constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %gamma = core.Constant {value = dense<[[[1.0, 2.0, 3.0, 4.0]]]> : tensor<1x1x4xf32>} : tensor<1x1x4xf32>
  %beta = core.Constant {value = dense<[[[0.5, -0.5, 0.25, 0.0]]]> : tensor<1x1x4xf32>} : tensor<1x1x4xf32>
  %mean = "core.ReduceMean"(%x, %axes) {keep_dims = true} : (tensor<1x6x4xf32>, tensor<1xi32>) -> tensor<1x6x1xf32>
  %sd = "core.SquaredDifference"(%x, %mean) : (tensor<1x6x4xf32>, tensor<1x6x1xf32>) -> tensor<1x6x4xf32>
  %var = "core.ReduceMean"(%sd, %axes) {keep_dims = true} : (tensor<1x6x4xf32>, tensor<1xi32>) -> tensor<1x6x1xf32>
  %ve = "core.Add"(%var, %eps) : (tensor<1x6x1xf32>, tensor<f32>) -> tensor<1x6x1xf32>
  %std = "core.Sqrt"(%ve) : (tensor<1x6x1xf32>) -> tensor<1x6x1xf32>
  %inv = "core.Divide"(%one, %std) : (tensor<f32>, tensor<1x6x1xf32>) -> tensor<1x6x1xf32>
  %s = "core.Multiply"(%inv, %gamma) : (tensor<1x6x1xf32>, tensor<1x1x4xf32>) -> tensor<1x6x4xf32>
  %xs = "core.Multiply"(%x, %s) : (tensor<1x6x4xf32>, tensor<1x6x4xf32>) -> tensor<1x6x4xf32>
  %nm = "core.Negative"(%mean) : (tensor<1x6x1xf32>) -> tensor<1x6x1xf32>
  %ms = "core.Multiply"(%nm, %s) : (tensor<1x6x1xf32>, tensor<1x6x4xf32>) -> tensor<1x6x4xf32>
  %sh = "core.Add"(%ms, %beta) : (tensor<1x6x4xf32>, tensor<1x1x4xf32>) -> tensor<1x6x4xf32>
  %y = "core.Add"(%xs, %sh) : (tensor<1x6x4xf32>, tensor<1x6x4xf32>) -> tensor<1x6x4xf32>
  func.return %y : tensor<1x6x4xf32>
}

// -----

// Negative: the shift uses another mean than the variance's (a different tensor).

// CHECK-LABEL: func.func @no_layer_norm_other_mean
// CHECK-NOT:     core.MVN
func.func @no_layer_norm_other_mean(%x: tensor<1x6x4xf32>, %z: tensor<1x6x4xf32>) -> tensor<1x6x4xf32> {
  %axes = core.Constant {value = dense<-1> : tensor<1xi32>} : tensor<1xi32>
  %eps = core.Constant {value = dense<1.0e-03> : tensor<f32>} : tensor<f32>
  %one = core.Constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %mean = "core.ReduceMean"(%x, %axes) {keep_dims = true} : (tensor<1x6x4xf32>, tensor<1xi32>) -> tensor<1x6x1xf32>
  %zmean = "core.ReduceMean"(%z, %axes) {keep_dims = true} : (tensor<1x6x4xf32>, tensor<1xi32>) -> tensor<1x6x1xf32>
  %sd = "core.SquaredDifference"(%x, %mean) : (tensor<1x6x4xf32>, tensor<1x6x1xf32>) -> tensor<1x6x4xf32>
  %var = "core.ReduceMean"(%sd, %axes) {keep_dims = true} : (tensor<1x6x4xf32>, tensor<1xi32>) -> tensor<1x6x1xf32>
  %ve = "core.Add"(%var, %eps) : (tensor<1x6x1xf32>, tensor<f32>) -> tensor<1x6x1xf32>
  %std = "core.Sqrt"(%ve) : (tensor<1x6x1xf32>) -> tensor<1x6x1xf32>
  %inv = "core.Divide"(%one, %std) : (tensor<f32>, tensor<1x6x1xf32>) -> tensor<1x6x1xf32>
  %xs = "core.Multiply"(%x, %inv) : (tensor<1x6x4xf32>, tensor<1x6x1xf32>) -> tensor<1x6x4xf32>
  %nm = "core.Negative"(%zmean) : (tensor<1x6x1xf32>) -> tensor<1x6x1xf32>
  %ms = "core.Multiply"(%nm, %inv) : (tensor<1x6x1xf32>, tensor<1x6x1xf32>) -> tensor<1x6x1xf32>
  %y = "core.Add"(%xs, %ms) : (tensor<1x6x4xf32>, tensor<1x6x1xf32>) -> tensor<1x6x4xf32>
  func.return %y : tensor<1x6x4xf32>
}

// -----

// torch's F.normalize: x / Broadcast(Clamp(ReduceL2(x), eps, FLT_MAX)); eps becomes eps^2
// of `max` mode (max(sqrt(s), e) = sqrt(max(s, e^2))).

// CHECK-LABEL: func.func @normalize_l2_torch
// CHECK:         %[[N:.*]] = "core.NormalizeL2"(%[[X:.*]], %{{.*}}) {eps = 1.000000e-24 : f64, eps_mode = "max"}
// CHECK-NOT:     core.ReduceL2
// CHECK:         func.return %[[N]]
func.func @normalize_l2_torch(%x: tensor<1x6x16xf32>) -> tensor<1x6x16xf32> {
  %axes = core.Constant {value = dense<-1> : tensor<1xi64>} : tensor<1xi64>
  %shape = core.Constant {value = dense<[1, 6, 16]> : tensor<3xi64>} : tensor<3xi64>
  %n = "core.ReduceL2"(%x, %axes) {keep_dims = true} : (tensor<1x6x16xf32>, tensor<1xi64>) -> tensor<1x6x1xf32>
  %c = "core.Clamp"(%n) {min = 1.0e-12 : f64, max = 3.4028234663852886e+38 : f64} : (tensor<1x6x1xf32>) -> tensor<1x6x1xf32>
  %b = "core.Broadcast"(%c, %shape) : (tensor<1x6x1xf32>, tensor<3xi64>) -> tensor<1x6x16xf32>
  %y = "core.Divide"(%x, %b) : (tensor<1x6x16xf32>, tensor<1x6x16xf32>) -> tensor<1x6x16xf32>
  func.return %y : tensor<1x6x16xf32>
}

// -----

// TensorFlow's l2_normalize: x * rsqrt(max(sum(x * x), eps)), rsqrt as 1 / sqrt.

// CHECK-LABEL: func.func @normalize_l2_tf
// CHECK:         %[[N:.*]] = "core.NormalizeL2"(%[[X:.*]], %{{.*}}) {eps = 1.000000e-12 : f64, eps_mode = "max"}
// CHECK:         func.return %[[N]]
func.func @normalize_l2_tf(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %axes = core.Constant {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
  %eps = core.Constant {value = dense<1.0e-12> : tensor<f32>} : tensor<f32>
  %one = core.Constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %sq = "core.Multiply"(%x, %x) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %s = "core.ReduceSum"(%sq, %axes) {keep_dims = true} : (tensor<4x16xf32>, tensor<1xi64>) -> tensor<4x1xf32>
  %m = "core.Maximum"(%s, %eps) : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r = "core.Sqrt"(%m) : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %inv = "core.Divide"(%one, %r) : (tensor<f32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %y = "core.Multiply"(%x, %inv) : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  func.return %y : tensor<4x16xf32>
}

// -----

// Negative: the sum of squares of another tensor.

// CHECK-LABEL: func.func @no_normalize_l2_other_tensor
// CHECK-NOT:     core.NormalizeL2
func.func @no_normalize_l2_other_tensor(%x: tensor<4x16xf32>, %z: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %axes = core.Constant {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
  %eps = core.Constant {value = dense<1.0e-12> : tensor<f32>} : tensor<f32>
  %sq = "core.Multiply"(%z, %z) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %s = "core.ReduceSum"(%sq, %axes) {keep_dims = true} : (tensor<4x16xf32>, tensor<1xi64>) -> tensor<4x1xf32>
  %m = "core.Maximum"(%s, %eps) : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r = "core.Sqrt"(%m) : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %y = "core.Divide"(%x, %r) : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  func.return %y : tensor<4x16xf32>
}

// -----

// Negative: SquaredDifference(x, x) is zero, not the variance of x about its mean.

// CHECK-LABEL: func.func @no_layer_norm_variance_of_x_and_x
// CHECK:         core.SquaredDifference
// CHECK-NOT:     core.MVN
func.func @no_layer_norm_variance_of_x_and_x(%x: tensor<1x6x4xf32>) -> tensor<1x6x4xf32> {
  %axes = core.Constant {value = dense<-1> : tensor<1xi32>} : tensor<1xi32>
  %eps = core.Constant {value = dense<1.0e-03> : tensor<f32>} : tensor<f32>
  %one = core.Constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %gamma = core.Constant {value = dense<[[[1.0, 2.0, 3.0, 4.0]]]> : tensor<1x1x4xf32>} : tensor<1x1x4xf32>
  %beta = core.Constant {value = dense<[[[0.5, -0.5, 0.25, 0.0]]]> : tensor<1x1x4xf32>} : tensor<1x1x4xf32>
  %mean = "core.ReduceMean"(%x, %axes) {keep_dims = true} : (tensor<1x6x4xf32>, tensor<1xi32>) -> tensor<1x6x1xf32>
  %sd = "core.SquaredDifference"(%x, %x) : (tensor<1x6x4xf32>, tensor<1x6x4xf32>) -> tensor<1x6x4xf32>
  %var = "core.ReduceMean"(%sd, %axes) {keep_dims = true} : (tensor<1x6x4xf32>, tensor<1xi32>) -> tensor<1x6x1xf32>
  %ve = "core.Add"(%var, %eps) : (tensor<1x6x1xf32>, tensor<f32>) -> tensor<1x6x1xf32>
  %std = "core.Sqrt"(%ve) : (tensor<1x6x1xf32>) -> tensor<1x6x1xf32>
  %inv = "core.Divide"(%one, %std) : (tensor<f32>, tensor<1x6x1xf32>) -> tensor<1x6x1xf32>
  %s = "core.Multiply"(%inv, %gamma) : (tensor<1x6x1xf32>, tensor<1x1x4xf32>) -> tensor<1x6x4xf32>
  %xs = "core.Multiply"(%x, %s) : (tensor<1x6x4xf32>, tensor<1x6x4xf32>) -> tensor<1x6x4xf32>
  %nm = "core.Negative"(%mean) : (tensor<1x6x1xf32>) -> tensor<1x6x1xf32>
  %ms = "core.Multiply"(%nm, %s) : (tensor<1x6x1xf32>, tensor<1x6x4xf32>) -> tensor<1x6x4xf32>
  %sh = "core.Add"(%ms, %beta) : (tensor<1x6x4xf32>, tensor<1x1x4xf32>) -> tensor<1x6x4xf32>
  %y = "core.Add"(%xs, %sh) : (tensor<1x6x4xf32>, tensor<1x6x4xf32>) -> tensor<1x6x4xf32>
  func.return %y : tensor<1x6x4xf32>
}
