// RUN: mlconv-opt %s --pass-pipeline='builtin.module(onnx-to-core)' --split-input-file | filecheck %s

// ai.onnx.preview.training Adam on two variables: the operands are grouped per variable
// (X1, G1, V1, H1 and X2, G2, V2, H2), the results come out X..., V..., H...; for T > 0 the
// rate is bias-corrected, R sqrt(1 - beta^T) / (1 - alpha^T), selected at run time.
// CHECK-LABEL: func.func @adam_two
// CHECK-SAME:    (%[[R:.*]]: tensor<f32>, %[[T:.*]]: tensor<i64>, %[[X1:.*]]: tensor<2xf32>, %[[X2:.*]]: tensor<3xf32>, %[[G1:.*]]: tensor<2xf32>, %[[G2:.*]]: tensor<3xf32>, %[[V1:.*]]: tensor<2xf32>, %[[V2:.*]]: tensor<3xf32>, %[[H1:.*]]: tensor<2xf32>, %[[H2:.*]]: tensor<3xf32>)
// CHECK:         %[[POS:.*]] = "core.Greater"(%[[T]], %{{.*}}) : (tensor<i64>, tensor<i64>) -> tensor<i1>
// CHECK:         %[[TF:.*]] = "core.Convert"(%[[T]]) {destination_type = f32}
// CHECK:         %[[BETA_T:.*]] = "core.Power"(%{{.*}}, %[[TF]])
// CHECK:         %[[ALPHA_T:.*]] = "core.Power"(%{{.*}}, %[[TF]])
// CHECK:         %[[RATE:.*]] = "core.Select"(%[[POS]], %{{.*}}, %[[R]])
// CHECK:         "core.Multiply"(%{{.*}}, %[[V1]])
// CHECK:         "core.Multiply"(%{{.*}}, %[[G1]])
// CHECK:         %[[V1N:.*]] = "core.Add"
// CHECK:         "core.Multiply"(%{{.*}}, %[[H1]])
// CHECK:         %[[H1N:.*]] = "core.Add"
// CHECK:         %[[SQ1:.*]] = "core.Sqrt"(%[[H1N]])
// CHECK:         %[[Q1:.*]] = "core.Divide"(%[[V1N]], %{{.*}})
// CHECK:         %[[S1:.*]] = "core.Multiply"(%[[RATE]], %[[Q1]])
// CHECK:         %[[X1N:.*]] = "core.Subtract"(%[[X1]], %[[S1]])
// CHECK:         "core.Multiply"(%{{.*}}, %[[V2]])
// CHECK:         %[[V2N:.*]] = "core.Add"
// CHECK:         %[[H2N:.*]] = "core.Add"
// CHECK:         %[[X2N:.*]] = "core.Subtract"(%[[X2]], %{{.*}})
// CHECK:         func.return %[[X1N]], %[[X2N]], %[[V1N]], %[[V2N]], %[[H1N]], %[[H2N]]
builtin.module attributes {onnx.opset_import = {"" = 17 : i64, "ai.onnx.preview.training" = 1 : i64}} {
  func.func @adam_two(%r: tensor<f32>, %t: tensor<i64>, %x1: tensor<2xf32>, %x2: tensor<3xf32>, %g1: tensor<2xf32>, %g2: tensor<3xf32>, %v1: tensor<2xf32>, %v2: tensor<3xf32>, %h1: tensor<2xf32>, %h2: tensor<3xf32>) -> (tensor<2xf32>, tensor<3xf32>, tensor<2xf32>, tensor<3xf32>, tensor<2xf32>, tensor<3xf32>) {
    %y:6 = "onnx.Custom"(%r, %t, %x1, %x2, %g1, %g2, %v1, %v2, %h1, %h2) {domain = "ai.onnx.preview.training", op_type = "Adam", version = 1 : i64, attrs = {alpha = 0.9 : f32, beta = 0.5 : f32}} : (tensor<f32>, tensor<i64>, tensor<2xf32>, tensor<3xf32>, tensor<2xf32>, tensor<3xf32>, tensor<2xf32>, tensor<3xf32>, tensor<2xf32>, tensor<3xf32>) -> (tensor<2xf32>, tensor<3xf32>, tensor<2xf32>, tensor<3xf32>, tensor<2xf32>, tensor<3xf32>)
    func.return %y#0, %y#1, %y#2, %y#3, %y#4, %y#5 : tensor<2xf32>, tensor<3xf32>, tensor<2xf32>, tensor<3xf32>, tensor<2xf32>, tensor<3xf32>
  }
}

// -----

// Nesterov momentum: the gradient's coefficient is beta after the first step and 1 at it
// (T = 0), a run-time Select; X' = X - R (G + alpha V').
// CHECK-LABEL: func.func @nesterov
// CHECK-SAME:    (%[[R:.*]]: tensor<f32>, %[[T:.*]]: tensor<i64>, %[[X:.*]]: tensor<3xf32>, %[[G:.*]]: tensor<3xf32>, %[[V:.*]]: tensor<3xf32>)
// CHECK-NOT:     core.Convert
// CHECK:         %[[POS:.*]] = "core.Greater"(%[[T]], %{{.*}})
// CHECK:         %[[BETA:.*]] = core.Constant {value = dense<5.000000e-01> : tensor<f32>}
// CHECK:         %[[ONE:.*]] = core.Constant {value = dense<1.000000e+00> : tensor<f32>}
// CHECK:         %[[COEF:.*]] = "core.Select"(%[[POS]], %[[BETA]], %[[ONE]])
// CHECK:         %[[AV:.*]] = "core.Multiply"(%{{.*}}, %[[V]])
// CHECK:         %[[BG:.*]] = "core.Multiply"(%[[COEF]], %[[G]])
// CHECK:         %[[VN:.*]] = "core.Add"(%[[AV]], %[[BG]])
// CHECK:         %[[AVN:.*]] = "core.Multiply"(%{{.*}}, %[[VN]])
// CHECK:         %[[STEP:.*]] = "core.Add"(%[[G]], %[[AVN]])
// CHECK:         %[[RS:.*]] = "core.Multiply"(%[[R]], %[[STEP]])
// CHECK:         %[[XN:.*]] = "core.Subtract"(%[[X]], %[[RS]])
// CHECK:         func.return %[[XN]], %[[VN]]
builtin.module attributes {onnx.opset_import = {"" = 17 : i64, "ai.onnx.preview.training" = 1 : i64}} {
  func.func @nesterov(%r: tensor<f32>, %t: tensor<i64>, %x: tensor<3xf32>, %g: tensor<3xf32>, %v: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
    %y:2 = "onnx.Custom"(%r, %t, %x, %g, %v) {domain = "ai.onnx.preview.training", op_type = "Momentum", version = 1 : i64, attrs = {alpha = 0.9 : f32, beta = 0.5 : f32, mode = "nesterov", norm_coefficient = 0.0 : f32}} : (tensor<f32>, tensor<i64>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
    func.return %y#0, %y#1 : tensor<3xf32>, tensor<3xf32>
  }
}

// -----

// Adagrad: the rate decays as R / (1 + T decay_factor); the regularization term
// norm_coefficient * X is added to the gradient first.
// CHECK-LABEL: func.func @adagrad
// CHECK-SAME:    (%[[R:.*]]: tensor<f32>, %[[T:.*]]: tensor<i64>, %[[X:.*]]: tensor<3xf32>, %[[G:.*]]: tensor<3xf32>, %[[H:.*]]: tensor<3xf32>)
// CHECK:         %[[TF:.*]] = "core.Convert"(%[[T]]) {destination_type = f32}
// CHECK:         %[[TD:.*]] = "core.Multiply"(%[[TF]], %{{.*}})
// CHECK:         %[[DEN:.*]] = "core.Add"(%{{.*}}, %[[TD]])
// CHECK:         %[[RATE:.*]] = "core.Divide"(%[[R]], %[[DEN]])
// CHECK:         %[[NX:.*]] = "core.Multiply"(%{{.*}}, %[[X]])
// CHECK:         %[[GR:.*]] = "core.Add"(%[[NX]], %[[G]])
// CHECK:         %[[GG:.*]] = "core.Multiply"(%[[GR]], %[[GR]])
// CHECK:         %[[HN:.*]] = "core.Add"(%[[H]], %[[GG]])
// CHECK:         %[[SQ:.*]] = "core.Sqrt"(%[[HN]])
// CHECK:         %[[SC:.*]] = "core.Add"(%[[SQ]], %{{.*}})
// CHECK:         %[[RG:.*]] = "core.Multiply"(%[[RATE]], %[[GR]])
// CHECK:         %[[ST:.*]] = "core.Divide"(%[[RG]], %[[SC]])
// CHECK:         %[[XN:.*]] = "core.Subtract"(%[[X]], %[[ST]])
// CHECK:         func.return %[[XN]], %[[HN]]
builtin.module attributes {onnx.opset_import = {"" = 17 : i64, "ai.onnx.preview.training" = 1 : i64}} {
  func.func @adagrad(%r: tensor<f32>, %t: tensor<i64>, %x: tensor<3xf32>, %g: tensor<3xf32>, %h: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
    %y:2 = "onnx.Custom"(%r, %t, %x, %g, %h) {domain = "ai.onnx.preview.training", op_type = "Adagrad", version = 1 : i64, attrs = {decay_factor = 0.1 : f32, epsilon = 1.0e-05 : f32, norm_coefficient = 0.001 : f32}} : (tensor<f32>, tensor<i64>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
    func.return %y#0, %y#1 : tensor<3xf32>, tensor<3xf32>
  }
}

