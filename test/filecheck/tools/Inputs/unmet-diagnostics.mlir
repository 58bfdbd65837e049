// An expectation that is not met, and an error that is not expected.

func.func @ok(%a: i32) -> i32 {
  // expected-error @below {{this message does not occur}}
  func.return %a : i32
}

// -----

func.func @unexpected(%a: i32) -> i64 {
  func.return %a : i32
}
