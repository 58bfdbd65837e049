// RUN: mlconv-opt %s --timing -p 'canonicalize,core-to-tpu-pipeline{device=cpu}' -o %t 2>&1 | filecheck %s
// RUN: mlconv-opt %t | filecheck %s --check-prefix=IR

// --timing prints mlir-opt's execution time report to stderr: parsing, each pass, a
// pipeline's stages nested under it, verifying and printing; the IR still goes to -o.

// CHECK:      Execution time report
// CHECK:      Total Execution Time: {{[0-9.]+}} seconds
// CHECK:      ----Wall Time----  ----Name----
// CHECK:      ({{ *[0-9.]+}}%)  parse and verify input
// CHECK:      ({{ *[0-9.]+}}%)  canonicalize
// CHECK:      ({{ *[0-9.]+}}%)  verify
// CHECK:      ({{ *[0-9.]+}}%)  core-to-tpu-pipeline
// CHECK-NEXT: ({{ *[0-9.]+}}%)    core-infer-shapes
// CHECK:      ({{ *[0-9.]+}}%)    core-to-tpu
// CHECK-NEXT: ({{ *[0-9.]+}}%)    tpu-fold-constants
// CHECK-NEXT: ({{ *[0-9.]+}}%)    tpu-conv-strategy
// CHECK-NEXT: ({{ *[0-9.]+}}%)    tpu-sink-transposes
// CHECK:      ({{ *[0-9.]+}}%)  print output
// CHECK:      (100.0%)  Total

// IR-LABEL: func.func @relu
// IR:         "tpu.max"
func.func @relu(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "core.Relu"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
