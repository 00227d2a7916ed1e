# REQUIRES: torch
# RUN: %PYTHON %s
"""The op under torch's tooling: torch.library.opcheck (schema, fake
kernel, autograd registration, AOT dispatch), torch.compile(fullgraph=True)
of a module calling it (no graph break; dynamic lengths recompile nothing),
and torch.export (the op stays one node; the exported program runs)."""

import torch

import gated_attention.torch as gat

torch.manual_seed(5)
op = torch.ops.gated_attention.attention.default


def rand(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype)


# 1. opcheck on samples spanning the schema's options.
samples = [
    ((rand(1, 4, 9, 32), rand(1, 2, 11, 32), rand(1, 2, 11, 16),
      rand(1, 4, 9, 16)), dict(causal=True)),
    ((rand(2, 9, 4, 32, dtype=torch.bfloat16),
      rand(2, 11, 2, 32, dtype=torch.bfloat16),
      rand(2, 11, 2, 32, dtype=torch.bfloat16),
      rand(2, 9, 1, 1, dtype=torch.bfloat16)),
     dict(layout="bshd", gate="silu", combine="add", scale=0.3)),
    ((rand(1, 2, 5, 16, dtype=torch.float16),
      rand(1, 2, 5, 16, dtype=torch.float16),
      rand(1, 2, 5, 16, dtype=torch.float16)), dict()),
]
for args, kwargs in samples:
    torch.library.opcheck(op, args, kwargs)


# 2. torch.compile, no graph break: a module projecting x to [q | gate] per
# head (Qwen3-Next's q_proj), attending and projecting back.
class Block(torch.nn.Module):
    def __init__(self, hidden=64, heads=4, kv_heads=2, dim=16):
        super().__init__()
        self.heads, self.kv_heads, self.dim = heads, kv_heads, dim
        self.q_proj = torch.nn.Linear(hidden, heads * dim * 2, bias=False)
        self.kv_proj = torch.nn.Linear(hidden, kv_heads * dim * 2, bias=False)
        self.o_proj = torch.nn.Linear(heads * dim, hidden, bias=False)

    def forward(self, x):
        b, s, _ = x.shape
        qg = self.q_proj(x).view(b, s, self.heads, 2 * self.dim)
        q, g = qg[..., :self.dim], qg[..., self.dim:]
        kv = self.kv_proj(x).view(b, s, self.kv_heads, 2 * self.dim)
        k, v = kv[..., :self.dim], kv[..., self.dim:]
        y = gat.attention(q, k, v, g, causal=True, layout="bshd")
        return self.o_proj(y.reshape(b, s, -1))


block = Block().eval()
x = torch.randn(2, 24, 64)
with torch.no_grad():
    eager = block(x)
    torch._dynamo.reset()
    compiled = torch.compile(block, fullgraph=True, dynamic=True)
    assert torch.allclose(compiled(x), eager, atol=1e-5, rtol=1e-5)
    # Another length runs through the same graph.
    x2 = torch.randn(1, 37, 64)
    assert torch.allclose(compiled(x2), block(x2), atol=1e-5, rtol=1e-5)
explanation = torch._dynamo.explain(block)(x)
assert explanation.graph_break_count == 0, explanation.break_reasons
assert explanation.graph_count == 1, explanation.graph_count

# 3. torch.export: the op is one node of the exported graph, and the
# program computes what the module does.
with torch.no_grad():
    exported = torch.export.export(block, (x,))
targets = [n.target for n in exported.graph.nodes if n.op == "call_function"]
assert op in targets, targets
with torch.no_grad():
    assert torch.allclose(exported.module()(x), eager, atol=1e-5, rtol=1e-5)
print("torch tooling: ok")
