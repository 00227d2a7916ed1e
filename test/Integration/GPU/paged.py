# REQUIRES: cuda-gpu, torch
# RUN: %PYTHON %s
"""The paged kernels on the GPU, over the matrix the CPU lowering and the
emulator run (gated_attention.testing.paged_cases; its f32 cases in bf16 and
f16): ga.paged_attention(device="cuda") on numpy arrays (the direct kernel,
and split-KV in 3 parts with the merge) and
torch.ops.gated_attention.paged_attention on CUDA tensors (splits as it
chooses), each against the float64 reference within the error model's
bound, no NaN from the unused slots. Then the torch op in a CUDA graph: captured once, replayed after new
queries, tables and lengths are copied into the captured tensors, it gives
what an eager call gives (lengths and tables are read on the device).
On an sm_90 GPU, last, the sm_90a paged kernel (kernel=wgmma: a producer
warpgroup copying rows through the block table by cp.async) over the matrix
with head dims rounded up to multiples of 64 and Qwen3-Next's D = 256 with
528-token pages, direct and with 3 splits (mma.sync's split kernel).

`--prepare DIR` (on a machine without a GPU) compiles each case's kernel for
sm_90 into the disk cache DIR; the device check runs the test on the GPU
machine, which has no MLIR, with GATED_ATTENTION_CACHE_DIR=DIR."""

import dataclasses
import sys

import numpy as np

from gated_attention import cuda, dtypes, launcher, paged
from gated_attention.testing import emulate, paged_cases

PREPARE = sys.argv[1:2] == ["--prepare"]
rng = np.random.default_rng(0)
CASES = [dataclasses.replace(c, dtype=("bf16", "f16")[i % 2])
         if c.dtype == "f32" else c for i, c in enumerate(paged_cases.MATRIX)]

# A CUDA graph: decode over a batch whose tables and lengths change between
# replays (same shapes, as a serving engine's padded batch).
GRAPH_CASE = paged_cases.PagedCase(64, 16, 2, 128, 128, (1, 1, 1, 1),
                                   (300, 64, 129, 1), causal=True,
                                   dtype="bf16", spare_pages=8)

# The sm_90a kernel's cases: its swizzle span is 64 elements.
HOPPER_CASES = [dataclasses.replace(c, d=-(-c.d // 64) * 64,
                                    dv=-(-c.dv // 64) * 64) for c in CASES]
HOPPER_CASES.append(paged_cases.PagedCase(528, 16, 2, 256, 256, (1, 5, 300),
                                          (600, 40, 900), causal=True,
                                          dtype="bf16"))


def hopper_kernels(case, cache=None):
    return cuda.compile_paged_kernel(case.dense_config(), case.page,
                                     chip="sm_90a", kernel="wgmma",
                                     cache=cache)


if PREPARE:
    for case in CASES + [GRAPH_CASE]:
        cuda.compile_paged_kernel(case.dense_config(), case.page,
                                  chip="sm_90", cache=sys.argv[2])
    for case in HOPPER_CASES:
        hopper_kernels(case, sys.argv[2])
    print(f"prepared the paged kernels of {len(CASES) + 1} configurations "
          f"for sm_90 and {len(HOPPER_CASES)} for sm_90a")
    sys.exit(0)

import torch  # noqa: E402

import gated_attention.torch  # noqa: E402,F401  (registers the ops)

TORCH = {"bf16": torch.bfloat16, "f16": torch.float16}


def on_cuda(a, dtype):
    def t(x, ints=False):
        if x is None:
            return None
        if ints:
            return torch.from_numpy(np.asarray(x, np.int32)).cuda()
        return torch.from_numpy(np.asarray(x, np.float32)).to(
            "cuda", TORCH[dtype])
    return (t(a["q"]), t(a["key_cache"]), t(a["value_cache"]),
            t(a["block_table"], True), t(a["seq_lens"], True),
            t(a["cu_seqlens_q"], True), t(a["g"]))


for case in CASES:
    a = paged_cases.build(case, rng)
    worst = []
    for splits in (1, 3):   # the direct kernel, split-KV + merge
        out = paged.paged_attention(
            a["q"], a["key_cache"], a["value_cache"], a["block_table"],
            a["seq_lens"], a["cu_seqlens_q"], a["g"], dtype=case.dtype,
            device="cuda", num_splits=splits, **case.kwargs())
        worst.append(paged_cases.check(case, a, out))
    y = torch.ops.gated_attention.paged_attention(*on_cuda(a, case.dtype),
                                                  **case.kwargs())
    assert y.device.type == "cuda" and y.dtype == TORCH[case.dtype]
    worst.append(paged_cases.check(case, a, y.float().cpu().numpy()))
    print(f"PASS {case.describe()} numpy (direct, 3 splits), torch (chosen): "
          + ", ".join(f"{w:.3g}" for w in worst), flush=True)

case = GRAPH_CASE
first = paged_cases.build(case, rng)
second = paged_cases.build(dataclasses.replace(case, keys=(7, 250, 65, 192)),
                           rng)
# Both in one cache shape: pad the smaller to the larger.
for name in ("key_cache", "value_cache", "block_table"):
    n = max(first[name].shape[0], second[name].shape[0])
    for a in (first, second):
        pad = [(0, n - a[name].shape[0])] + [(0, 0)] * (a[name].ndim - 1)
        a[name] = np.pad(a[name], pad)
    m = max(first[name].shape[-1], second[name].shape[-1]) \
        if name == "block_table" else None
    if m:
        for a in (first, second):
            a[name] = np.pad(a[name], [(0, 0), (0, m - a[name].shape[1])])
inputs = on_cuda(first, "bf16")
static = [x.clone() for x in inputs]
torch.ops.gated_attention.paged_attention(*static, **case.kwargs())  # warm
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    captured = torch.ops.gated_attention.paged_attention(*static,
                                                         **case.kwargs())
for a in (second, first):
    for dst, src in zip(static, on_cuda(a, "bf16")):
        dst.copy_(src)
    graph.replay()
    torch.cuda.synchronize()
    eager = torch.ops.gated_attention.paged_attention(*on_cuda(a, "bf16"),
                                                      **case.kwargs())
    assert torch.equal(captured, eager), (captured - eager).abs().max()

if torch.cuda.get_device_capability() == (9, 0):
    backend = cuda.Backend(cuda.Driver())
    for case in HOPPER_CASES:
        compiled = hopper_kernels(case)
        assert compiled["paged"][0].endswith("_sm90a"), compiled["paged"][0]
        kernels = {layout: backend.kernel(ptx, desc)
                   for layout, (_, ptx, desc) in compiled.items()}
        a = paged_cases.build(case, rng)
        inputs, sizes = emulate.paged_inputs(a, case.dtype)
        # The direct kernel gates on the MUFU (its error model); split-KV's
        # merge gates accurately.
        worst = [paged_cases.check(case, a, dtypes.from_bits(
            launcher.run(kernels, inputs, splits, **sizes), case.dtype)
            .astype(np.float64).reshape(sizes["t"], case.hq, case.dv),
            kernel=compiled["paged"][0] if splits == 1 else None)
            for splits in (1, 3)]
        print(f"PASS {case.describe()} sm_90a (direct, 3 splits): "
              + ", ".join(f"{w:.3g}" for w in worst), flush=True)
print("paged kernel on the GPU: ok")
