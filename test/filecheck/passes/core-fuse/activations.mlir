// RUN: mlconv-opt %s --pass-pipeline='builtin.module(core-fuse)' --split-input-file | filecheck %s

// x * sigmoid(x) is Swish without beta.

// CHECK-LABEL: func.func @swish_sigmoid
// CHECK:         %[[S:.*]] = "core.Swish"(%[[X:.*]]) : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NOT:     core.Sigmoid
// CHECK:         func.return %[[S]]
func.func @swish_sigmoid(%x: tensor<8xf32>) -> tensor<8xf32> {
  %s = "core.Sigmoid"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %y = "core.Multiply"(%x, %s) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// Keras 3's silu: x * sigmoid(1.0 * x); a beta of 1 is dropped.

// CHECK-LABEL: func.func @swish_keras_beta_one
// CHECK:         %[[S:.*]] = "core.Swish"(%{{.*}}) : (tensor<8xf32>) -> tensor<8xf32>
// CHECK:         func.return %[[S]]
func.func @swish_keras_beta_one(%x: tensor<8xf32>) -> tensor<8xf32> {
  %one = core.Constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %bx = "core.Multiply"(%one, %x) : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %s = "core.Sigmoid"(%bx) : (tensor<8xf32>) -> tensor<8xf32>
  %y = "core.Multiply"(%x, %s) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// Seed 000's x / (1 + e^(-beta*x)) is Swish with beta.

// CHECK-LABEL: func.func @swish_division
// CHECK:         %[[BETA:.*]] = core.Constant {value = dense<1.500000e+00> : tensor<f32>}
// CHECK:         %[[S:.*]] = "core.Swish"(%[[X:.*]], %[[BETA]])
// CHECK-NOT:     core.Exp
// CHECK:         func.return %[[S]]
func.func @swish_division(%x: tensor<8xf32>) -> tensor<8xf32> {
  %beta = core.Constant {value = dense<1.5> : tensor<f32>} : tensor<f32>
  %one = core.Constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %bx = "core.Multiply"(%beta, %x) : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %n = "core.Negative"(%bx) : (tensor<8xf32>) -> tensor<8xf32>
  %e = "core.Exp"(%n) : (tensor<8xf32>) -> tensor<8xf32>
  %d = "core.Add"(%one, %e) : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %y = "core.Divide"(%x, %d) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// Negative: the gate is the sigmoid of another value (an SE block's gating, not Swish).

// CHECK-LABEL: func.func @no_swish_other_gate
// CHECK:         core.Sigmoid
// CHECK:         "core.Multiply"
// CHECK-NOT:     core.Swish
func.func @no_swish_other_gate(%x: tensor<8xf32>, %g: tensor<8xf32>) -> tensor<8xf32> {
  %s = "core.Sigmoid"(%g) : (tensor<8xf32>) -> tensor<8xf32>
  %y = "core.Multiply"(%x, %s) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// Negative: the sigmoid is also a result (an extra use): fusing would compute it twice.

// CHECK-LABEL: func.func @no_swish_extra_use
// CHECK:         core.Sigmoid
// CHECK-NOT:     core.Swish
func.func @no_swish_extra_use(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %s = "core.Sigmoid"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %y = "core.Multiply"(%x, %s) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %y, %s : tensor<8xf32>, tensor<8xf32>
}

// -----

// relu6(x + 3) / 6 is HSigmoid (relu6 as Clamp, as tf-to-core writes Relu6).

// CHECK-LABEL: func.func @hsigmoid_clamp
// CHECK:         %[[H:.*]] = "core.HSigmoid"(%[[X:.*]]) : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NOT:     core.Clamp
// CHECK:         func.return %[[H]]
func.func @hsigmoid_clamp(%x: tensor<8xf32>) -> tensor<8xf32> {
  %three = core.Constant {value = dense<3.0> : tensor<f32>} : tensor<f32>
  %six = core.Constant {value = dense<6.0> : tensor<f32>} : tensor<f32>
  %a = "core.Add"(%x, %three) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %r = "core.Clamp"(%a) {min = 0.0 : f64, max = 6.0 : f64} : (tensor<8xf32>) -> tensor<8xf32>
  %y = "core.Divide"(%r, %six) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// torch's hardsigmoid: HardSigmoid with alpha 1/6 and beta 0.5.

// CHECK-LABEL: func.func @hsigmoid_hard_sigmoid
// CHECK:         %[[H:.*]] = "core.HSigmoid"(%[[X:.*]]) : (tensor<8xf32>) -> tensor<8xf32>
// CHECK:         func.return %[[H]]
func.func @hsigmoid_hard_sigmoid(%x: tensor<8xf32>) -> tensor<8xf32> {
  %alpha = core.Constant {value = dense<0.16666667> : tensor<f32>} : tensor<f32>
  %beta = core.Constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %y = "core.HardSigmoid"(%x, %alpha, %beta) : (tensor<8xf32>, tensor<f32>, tensor<f32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// Negative: HardSigmoid with ONNX's default alpha 0.2 is not HSigmoid.

// CHECK-LABEL: func.func @no_hsigmoid_wrong_alpha
// CHECK:         core.HardSigmoid
// CHECK-NOT:     core.HSigmoid
func.func @no_hsigmoid_wrong_alpha(%x: tensor<8xf32>) -> tensor<8xf32> {
  %alpha = core.Constant {value = dense<0.2> : tensor<f32>} : tensor<f32>
  %beta = core.Constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %y = "core.HardSigmoid"(%x, %alpha, %beta) : (tensor<8xf32>, tensor<f32>, tensor<f32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// Keras' hard_swish: x * relu6(x + 3) * (1/6), relu6 as Minimum(Maximum(., 0), 6).

// CHECK-LABEL: func.func @hswish_min_max
// CHECK:         %[[H:.*]] = "core.HSwish"(%[[X:.*]]) : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NOT:     core.Maximum
// CHECK:         func.return %[[H]]
func.func @hswish_min_max(%x: tensor<8xf32>) -> tensor<8xf32> {
  %zero = core.Constant {value = dense<0.0> : tensor<f32>} : tensor<f32>
  %three = core.Constant {value = dense<3.0> : tensor<f32>} : tensor<f32>
  %six = core.Constant {value = dense<6.0> : tensor<f32>} : tensor<f32>
  %sixth = core.Constant {value = dense<0.16666667> : tensor<f32>} : tensor<f32>
  %a = "core.Add"(%x, %three) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %m = "core.Maximum"(%a, %zero) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %r = "core.Minimum"(%m, %six) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %p = "core.Multiply"(%x, %r) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %y = "core.Multiply"(%p, %sixth) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// x * HSigmoid(x) is HSwish.

// CHECK-LABEL: func.func @hswish_from_hsigmoid
// CHECK:         %[[H:.*]] = "core.HSwish"(%[[X:.*]]) : (tensor<8xf32>) -> tensor<8xf32>
// CHECK:         func.return %[[H]]
func.func @hswish_from_hsigmoid(%x: tensor<8xf32>) -> tensor<8xf32> {
  %h = "core.HSigmoid"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %y = "core.Multiply"(%h, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// Negative: relu6(x + 4) / 6 (a wrong constant).

// CHECK-LABEL: func.func @no_hsigmoid_wrong_shift
// CHECK:         core.Clamp
// CHECK-NOT:     core.HSigmoid
func.func @no_hsigmoid_wrong_shift(%x: tensor<8xf32>) -> tensor<8xf32> {
  %four = core.Constant {value = dense<4.0> : tensor<f32>} : tensor<f32>
  %six = core.Constant {value = dense<6.0> : tensor<f32>} : tensor<f32>
  %a = "core.Add"(%x, %four) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %r = "core.Clamp"(%a) {min = 0.0 : f64, max = 6.0 : f64} : (tensor<8xf32>) -> tensor<8xf32>
  %y = "core.Divide"(%r, %six) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// log(exp(x) + 1) is SoftPlus; x * tanh(SoftPlus(x)) then is Mish.

// CHECK-LABEL: func.func @mish
// CHECK:         %[[M:.*]] = "core.Mish"(%[[X:.*]]) : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NOT:     core.SoftPlus
// CHECK-NOT:     core.Tanh
// CHECK:         func.return %[[M]]
func.func @mish(%x: tensor<8xf32>) -> tensor<8xf32> {
  %one = core.Constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %e = "core.Exp"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %a = "core.Add"(%e, %one) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %s = "core.Log"(%a) : (tensor<8xf32>) -> tensor<8xf32>
  %t = "core.Tanh"(%s) : (tensor<8xf32>) -> tensor<8xf32>
  %y = "core.Multiply"(%x, %t) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// SoftPlus alone.

// CHECK-LABEL: func.func @softplus
// CHECK:         %[[S:.*]] = "core.SoftPlus"(%[[X:.*]]) : (tensor<8xf32>) -> tensor<8xf32>
// CHECK:         func.return %[[S]]
func.func @softplus(%x: tensor<8xf32>) -> tensor<8xf32> {
  %one = core.Constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %e = "core.Exp"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %a = "core.Add"(%one, %e) : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %y = "core.Log"(%a) : (tensor<8xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// Negative: log(exp(x) + 2).

// CHECK-LABEL: func.func @no_softplus_wrong_constant
// CHECK:         core.Log
// CHECK-NOT:     core.SoftPlus
func.func @no_softplus_wrong_constant(%x: tensor<8xf32>) -> tensor<8xf32> {
  %two = core.Constant {value = dense<2.0> : tensor<f32>} : tensor<f32>
  %e = "core.Exp"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %a = "core.Add"(%e, %two) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %y = "core.Log"(%a) : (tensor<8xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// torch.onnx's GELU: (x * (erf(x / sqrt(2)) + 1)) * 0.5.

// CHECK-LABEL: func.func @gelu_erf_torch
// CHECK:         %[[G:.*]] = "core.Gelu"(%[[X:.*]]) {approximation_mode = "ERF"} : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NOT:     core.Erf
// CHECK:         func.return %[[G]]
func.func @gelu_erf_torch(%x: tensor<8xf32>) -> tensor<8xf32> {
  %sqrt2 = core.Constant {value = dense<1.4142135> : tensor<f32>} : tensor<f32>
  %one = core.Constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %half = core.Constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %d = "core.Divide"(%x, %sqrt2) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %e = "core.Erf"(%d) : (tensor<8xf32>) -> tensor<8xf32>
  %a = "core.Add"(%e, %one) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %m = "core.Multiply"(%x, %a) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %y = "core.Multiply"(%m, %half) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// Keras 3's GELU: (0.5 * x) * (1 - erf(-x * (1/sqrt(2)))).

// CHECK-LABEL: func.func @gelu_erf_keras
// CHECK:         %[[G:.*]] = "core.Gelu"(%[[X:.*]]) {approximation_mode = "ERF"} : (tensor<8xf32>) -> tensor<8xf32>
// CHECK:         func.return %[[G]]
func.func @gelu_erf_keras(%x: tensor<8xf32>) -> tensor<8xf32> {
  %half = core.Constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %c = core.Constant {value = dense<0.70710677> : tensor<f32>} : tensor<f32>
  %one = core.Constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %hx = "core.Multiply"(%half, %x) : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %n = "core.Negative"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %s = "core.Multiply"(%n, %c) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %e = "core.Erf"(%s) : (tensor<8xf32>) -> tensor<8xf32>
  %g = "core.Subtract"(%one, %e) : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %y = "core.Multiply"(%hx, %g) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// GELU's tanh approximation: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).

// CHECK-LABEL: func.func @gelu_tanh
// CHECK:         %[[G:.*]] = "core.Gelu"(%[[X:.*]]) {approximation_mode = "TANH"} : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NOT:     core.Tanh
// CHECK:         func.return %[[G]]
func.func @gelu_tanh(%x: tensor<8xf32>) -> tensor<8xf32> {
  %three = core.Constant {value = dense<3.0> : tensor<f32>} : tensor<f32>
  %k = core.Constant {value = dense<0.044715> : tensor<f32>} : tensor<f32>
  %c = core.Constant {value = dense<0.7978846> : tensor<f32>} : tensor<f32>
  %one = core.Constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %half = core.Constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %p = "core.Power"(%x, %three) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %kp = "core.Multiply"(%p, %k) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %in = "core.Add"(%x, %kp) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %s = "core.Multiply"(%in, %c) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %t = "core.Tanh"(%s) : (tensor<8xf32>) -> tensor<8xf32>
  %a = "core.Add"(%t, %one) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %hx = "core.Multiply"(%x, %half) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %y = "core.Multiply"(%hx, %a) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// Negative: erf(x / 2) is not GELU's argument.

// CHECK-LABEL: func.func @no_gelu_wrong_scale
// CHECK:         core.Erf
// CHECK-NOT:     core.Gelu
func.func @no_gelu_wrong_scale(%x: tensor<8xf32>) -> tensor<8xf32> {
  %two = core.Constant {value = dense<2.0> : tensor<f32>} : tensor<f32>
  %one = core.Constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %half = core.Constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %d = "core.Divide"(%x, %two) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %e = "core.Erf"(%d) : (tensor<8xf32>) -> tensor<8xf32>
  %a = "core.Add"(%e, %one) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %m = "core.Multiply"(%x, %a) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %y = "core.Multiply"(%m, %half) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// Negative: the erf's result is also returned (an extra use).

// CHECK-LABEL: func.func @no_gelu_extra_use
// CHECK:         core.Erf
// CHECK-NOT:     core.Gelu
func.func @no_gelu_extra_use(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %sqrt2 = core.Constant {value = dense<1.4142135> : tensor<f32>} : tensor<f32>
  %one = core.Constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %half = core.Constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %d = "core.Divide"(%x, %sqrt2) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %e = "core.Erf"(%d) : (tensor<8xf32>) -> tensor<8xf32>
  %a = "core.Add"(%e, %one) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %m = "core.Multiply"(%x, %a) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %y = "core.Multiply"(%m, %half) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  func.return %y, %e : tensor<8xf32>, tensor<8xf32>
}

// -----

// GELU (tanh) whose x^3 is a product x * x * x (as torch exports x * x * x).

// CHECK-LABEL: func.func @gelu_tanh_cube_as_product
// CHECK:         %[[G:.*]] = "core.Gelu"(%[[X:.*]]) {approximation_mode = "TANH"} : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NOT:     core.Tanh
// CHECK:         func.return %[[G]]
func.func @gelu_tanh_cube_as_product(%x: tensor<8xf32>) -> tensor<8xf32> {
  %k = core.Constant {value = dense<0.044715> : tensor<f32>} : tensor<f32>
  %c = core.Constant {value = dense<0.7978846> : tensor<f32>} : tensor<f32>
  %one = core.Constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %half = core.Constant {value = dense<0.5> : tensor<f32>} : tensor<f32>
  %xx = "core.Multiply"(%x, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %p = "core.Multiply"(%xx, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %kp = "core.Multiply"(%p, %k) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %in = "core.Add"(%x, %kp) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %s = "core.Multiply"(%in, %c) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %t = "core.Tanh"(%s) : (tensor<8xf32>) -> tensor<8xf32>
  %a = "core.Add"(%t, %one) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %hx = "core.Multiply"(%x, %half) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %y = "core.Multiply"(%hx, %a) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}
