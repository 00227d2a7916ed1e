# REQUIRES: cuda-gpu, torch
# RUN: %PYTHON %s
"""The torch op on CUDA tensors: numerics against float64 SDPA * act(g)
(bf16 and f16, both layouts, the q | gate halves of one projection), the
result on the input's device in its dtype, and capture in a CUDA graph:
replaying the graph on new inputs (copied into the captured tensors) gives
what an eager call gives. Not yet run on a GPU (no device was lent to the
session that wrote it)."""

import torch
import torch.nn.functional as F

import gated_attention.torch as gat

torch.manual_seed(0)
dev = torch.device("cuda")
ACT = {"sigmoid": torch.sigmoid, "silu": F.silu}


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
            q, g = (torch.randn(shape(HQ), device=dev).to(dtype)
                    for _ in range(2))
            k, v = (torch.randn(shape(HKV), device=dev).to(dtype)
                    for _ in range(2))
            out = gat.attention(q, k, v, g, causal=True, gate=gate,
                                combine=combine, layout=layout)
            assert out.device == q.device and out.dtype == dtype
            views = [x if layout == "bhsd" else x.transpose(1, 2)
                     for x in (q, k, v, g)]
            ref = reference(*views, gate, combine)
            got = out if layout == "bhsd" else out.transpose(1, 2)
            err = (got.double() - ref).abs().max().item()
            assert err < tol * (1 + ref.abs().max().item()), \
                (dtype, layout, gate, err)

# q | gate halves of Qwen3-Next's projection, bf16.
proj = torch.randn(1, 300, 16, 512, device=dev).to(torch.bfloat16)
q, g = proj[..., :256], proj[..., 256:]
k, v = (torch.randn(1, 300, 2, 256, device=dev).to(torch.bfloat16)
        for _ in range(2))
out = gat.attention(q, k, v, g, causal=True, layout="bshd")
ref = reference(*(x.transpose(1, 2) for x in (q, k, v, g)), "sigmoid", "mul")
assert (out.transpose(1, 2).double() - ref).abs().max().item() < 3e-2

# CUDA graph: capture once, replay on new data.
q, k, v, g = (torch.randn(1, h, 128, 64, device=dev).to(torch.bfloat16)
              for h in (4, 2, 2, 4))
gat.attention(q, k, v, g, causal=True)   # compile and load before capture
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
