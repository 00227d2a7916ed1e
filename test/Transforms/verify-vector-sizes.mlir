// RUN: gated-attention-opt %s -split-input-file -verify-diagnostics \
// RUN:   --verify-vector-sizes

// The CPU pipeline unrolled this transfer row by row, 2^40 rows (a hang;
// the PTX pipeline made a 16 TiB alloca of it).
func.func @rows(%m: memref<1099511627776x4xf32>) -> vector<1099511627776x4xf32> {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  // expected-error @+1 {{'vector.transfer_read' uses 'vector<1099511627776x4xf32>', 4398046511104 elements; the pipelines take vectors of at most 65536 (vectors are register values, unrolled as they are lowered): use a tensor or a memref}}
  %v = vector.transfer_read %m[%c0, %c0], %z : memref<1099511627776x4xf32>, vector<1099511627776x4xf32>
  return %v : vector<1099511627776x4xf32>
}

// -----

// LLVM counts a vector's elements in 32 bits: this constant translated to
// <0 x float>.
func.func @splat() -> vector<1099511627776xf32> {
  // expected-error @+1 {{'arith.constant' uses 'vector<1099511627776xf32>', 1099511627776 elements}}
  %c = arith.constant dense<1.0> : vector<1099511627776xf32>
  return %c : vector<1099511627776xf32>
}

// -----

// 65536 elements pass, scalable ones counted by their base size.
func.func @limit(%a: vector<256x256xf32>, %b: vector<[65536]xi8>) -> vector<256x256xf32> {
  %s = arith.addf %a, %a : vector<256x256xf32>
  return %s : vector<256x256xf32>
}

// -----

// A block argument, and a vector inside another type.
// expected-error @+1 {{'func.func' uses 'vector<65537xf32>', 65537 elements}}
func.func @arg(%m: memref<4xvector<65537xf32>>) {
  return
}

// -----

// A declaration's signature, whose size overflows 64 bits.
// expected-error @+1 {{'func.func' uses 'vector<9223372036854775807x4xf32>', 2^64 or more elements}}
func.func private @declared(vector<9223372036854775807x4xf32>)
