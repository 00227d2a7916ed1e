// The host code's grid for the persistent kernel: one CTA per tile
// without sm-count (any grid is correct; the host code cannot ask the
// device), min(tiles, sm-count) CTAs along x with it. The one-tile kernel,
// and the mma.sync kernel, which does not loop over tiles, keep their grid.
// RUN: gated-attention-opt %s --convert-gated-attention-to-nvgpu="chip=sm_90a kernel=wgmma persistent=1" \
// RUN:   | FileCheck %s --check-prefix=PERTILE
// RUN: gated-attention-opt %s --convert-gated-attention-to-nvgpu="chip=sm_90a kernel=wgmma persistent=1 sm-count=132" \
// RUN:   | FileCheck %s --check-prefix=SMS
// RUN: gated-attention-opt %s --convert-gated-attention-to-nvgpu="chip=sm_90a kernel=wgmma" \
// RUN:   | FileCheck %s --check-prefix=ONE
// RUN: gated-attention-opt %s --convert-gated-attention-to-nvgpu="chip=sm_90a kernel=mma-sync persistent=1 sm-count=132" \
// RUN:   | FileCheck %s --check-prefix=MMA
// Bad counts are errors, not a grid of zero or billions of CTAs; a count
// without persistent=1 would size nothing.
// RUN: not gated-attention-opt %s --convert-gated-attention-to-nvgpu="chip=sm_90a persistent=1 sm-count=-1" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NEG
// RUN: not gated-attention-opt %s --convert-gated-attention-to-nvgpu="chip=sm_90a persistent=1 sm-count=100000" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=HUGE
// RUN: not gated-attention-opt %s --convert-gated-attention-to-nvgpu="chip=sm_90a sm-count=132" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ALONE

// PERTILE-LABEL: func.func @case
// PERTILE:     %[[B:.+]] = tensor.dim %{{.+}}, %c0
// PERTILE:     %[[SQ:.+]] = tensor.dim %{{.+}}, %c2
// PERTILE:     %[[ROWS:.+]] = arith.ceildivui %[[SQ]], %c128
// PERTILE-NOT: arith.minui
// PERTILE:     gpu.launch_func @gated_attention_bf16_h4x2_d64_causal_sm90a_persistent::{{.+}} blocks in (%[[ROWS]], %c4{{.*}}, %[[B]]) threads in (%c384,

// SMS-LABEL:   func.func @case
// SMS:         %[[ROWS:.+]] = arith.ceildivui %{{.+}}, %c128
// SMS:         %[[HEADS:.+]] = arith.muli %[[ROWS]], %c4
// SMS:         %[[ALL:.+]] = arith.muli %[[HEADS]], %{{.+}} : index
// SMS:         %[[CAP:.+]] = arith.constant 132 : index
// SMS:         %[[UNIT:.+]] = arith.constant 1 : index
// SMS:         %[[CTAS:.+]] = arith.minui %[[ALL]], %[[CAP]] : index
// SMS:         gpu.launch_func @gated_attention_bf16_h4x2_d64_causal_sm90a_persistent::{{.+}} blocks in (%[[CTAS]], %[[UNIT]], %[[UNIT]]) threads in (%c384,

// ONE-LABEL:   func.func @case
// ONE:         %[[B:.+]] = tensor.dim %{{.+}}, %c0
// ONE:         %[[SQ:.+]] = tensor.dim %{{.+}}, %c2
// ONE:         %[[ROWS:.+]] = arith.ceildivui %[[SQ]], %c128
// ONE-NOT:     arith.minui
// ONE:         gpu.launch_func @gated_attention_bf16_h4x2_d64_causal_sm90a::{{.+}} blocks in (%[[ROWS]], %c4{{.*}}, %[[B]]) threads in (%c384,
// ONE-NOT:     persistent

// MMA-LABEL:   func.func @case
// MMA-NOT:     arith.minui
// MMA:         gpu.launch_func @gated_attention_bf16_h4x2_d64_causal::{{.+}} blocks in (%{{.+}}, %c4{{.*}}, %dim) threads in
// MMA-NOT:     persistent

// NEG: error: sm-count must be in [0, 1024] (0: one CTA per tile), got -1
// HUGE: error: sm-count must be in [0, 1024] (0: one CTA per tile), got 100000
// ALONE: error: sm-count=132 sizes the persistent kernel's grid: it needs persistent=1
func.func @case(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %g: tensor<?x4x?x64xbf16>) -> tensor<?x4x?x64xbf16> {
  %r = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x4x?x64xbf16>) -> tensor<?x4x?x64xbf16>
  return %r : tensor<?x4x?x64xbf16>
}
