// --import-onnx prints the onnx dialect with the node names as locations.
// RUN: mlconv-translate --import-onnx %models/light_squeezenet.onnx | filecheck %s
// The printed IR parses back.
// RUN: mlconv-translate --import-onnx %models/light_squeezenet.onnx | mlconv-opt | filecheck %s --check-prefix=ROUNDTRIP
// -o writes the same text.
// RUN: rm -f %t.mlir && mlconv-translate --import-onnx %models/light_squeezenet.onnx -o %t.mlir && filecheck %s < %t.mlir

// CHECK:      builtin.module attributes {onnx.opset_import = {"" = 9 : i64}}
// CHECK:        func.func @main(%{{.*}}: tensor<1x3x224x224xf32> {mlconv.name = "data_0"}
// CHECK-SAME:     -> (tensor<1x1000x1x1xf32> {mlconv.name = "softmaxout_1"})
// CHECK:          "onnx.Conv"({{.*}}) {{.*}} -> tensor<1x64x111x111xf32> loc(
// CHECK:          "onnx.Softmax"
// CHECK:          func.return

// ROUNDTRIP-LABEL: func.func @main
// ROUNDTRIP:         onnx.Conv

// Bad input: one line naming the problem, exit status 1, no output file.
// RUN: not mlconv-translate --import-onnx %s 2>&1 | filecheck %s --check-prefix=NOT-ONNX
// RUN: rm -f %t.bad.mlir && not mlconv-translate --import-onnx %s -o %t.bad.mlir && not test -e %t.bad.mlir
// RUN: not mlconv-translate --import-onnx %S/Inputs/does-not-exist.onnx 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not mlconv-translate %s 2>&1 | filecheck %s --check-prefix=NO-TRANSLATION
// NOT-ONNX:       mlconv-translate.mlir: error: {{.*}}ONNX
// NOT-ONNX-NOT:   Traceback
// MISSING:        does-not-exist.onnx: error: no such file or directory
// NO-TRANSLATION: mlconv-translate: error: one of the arguments --import-onnx {{.*}} is required
