// RUN: gated-attention-opt %s -split-input-file -verify-diagnostics \
// RUN:   --verify-translation

// Aggregates' verifiers do not look at their elements: translation crashed
// on an array of tf32 (found by the fuzzer). The innermost type is named.
// expected-error @+1 {{'llvm.mlir.global' uses '!llvm.array<0 x !llvm.array<4 x tf32>>' (its 'global_type'), which holds 'tf32': LLVM IR has no such type}}
llvm.mlir.global private constant @empty(dense<> : tensor<0x4xf32>) : !llvm.array<0 x array<4 x tf32>>

// -----

llvm.func @f() {
  // expected-error @+1 {{'llvm.mlir.undef' uses '!llvm.struct<(i32, vector<2xf8E5M2>)>' (a result), which holds 'f8E5M2'}}
  %u = llvm.mlir.undef : !llvm.struct<(i32, vector<2xf8E5M2>)>
  llvm.return
}

// -----

// A definition under a name LLVM keeps for its intrinsics: a gpu.binary
// named so became @llvm.k_load, which LLVM's verifier rejected after
// translation, with no diagnostic (found by the fuzzer).
// expected-error @+1 {{'gpu.binary' defines @llvm.k, a name LLVM reserves for its intrinsics (which cannot be defined); rename it}}
gpu.binary @llvm.k [#gpu.object<#nvvm.target, assembly = ".version 8.0\n">]

// -----

// expected-error @+1 {{'llvm.func' defines @llvm.mine, a name LLVM reserves}}
llvm.func @llvm.mine() {
  llvm.return
}

// -----

// Declaring an intrinsic is what the name is for.
llvm.func @llvm.fabs.f32(f32) -> f32
llvm.func @abs(%x: f32) -> f32 {
  %y = llvm.call @llvm.fabs.f32(%x) : (f32) -> f32
  llvm.return %y : f32
}

// -----

// What only LLVM's verifier rejects is an error too, with its words.
// The op is the one whose symbol the verifier names.
// expected-error @+1 {{the output translates to LLVM IR that LLVM's verifier rejects: invalid linkage for intrinsic global variable}}
llvm.mlir.global private @llvm.used() : i32

// -----

// expected-error @+1 {{LLVM's verifier rejects: Intrinsic has incorrect return type!}}
llvm.func @llvm.fabs.f32(i32) -> i32
llvm.func @abs(%x: i32) -> i32 {
  %y = llvm.call @llvm.fabs.f32(%x) : (i32) -> i32
  llvm.return %y : i32
}

// -----

// A message that names no symbol of the module stands at the module.
// expected-error @+1 {{LLVM's verifier rejects: module flag identifiers must be unique}}
module {
  llvm.module_flags [#llvm.mlir.module_flag<error, "x", 1 : i32>,
                     #llvm.mlir.module_flag<error, "x", 2 : i32>]
}

// -----

// The module attributes translation casts without checking are checked
// first (as verify-module-attributes does on the pipelines' input).
// expected-error @+1 {{'llvm.target_triple' must be a string (translation to LLVM IR reads it as one), not 3 : i64}}
module attributes {llvm.target_triple = 3 : i64} {
}

// -----

// Translation resolves a personality without checking it names a function
// (the LLVM dialect's verifier checks it only when found): a crash.
// expected-error @+1 {{'llvm.func' names @nope as its personality, which is not an 'llvm.func' here: translation to LLVM IR cannot resolve it}}
llvm.func @f() attributes {personality = @nope} {
  llvm.return
}

// -----

llvm.mlir.global external @g() : i32
// expected-error @+1 {{'llvm.func' names @g as its personality, which is not an 'llvm.func' here}}
llvm.func @f() attributes {personality = @g} {
  llvm.return
}
