// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tf-to-core)' --split-input-file | filecheck %s
// RUN: not mlconv-opt %S/Inputs/tf-unsupported.mlir -p tf-to-core 2>&1 | filecheck %s --check-prefix=MISSING

// Every unsupported TF op type at once, with its node count, before anything is rewritten.
// MISSING: error: no lowering to core for 2 tf op type(s): tf.BesselI0e (1 node: bessel); tf.Cumsum (2 nodes: cumsum_a, cumsum_b)

// A TF op outside the FFT family on complex tensors is refused (core keeps complex values as
// a trailing dim of 2, which an elementwise op would mix up).
// RUN: not mlconv-opt %S/Inputs/tf-complex-mul.mlir -p tf-to-core 2>&1 | filecheck %s --check-prefix=COMPLEX
// COMPLEX: error: complex tensors are supported by the FFT family only, not by: tf.Mul (product)

// With allow-custom the same ops stay as core.Custom (domain "tf"), the Relu lowers.
// RUN: mlconv-opt %S/Inputs/tf-unsupported.mlir -p 'tf-to-core{allow-custom=true}' | mlconv-opt | filecheck %s --check-prefix=CUSTOM
// CUSTOM:      %[[A:.*]] = "core.Custom"(%{{.*}}, %{{.*}}) {domain = "tf", op_type = "Cumsum", attrs = {}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CUSTOM-NEXT: %[[B:.*]] = "core.Custom"(%[[A]], %{{.*}}) {domain = "tf", op_type = "Cumsum", attrs = {}}
// CUSTOM-NEXT: %[[C:.*]] = "core.Custom"(%[[B]]) {domain = "tf", op_type = "BesselI0e", attrs = {}} : (tensor<4xf32>) -> tensor<4xf32>
// CUSTOM-NEXT: %[[D:.*]] = "core.Relu"(%[[C]])

// NHWC Conv2D: NCHW data between transposes, HWIO filters already OIHW, SAME is same_upper;
// BiasAdd adds along the last (channel) dim; Relu6 clamps; Identity disappears.
// CHECK-LABEL: func.func @conv_relu6
// CHECK-SAME:    (%[[X:.*]]: tensor<1x8x8x3xf32>)
// CHECK:         %[[B:.*]] = core.Constant {value = dense<[5.000000e-01, -5.000000e-01]> : tensor<2xf32>}
// CHECK:         %[[P:.*]] = core.Constant {value = dense<[0, 3, 1, 2]> : tensor<4xi64>}
// CHECK-NEXT:    %[[T:.*]] = "core.Transpose"(%[[X]], %[[P]]) : (tensor<1x8x8x3xf32>, tensor<4xi64>) -> tensor<1x3x8x8xf32>
// CHECK-NEXT:    %[[W:.*]] = core.Constant {value = dense<1.000000e+00> : tensor<2x3x3x3xf32>}
// CHECK-NEXT:    %[[C:.*]] = "core.Convolution"(%[[T]], %[[W]]) {strides = array<i64: 2, 2>, {{.*}}auto_pad = "same_upper"{{.*}}} : {{.*}} -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %[[Q:.*]] = core.Constant {value = dense<[0, 2, 3, 1]> : tensor<4xi64>}
// CHECK-NEXT:    %[[N:.*]] = "core.Transpose"(%[[C]], %[[Q]]) : {{.*}} -> tensor<1x4x4x2xf32>
// CHECK-NEXT:    %[[A:.*]] = "core.Add"(%[[N]], %[[B]])
// CHECK-NEXT:    %[[R:.*]] = "core.Clamp"(%[[A]]) {min = 0.000000e+00 : f64, max = 6.000000e+00 : f64}
// CHECK-NEXT:    func.return %[[R]]
func.func @conv_relu6(%x: tensor<1x8x8x3xf32>) -> tensor<1x4x4x2xf32> {
  %w = "tf.Const"() {value = dense<1.0> : tensor<3x3x3x2xf32>} : () -> tensor<3x3x3x2xf32>
  %b = "tf.Const"() {value = dense<[0.5, -0.5]> : tensor<2xf32>} : () -> tensor<2xf32>
  %c = "tf.Conv2D"(%x, %w) {strides = [1, 2, 2, 1], padding = "SAME"} : (tensor<1x8x8x3xf32>, tensor<3x3x3x2xf32>) -> tensor<1x4x4x2xf32> loc("conv")
  %a = "tf.BiasAdd"(%c, %b) : (tensor<1x4x4x2xf32>, tensor<2xf32>) -> tensor<1x4x4x2xf32>
  %r = "tf.Relu6"(%a) : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %i = "tf.Identity"(%r) : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  func.return %i : tensor<1x4x4x2xf32>
}

// -----

// Erfc (Keras 3's exact GELU) is 1 - Erf; Rsqrt is 1 / Sqrt.
// CHECK-LABEL: func.func @gelu_erfc
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK:         %[[ONE:.*]] = core.Constant {value = dense<1.000000e+00> : tensor<f32>}
// CHECK-NEXT:    %[[ERF:.*]] = "core.Erf"(%[[X]])
// CHECK-NEXT:    %[[E:.*]] = "core.Subtract"(%[[ONE]], %[[ERF]])
// CHECK:         %[[S:.*]] = "core.Sqrt"(%[[E]])
// CHECK-NEXT:    "core.Divide"({{.*}}, %[[S]])
func.func @gelu_erfc(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = "tf.Erfc"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %r = "tf.Rsqrt"(%e) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

// Reductions keep their axes operand; Squeeze's squeeze_dims become an axes constant.
// CHECK-LABEL: func.func @mean_squeeze
// CHECK:         %[[M:.*]] = "core.ReduceMean"(%{{.*}}, %{{.*}}) {keep_dims = true} : {{.*}} -> tensor<1x1x1x8xf32>
// CHECK:         "core.Squeeze"(%[[M]], %{{.*}}) : {{.*}} -> tensor<8xf32>
func.func @mean_squeeze(%x: tensor<1x4x4x8xf32>) -> tensor<8xf32> {
  %axes = "tf.Const"() {value = dense<[1, 2]> : tensor<2xi32>} : () -> tensor<2xi32>
  %m = "tf.Mean"(%x, %axes) {keep_dims = true} : (tensor<1x4x4x8xf32>, tensor<2xi32>) -> tensor<1x1x1x8xf32>
  %s = "tf.Squeeze"(%m) {squeeze_dims = [0, 1, 2]} : (tensor<1x1x1x8xf32>) -> tensor<8xf32>
  func.return %s : tensor<8xf32>
}

// -----

// ResizeBilinear with half_pixel_centers: Interpolate over the NHWC height and width axes,
// sizes given; Split's operands come (axis, value) and leave as (value, axis).
// CHECK-LABEL: func.func @resize_split
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x6x2xf32>)
// CHECK:         %[[SIZE:.*]] = core.Constant {value = dense<[8, 12]> : tensor<2xi32>}
// CHECK-NEXT:    %[[AXES:.*]] = core.Constant {value = dense<[1, 2]> : tensor<2xi64>}
// CHECK-NEXT:    %[[R:.*]] = "core.Interpolate"(%[[X]], %[[SIZE]], %[[AXES]]) {{.*}}{mode = "linear_onnx", shape_calculation_mode = "sizes", coordinate_transformation_mode = "half_pixel"} : {{.*}} -> tensor<1x8x12x2xf32>
// CHECK:         %[[AXIS:.*]] = core.Constant {value = dense<3> : tensor<i32>}
// CHECK-NEXT:    %{{.*}}, %[[B:.*]] = "core.Split"(%[[X]], %[[AXIS]]) {num_splits = 2 : i64}
// CHECK-NEXT:    func.return %[[R]], %[[B]]
func.func @resize_split(%x: tensor<1x4x6x2xf32>) -> (tensor<1x8x12x2xf32>, tensor<1x4x6x1xf32>) {
  %size = "tf.Const"() {value = dense<[8, 12]> : tensor<2xi32>} : () -> tensor<2xi32>
  %r = "tf.ResizeBilinear"(%x, %size) {half_pixel_centers = true} : (tensor<1x4x6x2xf32>, tensor<2xi32>) -> tensor<1x8x12x2xf32>
  %axis = "tf.Const"() {value = dense<3> : tensor<i32>} : () -> tensor<i32>
  %a, %b = "tf.Split"(%axis, %x) {num_split = 2} : (tensor<i32>, tensor<1x4x6x2xf32>) -> (tensor<1x4x6x1xf32>, tensor<1x4x6x1xf32>)
  func.return %r, %b : tensor<1x8x12x2xf32>, tensor<1x4x6x1xf32>
}

// -----

// A complex tensor is a float tensor with a trailing dim of 2: RFFT is a onesided DFT of the
// signal with a unit trailing dim, ComplexAbs the root of the summed squares of the pair.
// CHECK-LABEL: func.func @rfft_abs
// CHECK-SAME:    (%[[X:.*]]: tensor<3x8xf32>)
// CHECK:         %[[U:.*]] = "core.Unsqueeze"(%[[X]], %{{.*}}) : {{.*}} -> tensor<3x8x1xf32>
// CHECK:         %[[S:.*]] = "core.DFT"(%[[U]], %{{.*}}, %{{.*}}) {inverse = false, onesided = true} : {{.*}} -> tensor<3x5x2xf32>
// CHECK-NEXT:    %[[SQ:.*]] = "core.Multiply"(%[[S]], %[[S]])
// CHECK:         %[[SUM:.*]] = "core.ReduceSum"(%[[SQ]], %{{.*}}) {keep_dims = false} : {{.*}} -> tensor<3x5xf32>
// CHECK-NEXT:    %[[A:.*]] = "core.Sqrt"(%[[SUM]])
// CHECK-NEXT:    func.return %[[A]]
func.func @rfft_abs(%x: tensor<3x8xf32>) -> tensor<3x5xf32> {
  %n = "tf.Const"() {value = dense<8> : tensor<1xi32>} : () -> tensor<1xi32>
  %s = "tf.RFFT"(%x, %n) : (tensor<3x8xf32>, tensor<1xi32>) -> tensor<3x5xcomplex<f32>>
  %a = "tf.ComplexAbs"(%s) : (tensor<3x5xcomplex<f32>>) -> tensor<3x5xf32>
  func.return %a : tensor<3x5xf32>
}

// -----

// A While is a Loop without a trip count: the cond function once on the initial values before
// the loop, and again on the body's results at the end of each iteration.
// CHECK-LABEL: func.func @while_loop
// CHECK-SAME:    (%[[X:.*]]: tensor<2xf32>)
// CHECK:         %[[ZERO:.*]] = core.Constant {value = dense<0> : tensor<i32>}
// CHECK:         %[[FIRST:.*]] = "core.Less"(%[[ZERO]], %{{.*}})
// CHECK:         %[[TRIP:.*]] = core.Constant {value = dense<9223372036854775807> : tensor<i64>}
// CHECK-NEXT:    %{{.*}}, %[[Y:.*]] = "core.Loop"(%[[TRIP]], %[[FIRST]], %[[ZERO]], %[[X]])
// CHECK-NEXT:    ^bb0(%{{.*}}: tensor<i64>, %{{.*}}: tensor<i1>, %[[A:.*]]: tensor<i32>, %[[B:.*]]: tensor<2xf32>):
// CHECK:           %[[A1:.*]] = "core.Add"(%[[A]], %{{.*}})
// CHECK-NEXT:      %[[B1:.*]] = "core.Tanh"(%[[B]])
// CHECK:           %[[AGAIN:.*]] = "core.Less"(%[[A1]], %{{.*}})
// CHECK-NEXT:      core.Yield %[[AGAIN]], %[[A1]], %[[B1]]
// CHECK:         {max_iterations = -1 : i64}
// CHECK:         func.return %[[Y]]
func.func @while_loop(%x: tensor<2xf32>) -> tensor<2xf32> {
  %zero = "tf.Const"() {value = dense<0> : tensor<i32>} : () -> tensor<i32>
  %i, %y = "tf.StatelessWhile"(%zero, %x) ({
  ^bb0(%a: tensor<i32>, %b: tensor<2xf32>):
    %n = "tf.Const"() {value = dense<3> : tensor<i32>} : () -> tensor<i32>
    %c = "tf.Less"(%a, %n) : (tensor<i32>, tensor<i32>) -> tensor<i1>
    "tf.Yield"(%c) : (tensor<i1>) -> ()
  }, {
  ^bb0(%a: tensor<i32>, %b: tensor<2xf32>):
    %one = "tf.Const"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>
    %a1 = "tf.AddV2"(%a, %one) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %b1 = "tf.Tanh"(%b) : (tensor<2xf32>) -> tensor<2xf32>
    "tf.Yield"(%a1, %b1) : (tensor<i32>, tensor<2xf32>) -> ()
  }) : (tensor<i32>, tensor<2xf32>) -> (tensor<i32>, tensor<2xf32>)
  func.return %y : tensor<2xf32>
}

// -----

// A StatelessIf is a core.If: the branches take the inputs as captured block arguments.
// CHECK-LABEL: func.func @if_else
// CHECK-SAME:    (%[[C:.*]]: tensor<i1>, %[[X:.*]]: tensor<2xf32>)
// CHECK:         %[[R:.*]] = "core.If"(%[[C]], %[[X]]) ({
// CHECK-NEXT:    ^bb0(%[[A:.*]]: tensor<2xf32>):
// CHECK-NEXT:      %[[N:.*]] = "core.Negative"(%[[A]])
// CHECK-NEXT:      core.Yield %[[N]]
// CHECK:         }, {
// CHECK-NEXT:    ^bb0(%[[B:.*]]: tensor<2xf32>):
// CHECK-NEXT:      core.Yield %[[B]]
// CHECK:         func.return %[[R]]
func.func @if_else(%c: tensor<i1>, %x: tensor<2xf32>) -> tensor<2xf32> {
  %r = "tf.StatelessIf"(%c, %x) ({
  ^bb0(%a: tensor<2xf32>):
    %n = "tf.Neg"(%a) : (tensor<2xf32>) -> tensor<2xf32>
    "tf.Yield"(%n) : (tensor<2xf32>) -> ()
  }, {
  ^bb0(%a: tensor<2xf32>):
    "tf.Yield"(%a) : (tensor<2xf32>) -> ()
  }) : (tensor<i1>, tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// -----

// A TensorList of n elements of shape E is the tensor [n, *E]: Reserve is zeros, SetItem a
// one-row ScatterNDUpdate, GetItem a gather of one row, Stack the tensor itself.
// CHECK-LABEL: func.func @tensor_list
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>, %[[I:.*]]: tensor<i32>)
// CHECK:         %[[L:.*]] = "core.Broadcast"(%{{.*}}, %{{.*}}) {mode = "numpy"} : (tensor<f32>, tensor<3xi64>) -> tensor<4x2x3xf32>
// CHECK:         %[[ROW:.*]] = "core.Reshape"(%[[I]], %{{.*}}) {{.*}} -> tensor<1x1xi32>
// CHECK:         %[[ITEM:.*]] = "core.Unsqueeze"(%[[X]], %{{.*}}) {{.*}} -> tensor<1x2x3xf32>
// CHECK-NEXT:    %[[L1:.*]] = "core.ScatterNDUpdate"(%[[L]], %[[ROW]], %[[ITEM]])
// CHECK:         %[[G:.*]] = "core.Gather"(%[[L1]], %[[I]], %{{.*}}) {{.*}} -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[L1]], %[[G]]
func.func @tensor_list(%x: tensor<2x3xf32>, %i: tensor<i32>) -> (tensor<4x2x3xf32>, tensor<2x3xf32>) {
  %shape = "tf.Const"() {value = dense<[2, 3]> : tensor<2xi32>} : () -> tensor<2xi32>
  %n = "tf.Const"() {value = dense<4> : tensor<i32>} : () -> tensor<i32>
  %l = "tf.TensorListReserve"(%shape, %n) {element_dtype = f32, shape_type = i32} : (tensor<2xi32>, tensor<i32>) -> tensor<!tf.variant>
  %l1 = "tf.TensorListSetItem"(%l, %i, %x) {element_dtype = f32} : (tensor<!tf.variant>, tensor<i32>, tensor<2x3xf32>) -> tensor<!tf.variant>
  %s = "tf.TensorListStack"(%l1, %shape) {element_dtype = f32} : (tensor<!tf.variant>, tensor<2xi32>) -> tensor<4x2x3xf32>
  %g = "tf.TensorListGetItem"(%l1, %i, %shape) {element_dtype = f32} : (tensor<!tf.variant>, tensor<i32>, tensor<2xi32>) -> tensor<2x3xf32>
  func.return %s, %g : tensor<4x2x3xf32>, tensor<2x3xf32>
}
