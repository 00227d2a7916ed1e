// RUN: gated-attention-opt %s -split-input-file -verify-diagnostics \
// RUN:   --verify-lowered=dialects=builtin,llvm,gpu.binary

// What a pipeline could not lower is an error naming the op (the op, not
// its terminator).
// expected-error @+1 {{'func.func' was not lowered by the pipeline (it produces only builtin, gpu.binary, llvm)}}
func.func @left(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

llvm.func @launch(%n: i64) {
  %c = builtin.unrealized_conversion_cast %n : i64 to index
  // expected-error @+1 {{'gpu.launch' was not lowered by the pipeline}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c, %gy = %c, %gz = %c) threads(%tx, %ty, %tz) in (%sx = %c, %sy = %c, %sz = %c) {
    gpu.terminator
  }
  llvm.return
}

// -----

// PTX that still declares a libdevice function does not assemble.
// expected-error @+1 {{kernel PTX calls libdevice (__nv_expf, __nv_exp2f) but libdevice was not linked: set CUDA_HOME}}
gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = ".version 8.0\n.target sm_90\n.extern .func  (.param .b32 func_retval0) __nv_expf\n(\n.param .b32 __nv_expf_param_0\n)\n;\n.extern .func  (.param .b32 func_retval0) __nv_exp2f(.param .b32 p);\n.visible .entry k() { ret; }\n">]

// -----

// Linked PTX passes.
gpu.binary @linked [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = ".version 8.0\n.target sm_90\n.visible .entry k() { ret; }\n">]
llvm.func @host() {
  llvm.return
}

// -----

// An entry with a dot allows that op, not its dialect (the PTX pipeline's
// output holds gpu.binary and gpu.launch_func, not a synchronous gpu.alloc
// that the host lowering left).
llvm.func @host() {
  // expected-error @+1 {{'gpu.wait' was not lowered by the pipeline (it produces only builtin, gpu.binary, llvm)}}
  gpu.wait
  llvm.return
}

// -----

// A cast that a conversion left means it did not finish, though builtin
// ops may remain.
llvm.func @cast(%p: !llvm.ptr) {
  // expected-error @+1 {{'builtin.unrealized_conversion_cast' was left by the pipeline: a conversion did not finish (from '!llvm.ptr' to 'memref<4xf32>')}}
  %m = builtin.unrealized_conversion_cast %p : !llvm.ptr to memref<4xf32>
  llvm.return
}

// -----

// A narrower index is the usual cause (the pipelines reject a data layout
// in their input first; this pass alone names it).
// expected-note @+1 {{the data layout makes 'index' 32 bits wide; the pipelines support 64-bit index only}}
module attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>} {
  llvm.func @cast(%p: !llvm.ptr) {
    // expected-error @+1 {{'builtin.unrealized_conversion_cast' was left by the pipeline}}
    %m = builtin.unrealized_conversion_cast %p : !llvm.ptr to memref<4xf32>
    llvm.return
  }
}

// -----

// A module's body holds what LLVM IR has a place for: functions, globals and
// module-level declarations. Translation builds any other op there with no
// block to put it in (mlir-translate crashes on this module).
llvm.module_flags [#llvm.mlir.module_flag<error, "wchar_size", 4 : i32>]
llvm.mlir.global_ctors ctors = [@ctor], priorities = [0 : i32], data = [#llvm.zero]
llvm.mlir.global internal constant @g(1 : i32) : i32
llvm.func @ctor() {
  llvm.return
}
// expected-error @+1 {{'llvm.intr.trap' stands in the body of 'builtin.module', where LLVM IR has no place for it (only functions, globals and module-level declarations); move it into a function}}
"llvm.intr.trap"() : () -> ()

// -----

module @nested {
  // expected-error @+1 {{'llvm.mlir.constant' stands in the body of 'builtin.module'}}
  %c = llvm.mlir.constant(1 : i32) : i32
}

// -----

// Translation to LLVM IR writes out every element of a constant, a splat's
// too: a 2^48-element splat aborted mlir-translate asking for 8 TiB (found
// by the fuzzer). One constant holds at most 2^28 bytes.
// expected-error @+1 {{'llvm.mlir.global' holds a constant ('tensor<1099511627776x256xbf16>') that LLVM IR spells out in 562949953421312 bytes, more than the 2^28 (256 MiB) the pipelines put in one constant; pass data this large at run time}}
llvm.mlir.global private constant @huge(dense<5.000000e-01> : tensor<1099511627776x256xbf16>) : !llvm.array<1099511627776 x array<256 x bf16>>

// -----

// 2^28 bytes pass, as does an empty constant of small rows.
llvm.mlir.global private constant @limit(dense<1.0> : tensor<67108864xf32>) : !llvm.array<67108864 x f32>
llvm.mlir.global private constant @empty(dense<> : tensor<0x4xf32>) : !llvm.array<0 x array<4 x f32>>
llvm.func @host() {
  llvm.return
}

// -----

// An empty constant's rows are built even so: translation of this splat
// asked for 8 TiB, of one with rows of 2^63 - 1 for a vector larger than
// max_size (found by the fuzzer).
// expected-error @+1 {{'llvm.mlir.global' holds a constant ('tensor<0x1099511627776xbf16>') that LLVM IR spells out in 2199023255552 bytes}}
llvm.mlir.global private constant @rows(dense<1.0> : tensor<0x1099511627776xbf16>) : !llvm.array<0 x array<1099511627776 x bf16>>

// -----

// expected-error @+1 {{'llvm.mlir.global' holds a constant ('tensor<0x9223372036854775807xbf16>') that LLVM IR spells out in 18446744073709551614 bytes}}
llvm.mlir.global private constant @long_rows(dense<1.0> : tensor<0x9223372036854775807xbf16>) : !llvm.array<0 x array<9223372036854775807 x bf16>>

// -----

// One byte more, and a size past 64 bits, in a function's constant.
llvm.func @host() {
  // expected-error @+1 {{holds a constant ('tensor<268435457xi8>') that LLVM IR spells out in 268435457 bytes}}
  %c = llvm.mlir.constant(dense<1> : tensor<268435457xi8>) : !llvm.array<268435457 x i8>
  llvm.return
}

// -----

llvm.func @host() {
  // expected-error @+1 {{holds a constant ('tensor<9223372036854775807x4xcomplex<f32>>') that LLVM IR spells out in 2^64 bytes or more}}
  %c = llvm.mlir.constant(dense<(1.0, 0.0)> : tensor<9223372036854775807x4xcomplex<f32>>) : !llvm.array<9223372036854775807 x array<4 x struct<(f32, f32)>>>
  llvm.return
}

// -----

// A global's type counts, whatever its attribute's shape (the LLVM
// dialect's verifier does not compare them; llvm.mlir.constant's does).
// expected-error @+1 {{'llvm.mlir.global' holds a constant ('!llvm.array<1099511627776 x f32>') that LLVM IR spells out in 4398046511104 bytes}}
llvm.mlir.global private constant @wide(dense<1.0> : tensor<4xf32>) : !llvm.array<1099511627776 x f32>
