# REQUIRES: cuda-gpu, torch
# RUN: %PYTHON %s
"""The torch op's backward on CUDA tensors (the kernels the device runs:
on sm_90 the wgmma dK/dV and dQ kernels where they fit, the mma.sync ones
with GATED_ATTENTION_CUDA_KERNEL=mma-sync; Qwen3-Next's D 256 and D 128,
64):
torch.ops.gated_attention.attention_backward against the float64
gradients within accuracy_backward's bound for the tensor-core kernels, on
the exact forward rounded to the element type as the saved output (what
test/Integration/Emulated/backward.test runs on the emulator), in both
layouts, with L computed by the op; gradients bitwise identical run to
run; `.backward()` through autograd gives what the op gives on the
forward's own output and log-sum-exp.

`--prepare DIR` (on a machine without a GPU) compiles the forward's and
the backward's kernels for sm_90 into the disk cache DIR
(gat.warmup(chip=, backward=True)), the default's and mma.sync's; the
device check runs the test on the GPU machine, which has no MLIR, with
GATED_ATTENTION_CACHE_DIR=DIR."""

import sys

import numpy as np
import torch

import gated_attention.torch as gat
from gated_attention import accuracy_backward, config
from gated_attention.testing import emulate_backward

PREPARE = sys.argv[1:2] == ["--prepare"]
if PREPARE:
    gat.set_cache_dir(sys.argv[2])
CASES = ("dtype=bf16,d=256,dv=256,hq=16,hkv=2,sq=200,skv=200,causal=1",
         "dtype=bf16,d=128,dv=128,hq=8,hkv=2,b=2,sq=300,skv=300,causal=1",
         "dtype=f16,d=64,dv=64,hq=4,hkv=1,sq=77,skv=130,causal=1,"
         "gate=ns_sigmoid,gh=shared,gw=headwise",
         "dtype=bf16,d=64,dv=64,hq=4,hkv=4,sq=130,skv=77,causal=1,gate=none")
TORCH = {"bf16": torch.bfloat16, "f16": torch.float16}
NAMES = {"dq": "query", "dk": "key", "dv": "value", "dg": "gate"}


def options(cfg, layout):
    return dict(causal=cfg.causal, gate=cfg.gate if cfg.gate != "none"
                else "sigmoid", layout=layout)


def user(a, dtype, layout):
    """A [B, H, S, D] array as a CUDA tensor in `layout`."""
    t = torch.from_numpy(np.ascontiguousarray(a)).to("cuda", dtype)
    return t if layout == "bhsd" else t.transpose(1, 2).contiguous()


def bhsd(t, layout):
    return t if layout == "bhsd" else t.transpose(1, 2)


failures = 0
for spec in CASES:
    cfg = config.parse_cases(spec)[0]
    gated = cfg.gate != "none"
    dtype = TORCH[cfg.dtype]
    # (D 256 in Qwen3-Next's layout only: its float64 reference is the
    # test's largest cost.)
    for layout in ("bshd",) if cfg.d == 256 else ("bhsd", "bshd"):
        if PREPARE:
            def meta(shape):
                s = shape if layout == "bhsd" else (shape[0], shape[2],
                                                    shape[1], shape[3])
                return torch.empty(s, dtype=dtype, device="meta")
            shapes = cfg.shapes()
            for kernel in (None, "mma-sync"):
                gat.warmup(meta(shapes["query"]), meta(shapes["key"]),
                           meta(shapes["value"]),
                           meta(shapes["gate"]) if gated else None,
                           chip="sm_90", backward=True, kernel=kernel,
                           **options(cfg, layout))
            continue
        # (Named before it runs: a case that hangs is the last one named.)
        print(f"case {layout} {cfg.describe()}", flush=True)
        x, dout, out, _ = emulate_backward.case_inputs(cfg, 0)
        q, k, v = (user(x[n], dtype, layout)
                   for n in ("query", "key", "value"))
        g = user(x["gate"], dtype, layout) if gated else None
        o, do = user(out, dtype, layout), user(dout, dtype, layout)
        grads = torch.ops.gated_attention.attention_backward(
            q, k, v, o, do, g, **options(cfg, layout))
        again = torch.ops.gated_attention.attention_backward(
            q, k, v, o, do, g, **options(cfg, layout))
        assert all(torch.equal(a, b) for a, b in zip(grads, again)), \
            "not bitwise reproducible"
        got = {NAMES[n]: bhsd(t, layout).double().cpu().numpy()
               for n, t in zip(NAMES, grads) if n != "dg" or gated}
        results = accuracy_backward.compare_backward(cfg, got, x, dout,
                                                     gpu=True)
        ok = all(r.ok for r in results.values())
        failures += not ok
        print(f"{'PASS' if ok else 'FAIL'} {layout} {cfg.describe()} "
              f"err/bound " + " ".join(f"{n}={r.ratio:.3f}"
                                       for n, r in results.items()),
              flush=True)
        # Autograd: the op's backward on the forward's own output.
        leaves = [t.clone().requires_grad_() for t in (q, k, v)] + (
            [g.clone().requires_grad_()] if gated else [None])
        y = gat.attention(*leaves, **options(cfg, layout))
        y.backward(do)
        # Autograd reads the L its forward wrote (attention_with_lse); the
        # direct call gets the same one, so the two are bitwise equal.
        _, lse = torch.ops.gated_attention.attention_with_lse(
            *leaves, **options(cfg, layout))
        direct = torch.ops.gated_attention.attention_backward(
            *leaves[:3], y.detach(), do, leaves[3], lse,
            **options(cfg, layout))
        for leaf, d in zip(leaves, direct):
            assert leaf is None or torch.equal(leaf.grad, d), layout
if PREPARE:
    print(f"torch backward test kernels for sm_90 in {sys.argv[2]}")
else:
    print(f"{failures} failed")
sys.exit(1 if failures else 0)
