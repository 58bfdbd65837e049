// The nested pipeline form, the flat form and -p give the same result.
// RUN: mlconv-opt %s --split-input-file --pass-pipeline='builtin.module(cse,canonicalize)' | filecheck %s
// RUN: mlconv-opt %s --split-input-file --pass-pipeline='cse,canonicalize' | filecheck %s
// RUN: mlconv-opt %s --split-input-file -p cse,canonicalize | filecheck %s

// Option braces (the registered upstream passes take no options: bad ones are tested in
// mlconv-opt-errors.mlir), and reading from stdin.
// RUN: mlconv-opt --split-input-file --pass-pipeline='builtin.module(cse{},canonicalize{})' < %s | filecheck %s

// Without passes the input comes back unchanged (one module per split).
// RUN: mlconv-opt %s --split-input-file | filecheck %s --check-prefix=NOPASS

// --split-input-file: every chunk is printed, separated by `// -----`.
// RUN: mlconv-opt %s --split-input-file -p cse | filecheck %s --check-prefix=SPLIT

// Without --split-input-file the chunks are one module.
// RUN: mlconv-opt %s -p cse | filecheck %s --check-prefix=WHOLE

// --mlir-print-debuginfo: ops parsed from the file are located at their line.
// RUN: mlconv-opt %s --split-input-file --mlir-print-debuginfo | filecheck %s --check-prefix=DEBUG

// --print-ir-after-all dumps the IR after each pass on stderr.
// RUN: mlconv-opt %s --split-input-file -p cse,canonicalize --print-ir-after-all 2>&1 >/dev/null | filecheck %s --check-prefix=AFTER

// -o writes the file.
// RUN: rm -f %t.out.mlir && mlconv-opt %s --split-input-file -p cse -o %t.out.mlir && filecheck %s --check-prefix=SPLIT < %t.out.mlir

// CHECK-LABEL: func.func @cse
// CHECK-NEXT:    %[[SUM:.*]] = arith.addi %a, %a : i32
// CHECK-NEXT:    %[[PRODUCT:.*]] = arith.muli %[[SUM]], %[[SUM]] : i32
// CHECK-NEXT:    func.return %[[PRODUCT]] : i32

// NOPASS-LABEL: func.func @cse
// NOPASS:         arith.addi
// NOPASS:         arith.addi
// NOPASS:       // -----
// NOPASS-LABEL: func.func @fold
// NOPASS:         arith.constant 1 : i32
// NOPASS:         arith.constant 2 : i32

// SPLIT:       builtin.module {
// SPLIT-LABEL: func.func @cse
// SPLIT:         func.return
// SPLIT-NEXT:    }
// SPLIT-NEXT:  }
// SPLIT-NEXT:  // -----
// SPLIT-NEXT:  builtin.module {
// SPLIT-LABEL: func.func @fold
// SPLIT-NOT:   // -----

// WHOLE:       builtin.module {
// WHOLE-LABEL: func.func @cse
// WHOLE-LABEL: func.func @fold
// WHOLE-NOT:   // -----

// DEBUG-LABEL: func.func @cse
// DEBUG:         arith.addi %a, %a : i32 loc("{{.*}}mlconv-opt.mlir":[[# @LINE + 6]]:3)

// AFTER:       IR Dump After {{.*}} (cse)
// AFTER:       IR Dump After {{.*}} (canonicalize)

func.func @cse(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  %1 = arith.addi %a, %a : i32
  %2 = arith.muli %0, %1 : i32
  func.return %2 : i32
}

// -----

// CHECK-LABEL: func.func @fold
// CHECK-NEXT:    %[[C3:.*]] = arith.constant 3 : i32
// CHECK-NEXT:    func.return %[[C3]] : i32
func.func @fold() -> i32 {
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %0 = arith.addi %c1, %c2 : i32
  func.return %0 : i32
}
