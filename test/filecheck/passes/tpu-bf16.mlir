// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-bf16)' --split-input-file | filecheck %s
// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-bf16{filterlist=exp})' --split-input-file | filecheck %s --check-prefix=FILTER
// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-bf16{filterlist=add_node})' --split-input-file | filecheck %s --check-prefix=BYNAME
// RUN: mlconv-opt %s --pass-pipeline='builtin.module(tpu-bf16{products=bfloat16})' --split-input-file | filecheck %s --check-prefix=GPU
// RUN: not mlconv-opt %s --pass-pipeline='builtin.module(tpu-bf16{products=half})' 2>&1 | filecheck %s --check-prefix=BADFORM
// BADFORM: tpu-bf16: products 'half' is not one of float32, bfloat16

// The region computes in bf16 between one conversion in and one out; the signature stays f32.
// CHECK-LABEL: func.func @exp_add
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32> {{.*}}) -> (tensor<4xf32>
// CHECK:         ^bb0(%[[ARG:.*]]: tensor<4xf32>):
// CHECK-NEXT:      %[[IN:.*]] = "tpu.convert_element_type"(%[[ARG]]) {new_dtype = bf16, {{.*}}} : (tensor<4xf32>) -> tensor<4xbf16>
// CHECK-NEXT:      %[[EXP:.*]] = "tpu.exp"(%[[IN]]) {{.*}} : (tensor<4xbf16>) -> tensor<4xbf16>
// CHECK-NEXT:      %[[C:.*]] = tpu.constant {value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xbf16>}
// CHECK-NEXT:      %[[ADD:.*]] = "tpu.add"(%[[EXP]], %[[C]]) : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
// CHECK-NEXT:      %[[OUT:.*]] = "tpu.convert_element_type"(%[[ADD]]) {new_dtype = f32, {{.*}}} : (tensor<4xbf16>) -> tensor<4xf32>
// CHECK-NEXT:      tpu.yield %[[OUT]] : tensor<4xf32>

// A filtered op reads the float32 input itself and its result is converted to bf16.
// FILTER-LABEL: func.func @exp_add
// FILTER:         ^bb0(%[[ARG:.*]]: tensor<4xf32>):
// FILTER-NEXT:      %[[EXP:.*]] = "tpu.exp"(%[[ARG]]) {{.*}} : (tensor<4xf32>) -> tensor<4xf32>
// FILTER-NEXT:      %[[EXPB:.*]] = "tpu.convert_element_type"(%[[EXP]]) {new_dtype = bf16, {{.*}}} : (tensor<4xf32>) -> tensor<4xbf16>
// FILTER:           "tpu.add"(%[[EXPB]], %{{.*}}) : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>

// Ops are also named by their source node (the location); constants they read stay exact.
// BYNAME-LABEL: func.func @exp_add
// BYNAME:         "tpu.exp"(%{{.*}}) {{.*}} : (tensor<4xbf16>) -> tensor<4xbf16>
// BYNAME:         %[[C:.*]] = tpu.constant {{.*}} : tensor<4xf32>
// BYNAME-NEXT:    %[[BACK:.*]] = "tpu.convert_element_type"(%{{.*}}) {new_dtype = f32, {{.*}}} : (tensor<4xbf16>) -> tensor<4xf32>
// BYNAME-NEXT:    %[[ADD:.*]] = "tpu.add"(%[[BACK]], %[[C]]) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// BYNAME-NEXT:    tpu.yield %[[ADD]] : tensor<4xf32>
func.func @exp_add(%x: tensor<4xf32> {mlconv.name = "x"}) -> (tensor<4xf32> {mlconv.name = "y"}) {
  %0 = "tpu.region"(%x) ({
  ^bb0(%1: tensor<4xf32>):
    %2 = "tpu.exp"(%1) {accuracy} : (tensor<4xf32>) -> tensor<4xf32> loc("exp_node")
    %3 = tpu.constant {value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>} : tensor<4xf32>
    %4 = "tpu.add"(%2, %3) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("add_node")
    tpu.yield %4 : tensor<4xf32>
  }) {device = "tpu"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// Integer values and parameters are left alone; a float32 dtype parameter names bf16.
// CHECK-LABEL: func.func @iota_convert
// CHECK:         "tpu.iota"() {dtype = i32, {{.*}}} : () -> tensor<4xi32>
// CHECK:         "tpu.convert_element_type"(%{{.*}}) {new_dtype = bf16, {{.*}}} : (tensor<4xi32>) -> tensor<4xbf16>
// FILTER-LABEL: func.func @iota_convert
// BYNAME-LABEL: func.func @iota_convert
func.func @iota_convert() -> tensor<4xf32> {
  %0 = "tpu.region"() ({
    %1 = "tpu.iota"() {dtype = i32, shape = array<i64: 4>, dimension = 0 : i64, sharding} : () -> tensor<4xi32>
    %2 = "tpu.convert_element_type"(%1) {new_dtype = f32, weak_type = false, sharding} : (tensor<4xi32>) -> tensor<4xf32>
    tpu.yield %2 : tensor<4xf32>
  }) {device = "tpu"} : () -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// A dot multiplies bf16 operands into its float32 accumulator (preferred_element_type f32);
// the bias add and ReLU it feeds alone are its fused epilogue, in f32, rounded once; a sum
// reads a value used twice (materialized: bf16) and accumulates in f32; the region's result
// is the accumulator itself (rounding it to bf16 and back would only lose bits).
// CHECK-LABEL: func.func @dot_epilogue_sum
// CHECK:         %[[A:.*]] = "tpu.convert_element_type"(%{{.*}}) {new_dtype = bf16, {{.*}}} : (tensor<1x4xf32>) -> tensor<1x4xbf16>
// CHECK:         %[[D:.*]] = "tpu.dot_general"(%[[A]], %{{.*}}) {{{.*}}preferred_element_type = f32{{.*}}} : (tensor<1x4xbf16>, tensor<4x2xbf16>) -> tensor<1x2xf32>
// CHECK:         %[[ADD:.*]] = "tpu.add"(%[[D]], %{{.*}}) : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
// CHECK:         %[[RELU:.*]] = "tpu.max"(%[[ADD]], %{{.*}}) : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
// CHECK-NEXT:    %[[R:.*]] = "tpu.convert_element_type"(%[[RELU]]) {new_dtype = bf16, {{.*}}} : (tensor<1x2xf32>) -> tensor<1x2xbf16>
// CHECK:         %[[MUL:.*]] = "tpu.mul"(%[[R]], %[[R]]) : (tensor<1x2xbf16>, tensor<1x2xbf16>) -> tensor<1x2xbf16>
// CHECK-NEXT:    %[[UP:.*]] = "tpu.convert_element_type"(%[[MUL]]) {new_dtype = f32, {{.*}}} : (tensor<1x2xbf16>) -> tensor<1x2xf32>
// CHECK-NEXT:    %[[SUM:.*]] = "tpu.reduce_sum"(%[[UP]]) {{.*}} : (tensor<1x2xf32>) -> tensor<1xf32>
// CHECK-NEXT:    tpu.yield %[[SUM]] : tensor<1xf32>
// With products=bfloat16 (XLA:GPU's form) the dot writes bf16 (accumulating in f32 inside
// its kernel) and its epilogue runs in bf16.
// GPU-LABEL: func.func @dot_epilogue_sum
// GPU:         %[[D:.*]] = "tpu.dot_general"(%{{.*}}, %{{.*}}) {{{.*}}preferred_element_type = bf16{{.*}}} : (tensor<1x4xbf16>, tensor<4x2xbf16>) -> tensor<1x2xbf16>
// GPU-NEXT:    %[[ADD:.*]] = "tpu.add"(%[[D]], %{{.*}}) : (tensor<1x2xbf16>, tensor<1x2xbf16>) -> tensor<1x2xbf16>
// GPU-NEXT:    %[[RELU:.*]] = "tpu.max"(%[[ADD]], %{{.*}}) : (tensor<1x2xbf16>, tensor<1x2xbf16>) -> tensor<1x2xbf16>
// GPU-NEXT:    %[[MUL:.*]] = "tpu.mul"(%[[RELU]], %[[RELU]]) : (tensor<1x2xbf16>, tensor<1x2xbf16>) -> tensor<1x2xbf16>
func.func @dot_epilogue_sum(%x: tensor<1x4xf32>) -> tensor<1xf32> {
  %0 = "tpu.region"(%x) ({
  ^bb0(%a: tensor<1x4xf32>):
    %w = tpu.constant {value = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]> : tensor<4x2xf32>} : tensor<4x2xf32>
    %b = tpu.constant {value = dense<[[0.5, -0.5]]> : tensor<1x2xf32>} : tensor<1x2xf32>
    %z = tpu.constant {value = dense<0.0> : tensor<1x2xf32>} : tensor<1x2xf32>
    %d = "tpu.dot_general"(%a, %w) {dimension_numbers = [[array<i64: 1>, array<i64: 0>], [array<i64>, array<i64>]], precision, preferred_element_type = f32, out_sharding} : (tensor<1x4xf32>, tensor<4x2xf32>) -> tensor<1x2xf32>
    %s = "tpu.add"(%d, %b) : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
    %r = "tpu.max"(%s, %z) : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
    %m = "tpu.mul"(%r, %r) : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
    %t = "tpu.reduce_sum"(%m) {axes = array<i64: 1>, out_sharding} : (tensor<1x2xf32>) -> tensor<1xf32>
    tpu.yield %t : tensor<1xf32>
  }) {device = "tpu"} : (tensor<1x4xf32>) -> tensor<1xf32>
  func.return %0 : tensor<1xf32>
}
