# REQUIRES: cuda-gpu, torch
# RUN: %PYTHON %s
"""The torch op on CUDA tensors: numerics against float64 SDPA * act(g)
(bf16 and f16, both layouts, the q | gate halves of one projection read
in place through their strides, the output written in the caller's layout),
the result on the input's device in its dtype, no allocation but the output,
decode steps (split-KV where the gate and output are packed rows), and
capture in a CUDA graph: replaying the graph on new inputs (copied into
the captured tensors) gives what an eager call gives.

`--prepare DIR` (on a machine without a GPU) compiles every kernel the test
needs on an sm_90 GPU into the disk cache DIR, ahead of time
(gat.warmup(chip=)): what it runs by default (the wgmma kernels where they
fit) and with GATED_ATTENTION_CUDA_KERNEL=mma-sync; the device check runs
the test on the GPU machine, which has no MLIR, with
GATED_ATTENTION_CACHE_DIR=DIR."""

import sys

import torch
import torch.nn.functional as F

import gated_attention.torch as gat
from gated_attention.torch import _args, _select

PREPARE = sys.argv[1:2] == ["--prepare"]
if PREPARE:
    gat.set_cache_dir(sys.argv[2])
torch.manual_seed(0)
dev = torch.device("meta" if PREPARE else "cuda")
ACT = {"sigmoid": torch.sigmoid, "silu": F.silu}


def randn(*shape, dtype=torch.bfloat16):
    return torch.randn(*shape, device=dev).to(dtype)


def attention(q, k, v, g, **kw):
    """The op, or (--prepare) its kernels compiled for sm_90: the default's
    and mma.sync's."""
    if PREPARE:
        for kernel in (None, "mma-sync"):
            gat.warmup(q, k, v, g, chip="sm_90", kernel=kernel, **kw)
        return None
    return gat.attention(q, k, v, g, **kw)


def reference(q, k, v, g, gate, combine):
    q, k, v, g = (x.double() for x in (q, k, v, g))
    sq, skv = q.shape[2], k.shape[2]
    mask = torch.ones(sq, skv, dtype=torch.bool,
                      device=q.device).tril(diagonal=skv - sq)
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                       enable_gqa=True)
    a = ACT[gate](g)
    return y * a if combine == "mul" else y + a


for dtype, tol in ((torch.bfloat16, 3e-2), (torch.float16, 4e-3)):
    for layout in ("bhsd", "bshd"):
        for gate, combine in (("sigmoid", "mul"), ("silu", "add")):
            B, S, HQ, HKV, D = 2, 257, 8, 2, 128
            shape = (lambda h: (B, h, S, D)) if layout == "bhsd" else \
                (lambda h: (B, S, h, D))
            q, g = (randn(*shape(HQ), dtype=dtype) for _ in range(2))
            k, v = (randn(*shape(HKV), dtype=dtype) for _ in range(2))
            out = attention(q, k, v, g, causal=True, gate=gate,
                            combine=combine, layout=layout)
            if PREPARE:
                continue
            assert out.device == q.device and out.dtype == dtype
            views = [x if layout == "bhsd" else x.transpose(1, 2)
                     for x in (q, k, v, g)]
            ref = reference(*views, gate, combine)
            got = out if layout == "bhsd" else out.transpose(1, 2)
            err = (got.double() - ref).abs().max().item()
            assert err < tol * (1 + ref.abs().max().item()), \
                (dtype, layout, gate, err)

# q | gate halves of Qwen3-Next's projection, bf16, K and V [B, S, H, D].
proj = randn(1, 300, 16, 512)
q, g = proj[..., :256], proj[..., 256:]
k, v = (randn(1, 300, 2, 256) for _ in range(2))
out = attention(q, k, v, g, causal=True, layout="bshd")
if not PREPARE:
    ref = reference(*(x.transpose(1, 2) for x in (q, k, v, g)), "sigmoid",
                    "mul")
    assert (out.transpose(1, 2).double() - ref).abs().max().item() < 3e-2
    # ... read in place by the mma.sync kernel: the call allocates the
    # output and nothing else. The wgmma kernel (compute capability 9.0 by
    # default) reads q, k and v through TMA maps of [B, H, S, D]-contiguous
    # rows, so these three are copied first (an allocation each; the gate
    # is read in place). Either way the output is [B, S, H, D]-contiguous
    # (o_proj's input as is).
    cfg = _args.compile_key(_args.check(q, k, v, g, True, None, "sigmoid",
                                        "mul", "bshd"))
    wgmma = _select.forward(cfg, torch.cuda.get_device_capability())[1] \
        == "wgmma"
    torch.cuda.synchronize()
    allocations = torch.cuda.memory_stats()["allocation.all.allocated"]
    out = attention(q, k, v, g, causal=True, layout="bshd")
    assert torch.cuda.memory_stats()["allocation.all.allocated"] == \
        allocations + (4 if wgmma else 1), "allocations"
    assert out.is_contiguous() and out.shape == (1, 300, 16, 256)

# Decode steps (Sq = 1) of Qwen3-Next's heads over 4000 keys: B x Hq = 32
# one-row CTAs leave the GPU idle, so the op runs split-KV (partials, then
# the merge applying the gate once) when the gate and output are packed
# rows, in both layouts; q's gate half of a projection keeps one kernel.
for layout in ("bhsd", "bshd"):
    def decode_shape(h, s):
        return (2, h, s, 256) if layout == "bhsd" else (2, s, h, 256)
    q, g = randn(*decode_shape(16, 1)), randn(*decode_shape(16, 1))
    k, v = (randn(*decode_shape(2, 4000)) for _ in range(2))
    out = attention(q, k, v, g, layout=layout)
    if not PREPARE:
        views = [x if layout == "bhsd" else x.transpose(1, 2)
                 for x in (q, k, v, g, out)]
        ref = reference(*views[:4], "sigmoid", "mul")
        assert (views[4].double() - ref).abs().max().item() < 3e-2, layout
proj = randn(2, 1, 16, 512)
q, g = proj[..., :256], proj[..., 256:]
out = attention(q, k, v, g, layout="bshd")
if not PREPARE:
    ref = reference(*(x.transpose(1, 2) for x in (q, k, v, g)), "sigmoid",
                    "mul")
    assert (out.transpose(1, 2).double() - ref).abs().max().item() < 3e-2

# CUDA graph: capture once, replay on new data.
q, k, v, g = (randn(1, h, 128, 64) for h in (4, 2, 2, 4))
attention(q, k, v, g, causal=True)   # compile and load before capture
if PREPARE:
    print(f"torch op kernels for sm_90 in {sys.argv[2]}")
    sys.exit(0)
stream = torch.cuda.Stream()
stream.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(stream):
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        captured = gat.attention(q, k, v, g, causal=True)
torch.cuda.current_stream().wait_stream(stream)
for _ in range(3):
    for x in (q, k, v, g):
        x.copy_(torch.randn_like(x, dtype=torch.float32).to(x.dtype))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(captured, gat.attention(q, k, v, g, causal=True))
print("torch op on CUDA: ok")
