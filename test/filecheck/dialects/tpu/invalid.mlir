// Verifier messages of the tpu dialect (dialects/tpu.py).
// RUN: mlconv-opt %s --split-input-file --verify-diagnostics

func.func @too_few_block_args(%x: tensor<2xf32>, %y: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'tpu.region' op region must have one block argument per operand}}
  %r = "tpu.region"(%x, %y) ({
  ^bb0(%a: tensor<2xf32>):
    tpu.yield %a : tensor<2xf32>
  }) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// -----

func.func @block_arg_type(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'tpu.region' op block argument types must match the operand types}}
  %r = "tpu.region"(%x) ({
  ^bb0(%a: tensor<2xf16>):
    %c = tpu.constant {value = dense<1.0> : tensor<2xf32>} : tensor<2xf32>
    tpu.yield %c : tensor<2xf32>
  }) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// -----

func.func @empty_region(%x: tensor<2xf32>) {
  // expected-error @+1 {{'tpu.region' op region must end with tpu.yield}}
  "tpu.region"(%x) ({
  ^bb0(%a: tensor<2xf32>):
  }) : (tensor<2xf32>) -> ()
  func.return
}

// -----

func.func @other_terminator(%x: tensor<2xf32>) {
  // expected-error @+1 {{'tpu.region' op region must end with tpu.yield}}
  "tpu.region"(%x) ({
  ^bb0(%a: tensor<2xf32>):
    // expected-error @+1 {{'func.return' op 'func.return' expects parent op 'func.func'}}
    func.return
  }) : (tensor<2xf32>) -> ()
  func.return
}

// -----

func.func @yield_types(%x: tensor<2xf32>) -> tensor<2xf16> {
  // expected-error @+1 {{'tpu.region' op tpu.yield operand types must match the region result types}}
  %r = "tpu.region"(%x) ({
  ^bb0(%a: tensor<2xf32>):
    tpu.yield %a : tensor<2xf32>
  }) : (tensor<2xf32>) -> tensor<2xf16>
  func.return %r : tensor<2xf16>
}

// -----

func.func @yield_count(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  // expected-error @+1 {{'tpu.region' op tpu.yield operand types must match the region result types}}
  %r:2 = "tpu.region"(%x) ({
  ^bb0(%a: tensor<2xf32>):
    tpu.yield %a : tensor<2xf32>
  }) : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  func.return %r#0, %r#1 : tensor<2xf32>, tensor<2xf32>
}

// -----

func.func @dynamic_result(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{'tpu.exp' op tpu ops need static shapes}}
  %y = "tpu.exp"(%x) {accuracy} : (tensor<?x3xf32>) -> tensor<?x3xf32>
  func.return %y : tensor<?x3xf32>
}

// -----

func.func @unranked_result(%x: tensor<3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{'tpu.exp' op tpu ops need static shapes}}
  %y = "tpu.exp"(%x) {accuracy} : (tensor<3xf32>) -> tensor<*xf32>
  func.return %y : tensor<*xf32>
}

// -----

func.func @constant_without_value() -> tensor<2xf32> {
  // expected-error @+1 {{'tpu.constant' op attribute 'value' expected in operation 'tpu.constant'}}
  %c = "tpu.constant"() : () -> tensor<2xf32>
  func.return %c : tensor<2xf32>
}
