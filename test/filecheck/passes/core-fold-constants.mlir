// RUN: mlconv-opt %s --pass-pipeline='builtin.module(core-fold-constants)' --split-input-file | filecheck %s
// RUN: mlconv-opt %s --pass-pipeline='builtin.module(core-fold-constants{static-shape=true})' --split-input-file | filecheck %s --check-prefix=STATIC

// Arithmetic on constants becomes constants; ops on inputs stay. (The constants that fed the
// folded ops stay behind unused, for dce to remove.)
// CHECK-LABEL: func.func @arithmetic
// CHECK-SAME:    (%[[X:.*]]: tensor<3xf32>)
// CHECK-NOT:     core.Add
// CHECK:         %[[C:.*]] = core.Constant {value = dense<[3.000000e+00, 5.000000e+00, 7.000000e+00]> : tensor<3xf32>} : tensor<3xf32>
// CHECK-NEXT:    %[[Y:.*]] = "core.Multiply"(%[[X]], %[[C]]) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    func.return %[[Y]] : tensor<3xf32>
func.func @arithmetic(%x: tensor<3xf32>) -> tensor<3xf32> {
  %a = core.Constant {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
  %b = core.Constant {value = dense<2.0> : tensor<f32>} : tensor<f32>
  %m = "core.Multiply"(%a, %b) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %one = core.Constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %s = "core.Add"(%m, %one) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %y = "core.Multiply"(%x, %s) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}

// STATIC-LABEL: func.func @arithmetic
// STATIC:         core.Constant {value = dense<[3.000000e+00, 5.000000e+00, 7.000000e+00]> : tensor<3xf32>}

// -----

// Integer and boolean results, and a reduction with its axes.
// CHECK-LABEL: func.func @integers
// CHECK-NOT:     core.ReduceProd
// CHECK:         %[[C:.*]] = core.Constant {value = dense<24> : tensor<1xi64>} : tensor<1xi64>
// CHECK-NOT:     core.Less
// CHECK:         %[[B:.*]] = core.Constant {value = dense<[true, false]> : tensor<2xi1>} : tensor<2xi1>
// CHECK-NEXT:    func.return %[[C]], %[[B]] : tensor<1xi64>, tensor<2xi1>
func.func @integers() -> (tensor<1xi64>, tensor<2xi1>) {
  %v = core.Constant {value = dense<[2, 3, 4]> : tensor<3xi64>} : tensor<3xi64>
  %axes = core.Constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
  %p = "core.ReduceProd"(%v, %axes) {keep_dims = true} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
  %a = core.Constant {value = dense<[1, 5]> : tensor<2xi64>} : tensor<2xi64>
  %b = core.Constant {value = dense<[3, 3]> : tensor<2xi64>} : tensor<2xi64>
  %l = "core.Less"(%a, %b) : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi1>
  func.return %p, %l : tensor<1xi64>, tensor<2xi1>
}

// -----

// Flatten's shape subgraph (ShapeOf -> Gather -> Concat -> Reshape) starts at ShapeOf: kept by
// default, so the function still works for any batch once the input is dynamic again (its
// result type is still refined from the shape's known entries); folded into a constant target
// shape with static-shape=true.
// CHECK-LABEL: func.func @shape_subgraph
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK:         %[[SHAPE:.*]] = "core.ShapeOf"(%[[X]]) : (tensor<2x3x4xf32>) -> tensor<3xi64>
// CHECK:         %[[DIM:.*]] = "core.Gather"(%[[SHAPE]], %{{.*}}, %{{.*}})
// CHECK:         %[[TARGET:.*]] = "core.Concat"(%[[DIM]], %{{.*}}) {axis = 0 : i64}
// CHECK:         %[[R:.*]] = "core.Reshape"(%[[X]], %[[TARGET]]) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
// CHECK:         func.return %[[R]] : tensor<2x12xf32>

// STATIC-LABEL: func.func @shape_subgraph
// STATIC-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>)
// STATIC-SAME:    -> tensor<2x12xf32>
// STATIC-NOT:     core.ShapeOf
// STATIC:         core.Constant {value = dense<[2, 3, 4]> : tensor<3xi64>} : tensor<3xi64>
// STATIC-NOT:     core.Gather
// STATIC-NOT:     core.Concat
// STATIC:         %[[TARGET:.*]] = core.Constant {value = dense<[2, -1]> : tensor<2xi64>} : tensor<2xi64>
// STATIC-NEXT:    %[[R:.*]] = "core.Reshape"(%[[X]], %[[TARGET]]) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
// STATIC-NEXT:    func.return %[[R]] : tensor<2x12xf32>
func.func @shape_subgraph(%x: tensor<2x3x4xf32>) -> tensor<?x?xf32> {
  %shape = "core.ShapeOf"(%x) : (tensor<2x3x4xf32>) -> tensor<3xi64>
  %i = core.Constant {value = dense<[0]> : tensor<1xi64>} : tensor<1xi64>
  %axis = core.Constant {value = dense<0> : tensor<i64>} : tensor<i64>
  %dim = "core.Gather"(%shape, %i, %axis) : (tensor<3xi64>, tensor<1xi64>, tensor<i64>) -> tensor<1xi64>
  %rest = core.Constant {value = dense<[-1]> : tensor<1xi64>} : tensor<1xi64>
  %target = "core.Concat"(%dim, %rest) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %r = "core.Reshape"(%x, %target) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  func.return %r : tensor<?x?xf32>
}

// -----

// A ShapeOf of a dynamic tensor is not folded even with static-shape=true.
// CHECK-LABEL: func.func @dynamic_shape
// CHECK:         "core.ShapeOf"
// STATIC-LABEL: func.func @dynamic_shape
// STATIC:         %[[SHAPE:.*]] = "core.ShapeOf"(%{{.*}}) : (tensor<?x3xf32>) -> tensor<2xi64>
// STATIC:         func.return %[[SHAPE]]
func.func @dynamic_shape(%x: tensor<?x3xf32>) -> tensor<2xi64> {
  %shape = "core.ShapeOf"(%x) : (tensor<?x3xf32>) -> tensor<2xi64>
  func.return %shape : tensor<2xi64>
}

// -----

// A small captured constant is copied into the body that uses it, so the body's Unsqueeze
// folds and the Slice gets a constant step (TorchScript's batched NMS in SSD: Constant ->
// Unsqueeze -> Slice inside an If whose condition depends on the data).
// CHECK-LABEL: func.func @captured_constant_in_body
// CHECK:         "core.If"
// CHECK:         ^{{.*}}(%[[D:.*]]: tensor<6xf32>, %{{.*}}: tensor<i64>):
// CHECK-NOT:       core.Unsqueeze
// CHECK:           %[[STEP:.*]] = core.Constant {value = dense<2> : tensor<1xi64>} : tensor<1xi64>
// CHECK:           "core.Slice"(%[[D]], %{{.*}}, %{{.*}}, %[[STEP]]) : (tensor<6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xf32>
// CHECK:         }, {
// CHECK-NEXT:    ^{{.*}}(%[[E:.*]]: tensor<6xf32>, %{{.*}}: tensor<i64>):
// CHECK-NOT:       core.Constant
// CHECK:           "core.Negative"(%[[E]])
func.func @captured_constant_in_body(%c: tensor<i1>, %x: tensor<6xf32>) -> tensor<?xf32> {
  %two = core.Constant {value = dense<2> : tensor<i64>} : tensor<i64>
  %y = "core.If"(%c, %x, %two) ({
  ^bb0(%d: tensor<6xf32>, %s: tensor<i64>):
    %axes = core.Constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
    %start = core.Constant {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
    %stop = core.Constant {value = dense<6> : tensor<1xi64>} : tensor<1xi64>
    %step = "core.Unsqueeze"(%s, %axes) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
    %t = "core.Slice"(%d, %start, %stop, %step) : (tensor<6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xf32>
    core.Yield %t : tensor<?xf32>
  }, {
  ^bb0(%e: tensor<6xf32>, %u: tensor<i64>):
    %n = "core.Negative"(%e) : (tensor<6xf32>) -> tensor<6xf32>
    core.Yield %n : tensor<6xf32>
  }) : (tensor<i1>, tensor<6xf32>, tensor<i64>) -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}

// -----

// A core.If whose condition is a constant becomes the ops of the branch it takes, folded in
// turn (its captured operands in place of the block arguments).
// CHECK-LABEL: func.func @if_constant_condition
// CHECK-SAME:    (%[[X:.*]]: tensor<3xf32>)
// CHECK-NOT:     core.If
// CHECK:         %[[C:.*]] = core.Constant {value = dense<4.000000e+00> : tensor<f32>} : tensor<f32>
// CHECK-NEXT:    %[[Y:.*]] = "core.Multiply"(%[[X]], %[[C]]) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
// CHECK-NEXT:    func.return %[[Y]] : tensor<3xf32>
func.func @if_constant_condition(%x: tensor<3xf32>) -> tensor<3xf32> {
  %c = core.Constant {value = dense<false> : tensor<i1>} : tensor<i1>
  %two = core.Constant {value = dense<2.0> : tensor<f32>} : tensor<f32>
  %y = "core.If"(%c, %x, %two) ({
  ^bb0(%a: tensor<3xf32>, %s: tensor<f32>):
    core.Yield %a : tensor<3xf32>
  }, {
  ^bb0(%b: tensor<3xf32>, %t: tensor<f32>):
    %sq = "core.Multiply"(%t, %t) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %m = "core.Multiply"(%b, %sq) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    core.Yield %m : tensor<3xf32>
  }) : (tensor<i1>, tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}

// -----

// ImageDecoder of constant bytes (a 2x1 grayscale PGM: "P5\n2 1\n255\n" then pixels 7, 200)
// folds to its pixels, gray replicated to BGR, and the result type becomes static.
// CHECK-LABEL: func.func @decode_constant
// CHECK-SAME:    -> tensor<1x2x3xui8>
// CHECK:         %[[Y:.*]] = core.Constant {value = dense<{{\[\[\[}}7, 7, 7], [200, 200, 200]]]> : tensor<1x2x3xui8>}
// CHECK-NOT:     core.ImageDecoder
// CHECK:         func.return %[[Y]]
func.func @decode_constant() -> tensor<?x?x3xui8> {
  %bytes = core.Constant {value = dense<[80, 53, 10, 50, 32, 49, 10, 50, 53, 53, 10, 7, 200]> : tensor<13xui8>} : tensor<13xui8>
  %y = "core.ImageDecoder"(%bytes) {pixel_format = "BGR"} : (tensor<13xui8>) -> tensor<?x?x3xui8>
  func.return %y : tensor<?x?x3xui8>
}

// -----

// MelWeightMatrix of constant scalars (3 mel bins, dft length 16, 8 kHz, 100-4000 Hz) folds to
// the (16 / 2 + 1) x 3 matrix the ONNX reference gives (triangles rising and falling by halves).
// CHECK-LABEL: func.func @mel
// CHECK-SAME:    -> tensor<9x3xf32>
// CHECK:         %[[M:.*]] = core.Constant {value = dense<{{\[\[}}1.000000e+00, 0.000000e+00, 0.000000e+00], [0.000000e+00, 1.000000e+00, 0.000000e+00], [0.000000e+00, 5.000000e-01, 5.000000e-01], [0.000000e+00, 0.000000e+00, 1.000000e+00], [0.000000e+00, 0.000000e+00, 5.000000e-01], [0.000000e+00, 0.000000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<9x3xf32>}
// CHECK:         func.return %[[M]]
func.func @mel() -> tensor<?x?xf32> {
  %bins = core.Constant {value = dense<3> : tensor<i64>} : tensor<i64>
  %n = core.Constant {value = dense<16> : tensor<i64>} : tensor<i64>
  %rate = core.Constant {value = dense<8000> : tensor<i64>} : tensor<i64>
  %low = core.Constant {value = dense<100.0> : tensor<f32>} : tensor<f32>
  %high = core.Constant {value = dense<4000.0> : tensor<f32>} : tensor<f32>
  %m = "core.MelWeightMatrix"(%bins, %n, %rate, %low, %high) {output_type = f32} : (tensor<i64>, tensor<i64>, tensor<i64>, tensor<f32>, tensor<f32>) -> tensor<?x?xf32>
  func.return %m : tensor<?x?xf32>
}
