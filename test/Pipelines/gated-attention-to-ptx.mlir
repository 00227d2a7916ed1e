// RUN: gated-attention-opt %s --gated-attention-to-ptx | FileCheck %s --check-prefix=SM90 \
// RUN:   --implicit-check-not=gated_attention.attention
// RUN: gated-attention-opt %s --gated-attention-to-ptx=chip=sm_80 | FileCheck %s --check-prefix=SM80
// Bad options are reported.
// RUN: not gated-attention-opt %s --gated-attention-to-ptx=rows-per-block=0 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: option 'rows-per-block' must be in [1, 1024], got 0

// bf16 takes the tensor-core kernel: the host launches it with
// (ceil(Sq / 64), Hq, B) blocks of 128 threads and 80 KiB of dynamic shared
// memory; the only host allocation is the result (no score buffer); the
// kernel is a gpu.binary holding PTX (with mma.sync) for the chosen chip.
// SM90: module attributes {gated_attention.kernels = {gated_attention_bf16_h16x2_d128_causal = "{{.*}}"}
// SM90-LABEL: llvm.func @attention
// SM90: llvm.call @malloc
// SM90-NOT: llvm.call @malloc
// SM90: gpu.launch_func @{{.+}}::@{{.+}} blocks in ({{.+}}) threads in ({{.+}})
// SM90: gpu.binary @{{.+}} [#gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx80">
// SM90-SAME: assembly = "{{.*}}.target sm_90{{.*}}.visible .entry gated_attention_bf16_h16x2_d128_causal({{.*}}mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32

// SM80: gpu.binary @{{.+}} [#gpu.object<#nvvm.target<chip = "sm_80", features = "+ptx70">
// SM80-SAME: .target sm_80
func.func @attention(%q: tensor<1x16x?x128xbf16>, %k: tensor<1x2x?x128xbf16>,
                     %v: tensor<1x2x?x128xbf16>, %g: tensor<1x16x?x128xbf16>) -> tensor<1x16x?x128xbf16> {
  %0 = gated_attention.attention %q, %k, %v, %g {causal}
      : (tensor<1x16x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x16x?x128xbf16>) -> tensor<1x16x?x128xbf16>
  return %0 : tensor<1x16x?x128xbf16>
}
