// An optional(tensor) graph input is imported as the tensor it holds (an empty optional is
// refused when the model is called): OptionalGetElement is that tensor, OptionalHasElement true.
// RUN: mlconv-translate --import-onnx %S/Inputs/optional-tensor.onnxtxt 2>/dev/null | filecheck %s
// RUN: mlconv-translate --import-onnx %S/Inputs/optional-tensor.onnxtxt 2>/dev/null | mlconv-opt -p onnx-to-core | filecheck %s --check-prefix=CORE

// CHECK-LABEL: func.func @main(%x: tensor<4xf32> {mlconv.name = "x"}
// CHECK:         "onnx.OptionalHasElement"(%x) : (tensor<4xf32>) -> tensor<i1>
// CHECK:         "onnx.OptionalGetElement"(%x) : (tensor<4xf32>) -> tensor<4xf32>

// CORE-LABEL: func.func @main
// CORE:         %has = core.Constant {value = dense<true> : tensor<i1>}
// CORE:         %y = "core.Multiply"(%x, %x)
// CORE:         func.return %has, %y
