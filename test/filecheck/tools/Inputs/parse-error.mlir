// Not valid IR: %undefined is used but not defined, and the op does not exist.
func.func @f(%a: i32) -> i32 {
  %0 = arith.no_such_op %a : i32
  func.return %0 : i32
}
