// RUN: mlconv-opt %s | filecheck %s

// CHECK-LABEL: func.func @conv_block
// CHECK:         %[[W:.*]] = "tf.Const"() {value = dense<{{.*}}> : tensor<3x3x3x8xf32>, dtype = f32} : () -> tensor<3x3x3x8xf32>
// CHECK:         %[[C:.*]] = "tf.Conv2D"(%{{.*}}, %[[W]]) {T = f32, strides = [1 : i64, 2 : i64, 2 : i64, 1 : i64], padding = "SAME", dilations = [1 : i64, 1 : i64, 1 : i64, 1 : i64]} : (tensor<?x16x16x3xf32>, tensor<3x3x3x8xf32>) -> tensor<?x8x8x8xf32>
// CHECK:         %[[R:.*]] = "tf.Relu6"(%[[C]]) {T = f32} : (tensor<?x8x8x8xf32>) -> tensor<?x8x8x8xf32>
// CHECK:         %[[A:.*]] = "tf.Const"() {value = dense<3> : tensor<i32>} : () -> tensor<i32>
// CHECK:         "tf.ConcatV2"(%[[R]], %[[R]], %[[A]]) {N = 2 : i64, T = f32, Tidx = i32} : (tensor<?x8x8x8xf32>, tensor<?x8x8x8xf32>, tensor<i32>) -> tensor<?x8x8x16xf32>
func.func @conv_block(%x: tensor<?x16x16x3xf32>) -> tensor<?x8x8x16xf32> {
  %w = "tf.Const"() {value = dense<0.5> : tensor<3x3x3x8xf32>, dtype = f32} : () -> tensor<3x3x3x8xf32>
  %c = "tf.Conv2D"(%x, %w) {T = f32, strides = [1, 2, 2, 1], padding = "SAME", dilations = [1, 1, 1, 1]} : (tensor<?x16x16x3xf32>, tensor<3x3x3x8xf32>) -> tensor<?x8x8x8xf32>
  %r = "tf.Relu6"(%c) {T = f32} : (tensor<?x8x8x8xf32>) -> tensor<?x8x8x8xf32>
  %axis = "tf.Const"() {value = dense<3> : tensor<i32>} : () -> tensor<i32>
  %cat = "tf.ConcatV2"(%r, %r, %axis) {N = 2 : i64, T = f32, Tidx = i32} : (tensor<?x8x8x8xf32>, tensor<?x8x8x8xf32>, tensor<i32>) -> tensor<?x8x8x16xf32>
  func.return %cat : tensor<?x8x8x16xf32>
}

// CHECK-LABEL: func.func @shapes_and_unranked
// CHECK:         "tf.Reshape"(%{{.*}}, %{{.*}}) {T = f32, Tshape = i32} : (tensor<*xf32>, tensor<2xi32>) -> tensor<2x?xf32>
// CHECK:         "tf.EnsureShape"(%{{.*}}) {shape = [2 : i64, -1 : i64], T = f32} : (tensor<2x?xf32>) -> tensor<2x?xf32>
// CHECK:         "tf.Placeholder"() {dtype = f32, shape = "*"} : () -> tensor<*xf32>
func.func @shapes_and_unranked(%x: tensor<*xf32>, %s: tensor<2xi32>) -> tensor<2x?xf32> {
  %r = "tf.Reshape"(%x, %s) {T = f32, Tshape = i32} : (tensor<*xf32>, tensor<2xi32>) -> tensor<2x?xf32>
  %e = "tf.EnsureShape"(%r) {shape = [2, -1], T = f32} : (tensor<2x?xf32>) -> tensor<2x?xf32>
  %p = "tf.Placeholder"() {dtype = f32, shape = "*"} : () -> tensor<*xf32>
  func.return %e : tensor<2x?xf32>
}

// CHECK-LABEL: func.func @stateless_if
// CHECK:         %[[R:.*]] = "tf.StatelessIf"(%{{.*}}, %{{.*}}) ({
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: tensor<2xf32>):
// CHECK-NEXT:      %[[N:.*]] = "tf.Neg"(%[[A]]) {T = f32} : (tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT:      "tf.Yield"(%[[N]]) : (tensor<2xf32>) -> ()
// CHECK-NEXT:    }, {
// CHECK-NEXT:    ^{{.*}}(%[[B:.*]]: tensor<2xf32>):
// CHECK-NEXT:      "tf.Yield"(%[[B]]) : (tensor<2xf32>) -> ()
// CHECK-NEXT:    }) {Tcond = i1, Tin = [f32], Tout = [f32]} : (tensor<i1>, tensor<2xf32>) -> tensor<2xf32>
func.func @stateless_if(%c: tensor<i1>, %x: tensor<2xf32>) -> tensor<2xf32> {
  %r = "tf.StatelessIf"(%c, %x) ({
  ^bb0(%a: tensor<2xf32>):
    %n = "tf.Neg"(%a) {T = f32} : (tensor<2xf32>) -> tensor<2xf32>
    "tf.Yield"(%n) : (tensor<2xf32>) -> ()
  }, {
  ^bb0(%b: tensor<2xf32>):
    "tf.Yield"(%b) : (tensor<2xf32>) -> ()
  }) {Tcond = i1, Tin = [f32], Tout = [f32]} : (tensor<i1>, tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// CHECK-LABEL: func.func @stateless_while
// CHECK:         "tf.StatelessWhile"(%{{.*}}, %{{.*}}) ({
// CHECK:           "tf.Less"
// CHECK:           "tf.Yield"(%{{.*}}) : (tensor<i1>) -> ()
// CHECK:         }, {
// CHECK:           "tf.AddV2"
// CHECK:           "tf.Yield"(%{{.*}}, %{{.*}}) : (tensor<i32>, tensor<f32>) -> ()
// CHECK:         }) {T = [i32, f32], parallel_iterations = 10 : i64}
func.func @stateless_while(%i: tensor<i32>, %y: tensor<f32>) -> tensor<f32> {
  %r:2 = "tf.StatelessWhile"(%i, %y) ({
  ^bb0(%a: tensor<i32>, %b: tensor<f32>):
    %lim = "tf.Const"() {value = dense<3> : tensor<i32>} : () -> tensor<i32>
    %lt = "tf.Less"(%a, %lim) {T = i32} : (tensor<i32>, tensor<i32>) -> tensor<i1>
    "tf.Yield"(%lt) : (tensor<i1>) -> ()
  }, {
  ^bb0(%a: tensor<i32>, %b: tensor<f32>):
    %one = "tf.Const"() {value = dense<1> : tensor<i32>} : () -> tensor<i32>
    %n = "tf.AddV2"(%a, %one) {T = i32} : (tensor<i32>, tensor<i32>) -> tensor<i32>
    "tf.Yield"(%n, %b) : (tensor<i32>, tensor<f32>) -> ()
  }) {T = [i32, f32], parallel_iterations = 10 : i64} : (tensor<i32>, tensor<f32>) -> (tensor<i32>, tensor<f32>)
  func.return %r#1 : tensor<f32>
}
