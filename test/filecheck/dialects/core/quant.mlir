// RUN: mlconv-opt %s | mlconv-opt | filecheck %s

// core.FakeQuantize round-trips (OpenVINO opset1 FakeQuantize).

// CHECK-LABEL: func.func @fake_quantize
// CHECK:         %[[Y:.*]] = "core.FakeQuantize"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {levels = 256 : i64} : (tensor<1x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<1x8xf32>
// CHECK:         "tpu.fake_quantize"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {levels = 255 : i64}
func.func @fake_quantize(%x: tensor<1x8xf32>, %lo: tensor<f32>, %hi: tensor<f32>) -> tensor<1x8xf32> {
  %y = "core.FakeQuantize"(%x, %lo, %hi, %lo, %hi) {levels = 256 : i64} : (tensor<1x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<1x8xf32>
  %z = "tpu.fake_quantize"(%y, %lo, %hi, %lo, %hi) {levels = 255 : i64} : (tensor<1x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<1x8xf32>
  func.return %z : tensor<1x8xf32>
}
