// RUN: mlconv-opt %s --pass-pipeline='builtin.module(core-to-tpu)' --split-input-file | filecheck %s

// core.If traces to jax's `cond`: the predicate becomes an i32 branch index, branch 0 is the
// else branch, and each branch is a region of tpu ops over the captured operands.
// CHECK-LABEL: func.func @if_to_cond
// CHECK:         "tpu.region"
// CHECK-NEXT:    ^{{.*}}(%[[C:.*]]: tensor<i1>, %[[X:.*]]: tensor<2xf32>):
// CHECK:         %[[INDEX:.*]] = "tpu.convert_element_type"({{.*}}) {{.*}} -> tensor<i32>
// CHECK:         %[[Y:.*]] = "tpu.cond"(%[[INDEX]], %[[X]]) ({
// CHECK-NEXT:    ^{{.*}}(%[[E:.*]]: tensor<2xf32>):
// CHECK-NEXT:      %[[NEG:.*]] = "tpu.neg"(%[[E]])
// CHECK-NEXT:      tpu.yield %[[NEG]] : tensor<2xf32>
// CHECK:         ^{{.*}}(%[[T:.*]]: tensor<2xf32>):
// CHECK-NEXT:      %[[SUM:.*]] = "tpu.add"(%[[T]], %[[T]])
// CHECK-NEXT:      tpu.yield %[[SUM]] : tensor<2xf32>
// CHECK:         tpu.yield %[[Y]] : tensor<2xf32>
builtin.module {
  func.func @if_to_cond(%c: tensor<i1>, %x: tensor<2xf32>) -> tensor<2xf32> {
    %y = "core.If"(%c, %x) ({
    ^bb0(%a: tensor<2xf32>):
      %t = "core.Add"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      core.Yield %t : tensor<2xf32>
    }, {
    ^bb0(%b: tensor<2xf32>):
      %e = "core.Negative"(%b) : (tensor<2xf32>) -> tensor<2xf32>
      core.Yield %e : tensor<2xf32>
    }) : (tensor<i1>, tensor<2xf32>) -> tensor<2xf32>
    func.return %y : tensor<2xf32>
  }
}

// -----

// core.Scan traces to jax's `scan`: one body region over (carry, slice).
// CHECK-LABEL: func.func @scan_to_scan
// CHECK:         ^{{.*}}(%[[S0:.*]]: tensor<2xf32>, %[[XS:.*]]: tensor<3x2xf32>):
// CHECK:         %[[S:.*]], %[[YS:.*]] = "tpu.scan"(%[[S0]], %[[XS]]) ({
// CHECK-NEXT:    ^{{.*}}(%[[C:.*]]: tensor<2xf32>, %[[X:.*]]: tensor<2xf32>):
// CHECK-NEXT:      %[[SUM:.*]] = "tpu.add"(%[[C]], %[[X]])
// CHECK-NEXT:      tpu.yield %[[SUM]], %[[SUM]] : tensor<2xf32>, tensor<2xf32>
// CHECK:         length = 3 : i64, num_consts = 0 : i64, num_carry = 1 : i64
// CHECK:         tpu.yield %[[S]], %[[YS]]
builtin.module {
  func.func @scan_to_scan(%s0: tensor<2xf32>, %xs: tensor<3x2xf32>) -> (tensor<2xf32>, tensor<3x2xf32>) {
    %s, %ys = "core.Scan"(%s0, %xs) <{operandSegmentSizes = array<i32: 1, 1, 0>}> ({
    ^bb0(%st: tensor<2xf32>, %x: tensor<2xf32>):
      %sum = "core.Add"(%st, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      core.Yield %sum, %sum : tensor<2xf32>, tensor<2xf32>
    }) : (tensor<2xf32>, tensor<3x2xf32>) -> (tensor<2xf32>, tensor<3x2xf32>)
    func.return %s, %ys : tensor<2xf32>, tensor<3x2xf32>
  }
}

// -----

// core.Loop without scan outputs traces to jax's `while`: the cond region tests the
// counter against the trip count (its one constant) and the condition.
// CHECK-LABEL: func.func @loop_to_while
// CHECK:         ^{{.*}}(%[[N:.*]]: tensor<i64>, %[[Y0:.*]]: tensor<1xf32>):
// CHECK:         %[[TRIP:.*]] = "tpu.reshape"(%[[N]])
// CHECK:         %{{.*}}, %{{.*}}, %[[YF:.*]] = "tpu.while"(%[[TRIP]], {{.*}}, %[[Y0]]) ({
// CHECK-NEXT:    ^{{.*}}(%[[LIMIT:.*]]: tensor<i64>, %[[I:.*]]: tensor<i64>, %[[COND:.*]]: tensor<i1>, %{{.*}}: tensor<1xf32>):
// CHECK-NEXT:      %[[LT:.*]] = "tpu.lt"(%[[I]], %[[LIMIT]])
// CHECK-NEXT:      %[[GO:.*]] = "tpu.and"(%[[LT]], %[[COND]])
// CHECK-NEXT:      tpu.yield %[[GO]] : tensor<i1>
// CHECK:         ^{{.*}}(%{{.*}}: tensor<i64>, %{{.*}}: tensor<i1>, %[[Y:.*]]: tensor<1xf32>):
// CHECK-NEXT:      "tpu.add"(%[[Y]], %[[Y]])
// CHECK:         cond_nconsts = 1 : i64, body_nconsts = 0 : i64
// CHECK:         tpu.yield %[[YF]] : tensor<1xf32>
builtin.module {
  func.func @loop_to_while(%n: tensor<i64>, %y0: tensor<1xf32>) -> tensor<1xf32> {
    %true = core.Constant {value = dense<true> : tensor<i1>} : tensor<i1>
    %yf = "core.Loop"(%n, %true, %y0) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
    ^bb0(%i: tensor<i64>, %cond: tensor<i1>, %y: tensor<1xf32>):
      %next = "core.Add"(%y, %y) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
      core.Yield %cond, %next : tensor<i1>, tensor<1xf32>
    }) : (tensor<i64>, tensor<i1>, tensor<1xf32>) -> tensor<1xf32>
    func.return %yf : tensor<1xf32>
  }
}
