// Bad pipelines and unknown passes: one line on stderr, exit status 1, nothing written.
// RUN: not mlconv-opt %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not mlconv-opt %s --pass-pipeline='builtin.module(no-such-pass)' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not mlconv-opt %s -p 'cse{no-such-option=1}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not mlconv-opt %s --pass-pipeline='builtin.module(cse' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: rm -f %t.out && not mlconv-opt %s -p no-such-pass -o %t.out && not test -e %t.out
// RUN: not mlconv-opt %S/Inputs/parse-error.mlir 2>&1 | filecheck %s --check-prefix=PARSE
// RUN: not mlconv-opt %S/Inputs/does-not-exist.mlir 2>&1 | filecheck %s --check-prefix=MISSING

// UNKNOWN:     mlconv-opt: error: unknown pass 'no-such-pass' (known: {{.*}}cse{{.*}})
// UNKNOWN-NOT: Traceback
// OPTION:      mlconv-opt: error: bad options for pass 'cse'
// SYNTAX:      mlconv-opt: error: {{.*}}pass pipeline
// PARSE:       parse-error.mlir:3:{{[0-9]+}}: error:
// PARSE-NOT:   Traceback
// MISSING:     does-not-exist.mlir: error: No such file or directory

// --verify-diagnostics: every expected error occurs, and no other.
// RUN: mlconv-opt %s --split-input-file --verify-diagnostics
// A file whose expectations are not met fails, naming what went wrong.
// RUN: not mlconv-opt %S/Inputs/unmet-diagnostics.mlir --split-input-file --verify-diagnostics 2>&1 | filecheck %s --check-prefix=UNMET
// UNMET-DAG: unmet-diagnostics.mlir:4: error: expected error "this message does not occur" was not produced
// UNMET-DAG: unmet-diagnostics.mlir:11:3: error: unexpected error: 'func.return' op
// And without --verify-diagnostics the errors are reported at their op's line.
// RUN: not mlconv-opt %s --split-input-file 2>&1 | filecheck %s --check-prefix=ERRORS
// ERRORS: mlconv-opt-errors.mlir:[[# @LINE + 4]]:3: error: 'func.return' op Expected arguments to have the same types as the function output types

func.func @return_type(%a: i32) -> i64 {
  // expected-error @below {{Expected arguments to have the same types as the function output types}}
  func.return %a : i32
}

// -----

func.func @result_type(%a: i32) -> i64 {
  // expected-error @+1 {{'arith.addi' op result 'result' at position 0 does not verify}}
  %0 = "arith.addi"(%a, %a) : (i32, i32) -> i64
  func.return %0 : i64
}

// -----

func.func @same_line(%a: i32) -> i64 {
  func.return %a : i32 // expected-error {{'func.return' op}}
}
