func.func @f(%m: memref<1099511627776x4xf32>) -> vector<1099511627776x4xf32> {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %v = vector.transfer_read %m[%c0, %c0], %z : memref<1099511627776x4xf32>, vector<1099511627776x4xf32>
  return %v : vector<1099511627776x4xf32>
}
