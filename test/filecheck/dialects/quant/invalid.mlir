// Verifier messages of the quant dialect (dialects/quant.py).
// RUN: mlconv-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{quant.uniform needs at least one scale}}
func.func @per_axis_without_scales(%x: tensor<4x!quant.uniform<i8:f32:0, {}>>) {
  func.return
}

// -----

// expected-error @+1 {{expected a quantized storage type (i8, u8, i16, i32), got 'f8'}}
func.func @bad_storage(%x: tensor<4x!quant.uniform<f8:f32, 0.5:0>>) {
  func.return
}

// The text form always pairs a zero point with each scale and gives a per-tensor type one
// scale: types that break those rules can only be built in Python.
// RUN: %python -c "from mlconv.dialects.quant import UniformQuantizedType as Q; from xdsl.dialects.builtin import i8, f32; exec('try: Q(i8, f32, [0.1, 0.2], [0], 0)\nexcept Exception as e: print(e)'); exec('try: Q(i8, f32, [0.1, 0.2], [0, 0])\nexcept Exception as e: print(e)')" | filecheck %s --check-prefix=PY
// PY: quant.uniform needs one zero point per scale
// PY-NEXT: a per-tensor quant.uniform has exactly one scale
