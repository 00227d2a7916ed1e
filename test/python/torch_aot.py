# REQUIRES: torch
# RUN: %PYTHON %s
"""gated_attention.torch.warmup(..., chip=): CUDA kernels compiled ahead of
time into the disk cache on a machine without a GPU, from meta tensors: the
row-major kernel and the one for the tensors' rows (Qwen3-Next's q | gate
halves, [B, S, H, D] K and V) for sm_90's mma.sync kernels; the default
(wgmma on sm_90a) reads q, k and v contiguous, so compiles rows for the
gate and the output only; a second warm-up compiles nothing; no cache
directory or an unknown chip is an error that says so."""

import os
import tempfile

import torch

import gated_attention.torch as gat
from gated_attention.testing.logs import recorded

compiles = recorded("compiled ")

proj = torch.empty(1, 64, 4, 128, dtype=torch.bfloat16, device="meta")
q, g = proj[..., :64], proj[..., 64:]
k, v = (torch.empty(1, 64, 2, 64, dtype=torch.bfloat16, device="meta")
        for _ in range(2))

gat.set_cache_dir(None)
try:
    gat.warmup(q, k, v, g, causal=True, layout="bshd", chip="sm_90")
    raise AssertionError("warmup(chip=) without a cache directory")
except ValueError as e:
    assert "set_cache_dir" in str(e), e

with tempfile.TemporaryDirectory() as d:
    gat.set_cache_dir(d)
    try:
        gat.warmup(q, k, v, g, causal=True, layout="bshd", chip="sm_75")
        raise AssertionError("an unknown chip was accepted")
    except ValueError as e:
        assert "chip must be one of sm_80" in str(e), e
    mma = dict(causal=True, layout="bshd", chip="sm_90", kernel="mma-sync")
    gat.warmup(q, k, v, g, **mma)
    assert len(compiles) == 2, compiles
    # Rows of the [B, S, H, 2D] projection, of [B, S, H, D] K, V and out.
    assert "rows gate=512,k=128,out=256,q=512,v=128 for sm_90 " in \
        compiles[1], compiles
    # Two kernels, each a .ptx and a .json.
    assert len([f for f in os.listdir(d) if f.endswith(".ptx")]) == 2
    gat.warmup(q, k, v, g, **mma)
    assert len(compiles) == 2, compiles
    gat.warmup(q, k, v, g, causal=True, layout="bshd", chip="sm_90")
    assert len(compiles) == 4 and "rows gate=512,out=256 for sm_90a " in \
        compiles[3], compiles
print("torch AOT warmup: ok")
