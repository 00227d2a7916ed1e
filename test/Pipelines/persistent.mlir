// --gated-attention-to-ptx forwards persistent and sm-count to the
// tensor-core pass: the persistent kernel's PTX, and a host launch of
// min(tiles, sm-count) CTAs (one CTA per tile without sm-count). Off by
// default: no persistent kernel, no min.
// RUN: gated-attention-opt %s '--gated-attention-to-ptx=chip=sm_90a persistent=1 sm-count=132' \
// RUN:   | FileCheck %s --check-prefix=SMS
// RUN: gated-attention-opt %s '--gated-attention-to-ptx=chip=sm_90a persistent=1' \
// RUN:   | FileCheck %s --check-prefix=PERTILE
// RUN: gated-attention-opt %s --gated-attention-to-ptx=chip=sm_90a | FileCheck %s --check-prefix=OFF
// Options it cannot honour are command-line errors.
// RUN: not gated-attention-opt %s '--gated-attention-to-ptx=chip=sm_90 persistent=1' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=CHIP
// RUN: not gated-attention-opt %s '--gated-attention-to-ptx=chip=sm_90a kernel=mma-sync persistent=1' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=MMA
// RUN: not gated-attention-opt %s '--gated-attention-to-ptx=chip=sm_90a persistent=1 sm-count=-4' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NEG
// RUN: not gated-attention-opt %s '--gated-attention-to-ptx=chip=sm_90a persistent=1 sm-count=4096' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=HUGE
// RUN: not gated-attention-opt %s '--gated-attention-to-ptx=chip=sm_90a sm-count=132' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ALONE

// SMS-LABEL: llvm.func @case
// SMS:       %[[CAP:.+]] = llvm.mlir.constant(132 : index) : i64
// SMS:       %[[CTAS:.+]] = llvm.intr.umin(%{{.+}}, %[[CAP]]) : (i64, i64) -> i64
// SMS-NEXT:  gpu.launch_func @[[K:gated_attention_bf16_h4x2_d64_causal_sm90a_persistent]]::@[[K]] blocks in (%[[CTAS]], %{{.+}}, %{{.+}})
// SMS:       gpu.binary @[[K]] {{.+}}.entry [[K]](

// PERTILE-LABEL: llvm.func @case
// PERTILE-NOT:   llvm.intr.umin
// PERTILE:       gpu.launch_func @gated_attention_bf16_h4x2_d64_causal_sm90a_persistent::
// PERTILE:       gpu.binary @gated_attention_bf16_h4x2_d64_causal_sm90a_persistent

// OFF-LABEL: llvm.func @case
// OFF-NOT:   llvm.intr.umin
// OFF:       gpu.launch_func @gated_attention_bf16_h4x2_d64_causal_sm90a::
// OFF-NOT:   persistent

// CHIP: error: option 'persistent' needs the wgmma kernel (chip=sm_90a, kernel auto or wgmma), got chip=sm_90 kernel=auto
// MMA: error: option 'persistent' needs the wgmma kernel (chip=sm_90a, kernel auto or wgmma), got chip=sm_90a kernel=mma-sync
// NEG: error: option 'sm-count' must be in [0, 1024], got -4
// HUGE: error: option 'sm-count' must be in [0, 1024], got 4096
// ALONE: error: option 'sm-count' (132) sizes the persistent kernel's grid: it needs persistent=1
func.func @case(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %g: tensor<?x4x?x64xbf16>) -> tensor<?x4x?x64xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x4x?x64xbf16>) -> tensor<?x4x?x64xbf16>
  return %r : tensor<?x4x?x64xbf16>
}
