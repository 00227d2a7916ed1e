// A loop that carries an attention result (a loop over layers) bufferizes
// and lowers on both pipelines: each step's result is a new buffer
// (bufferization's allow-return-allocs-from-loops). The numbers are checked
// by Integration/CPU/layer-loop.mlir.
// RUN: gated-attention-opt %s --gated-attention-to-ptx | FileCheck %s --check-prefix=PTX
// RUN: gated-attention-opt %s --gated-attention-to-llvm | FileCheck %s --check-prefix=CPU

// The f16 step is the tensor-core kernel, launched in the loop's body.
// PTX-LABEL: llvm.func @layers(
// PTX: llvm.cond_br %{{.*}}, ^[[BODY:bb[0-9]+]], ^[[EXIT:bb[0-9]+]]
// PTX: ^[[BODY]]:
// PTX-NOT: {{^ *\^bb}}
// PTX: gpu.launch_func @gated_attention_f16_h2x2_d64_nogate::@gated_attention_f16_h2x2_d64_nogate
// PTX: llvm.br ^bb
// PTX: ^[[EXIT]]:
// PTX-NOT: gpu.launch_func
// PTX: llvm.return

// CPU-LABEL: llvm.func @layers(
// CPU: llvm.cond_br
// CPU: llvm.call @malloc
// CPU: llvm.call @free
// CPU: llvm.return
func.func @layers(%q: tensor<1x2x16x64xf16>, %k: tensor<1x2x32x64xf16>,
                  %v0: tensor<1x2x32x64xf16>, %n: index) -> tensor<1x2x32x64xf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %v0) -> tensor<1x2x32x64xf16> {
    %a = gated_attention.attention %acc, %k, %acc
        : (tensor<1x2x32x64xf16>, tensor<1x2x32x64xf16>, tensor<1x2x32x64xf16>) -> tensor<1x2x32x64xf16>
    scf.yield %a : tensor<1x2x32x64xf16>
  }
  return %r : tensor<1x2x32x64xf16>
}

// An affine.for carrying the result (lowered to scf before bufferization,
// which does not know affine loops).
// PTX-LABEL: llvm.func @layers_affine(
// PTX: llvm.cond_br
// PTX: gpu.launch_func @gated_attention_f16_h2x2_d64_nogate::@gated_attention_f16_h2x2_d64_nogate
// PTX: llvm.return
// CPU-LABEL: llvm.func @layers_affine(
// CPU: llvm.cond_br
// CPU: llvm.return
func.func @layers_affine(%k: tensor<1x2x32x64xf16>, %v0: tensor<1x2x32x64xf16>) -> tensor<1x2x32x64xf16> {
  %r = affine.for %i = 0 to 4 iter_args(%acc = %v0) -> tensor<1x2x32x64xf16> {
    %a = gated_attention.attention %acc, %k, %acc
        : (tensor<1x2x32x64xf16>, tensor<1x2x32x64xf16>, tensor<1x2x32x64xf16>) -> tensor<1x2x32x64xf16>
    affine.yield %a : tensor<1x2x32x64xf16>
  }
  return %r : tensor<1x2x32x64xf16>
}
