// RUN: gated-attention-opt %s -split-input-file -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(gpu.module(verify-lowered{dialects=llvm,nvvm}))'

// The PTX pipeline checks each GPU module before compiling it: an op the
// NVVM lowering left is named, with the module it is in.
// expected-note @+1 {{in the kernels of GPU module @kernels, before they are compiled}}
gpu.module @kernels {
  llvm.func @k(%x: f32) -> f32 {
    // expected-error @+1 {{'math.erf' was not lowered by the pipeline (it produces only llvm, nvvm)}}
    %y = math.erf %x : f32
    llvm.return %y : f32
  }
}

// -----

// The op, not the cast that feeds it, is what the lowering left.
// expected-note @+1 {{in the kernels of GPU module @kernels}}
gpu.module @kernels {
  llvm.func @k(%x: !llvm.struct<(f32, f32)>) -> !llvm.struct<(f32, f32)> {
    %c = builtin.unrealized_conversion_cast %x : !llvm.struct<(f32, f32)> to complex<f32>
    // expected-error @+1 {{'complex.exp' was not lowered by the pipeline}}
    %e = complex.exp %c : complex<f32>
    %r = builtin.unrealized_conversion_cast %e : complex<f32> to !llvm.struct<(f32, f32)>
    llvm.return %r : !llvm.struct<(f32, f32)>
  }
}

// -----

// A cast alone is a conversion that did not finish.
gpu.module @kernels {
  llvm.func @k(%x: !llvm.ptr) {
    // expected-error @+1 {{'builtin.unrealized_conversion_cast' was left by the pipeline: a conversion did not finish}}
    %c = builtin.unrealized_conversion_cast %x : !llvm.ptr to memref<4xf32>
    llvm.return
  }
}

// -----

// Lowered kernels pass; the module around them is not the check's business.
gpu.module @kernels {
  llvm.func @k() attributes {nvvm.kernel} {
    %t = nvvm.read.ptx.sreg.tid.x : i32
    nvvm.barrier0
    llvm.return
  }
}
func.func @host() {
  return
}

// -----

// An op in the GPU module's body, outside any kernel, is named before
// gpu-module-to-binary translates the module (it crashed there; found by
// the fuzzer).
// expected-note @+1 {{in the kernels of GPU module @kernels, before they are compiled}}
gpu.module @kernels {
  // expected-error @+1 {{'nvvm.barrier0' stands in the body of 'gpu.module', where LLVM IR has no place for it}}
  nvvm.barrier0
  llvm.func @k() attributes {nvvm.kernel} {
    llvm.return
  }
}

// -----

// A kernel's constant is checked before gpu-module-to-binary translates it
// in process.
// expected-note @+1 {{in the kernels of GPU module @kernels, before they are compiled}}
gpu.module @kernels {
  // expected-error @+1 {{'llvm.mlir.global' holds a constant ('tensor<4294967296xf32>') that LLVM IR spells out in 17179869184 bytes}}
  llvm.mlir.global internal constant @table(dense<2.0> : tensor<4294967296xf32>) {addr_space = 4 : i32} : !llvm.array<4294967296 x f32>
  llvm.func @k() attributes {nvvm.kernel} {
    llvm.return
  }
}

// -----

// Translation writes out as many elements as the global's type holds,
// whatever the attribute's shape: this 64-element splat initializes an
// array of 2^32 (gpu-module-to-binary asked for 32 GiB; found by the
// fuzzer).
// expected-note @+1 {{in the kernels of GPU module @kernels}}
gpu.module @kernels {
  // expected-error @+1 {{'llvm.mlir.global' holds a constant ('!llvm.array<4294967296 x f32>') that LLVM IR spells out in 17179869184 bytes, more than the 2^28 (256 MiB)}}
  llvm.mlir.global internal constant @table(dense<2.0> : tensor<64xf32>) {addr_space = 4 : i32} : !llvm.array<4294967296 x f32>
  llvm.func @k() attributes {nvvm.kernel} {
    llvm.return
  }
}

// -----

// A type LLVM IR does not have, inside an aggregate, is named before
// gpu-module-to-binary's translation crashes on it.
// expected-note @+1 {{in the kernels of GPU module @kernels, before they are compiled}}
gpu.module @kernels {
  // expected-error @+1 {{'llvm.mlir.global' uses '!llvm.array<4 x tf32>' (its 'global_type'), which holds 'tf32': LLVM IR has no such type}}
  llvm.mlir.global internal @table() {addr_space = 3 : i32} : !llvm.array<4 x tf32>
}

// -----

// expected-note @+1 {{in the kernels of GPU module @kernels}}
gpu.module @kernels {
  // expected-error @+1 {{'llvm.func' defines @llvm.nvvm.mine, a name LLVM reserves for its intrinsics}}
  llvm.func @llvm.nvvm.mine() attributes {nvvm.kernel} {
    llvm.return
  }
}
