"""A small Qwen3-Next-shaped gated-attention language model in PyTorch.

Qwen3-Next's full-attention layer scaled down (its hidden 2048, 16 query
heads over 2 KV heads of dim 256 become 256, 16 over 2 of dim 32: the same
GQA ratio and q_proj width of twice the hidden size): q_proj gives
[query | gate] per head; q and k get an RMSNorm over the head dim with a
zero-centred weight, x * rsqrt(mean(x^2) + eps) * (1 + w), and a rotary
embedding on the first quarter of the head dim (rotate-half form); causal
grouped-query attention whose output is gated by sigmoid(gate),
elementwise; o_proj. Each block is x + attn(norm(x)), then x + mlp(norm(x))
with a SwiGLU MLP (Qwen3-Next's is a mixture of experts; one dense expert
here); a final norm and an untied LM head.

`attention="op"` runs the gated attention as gated_attention.attention
(one op: autograd saves q, k, v, the gate and the gated output);
`"unfused"` as training stacks do today (HF's Qwen3NextAttention,
Megatron-Core): torch's scaled_dot_product_attention, then
`y * sigmoid(gate)`, whose autograd also saves the ungated output.
"""

import dataclasses
import math

import torch
import torch.nn.functional as F

ATTENTIONS = ("op", "unfused")
F32_UNIT = 2.0 ** -24


@dataclasses.dataclass(frozen=True)
class Shape:
    vocab: int = 256
    hidden: int = 256
    layers: int = 2
    heads: int = 16
    kv_heads: int = 2
    head_dim: int = 32
    mlp: int = 512
    rotary: int = 8          # Qwen3-Next's partial rotary factor, 0.25
    eps: float = 1e-6


class RMSNorm(torch.nn.Module):
    """Qwen3-Next's norm: a zero-centred weight, applied as (1 + w)."""

    def __init__(self, width, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(width))
        self.eps = eps

    def forward(self, x):
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x * (1 + self.weight)


def rotary_tables(shape, seq, dtype):
    """cos, sin [seq, rotary] of the rotate-half embedding (theta 10^4)."""
    half = shape.rotary // 2
    freq = 10000.0 ** (-torch.arange(half, dtype=torch.float64) / half)
    angle = torch.arange(seq, dtype=torch.float64)[:, None] * freq[None, :]
    angle = torch.cat([angle, angle], -1)
    return angle.cos().to(dtype), angle.sin().to(dtype)


def _rotate(x, cos, sin, width):
    """The rotary embedding on the first `width` dims of x [B, S, H, D]."""
    r, rest = x[..., :width], x[..., width:]
    a, b = r.chunk(2, -1)
    r = r * cos[:, None, :] + torch.cat([-b, a], -1) * sin[:, None, :]
    return torch.cat([r, rest], -1)


def gated_attention(q, k, v, g, attention):
    """The attention core on [B, S, H, D] tensors: SDPA (causal, GQA)
    gated by sigmoid(g), as one op or unfused."""
    if attention == "op":
        from .. import torch as gat
        return gat.attention(q, k, v, g, causal=True, layout="bshd")
    y = F.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
        is_causal=True, enable_gqa=True)
    return y.transpose(1, 2) * torch.sigmoid(g)


class Attention(torch.nn.Module):
    def __init__(self, shape, attention):
        super().__init__()
        if attention not in ATTENTIONS:
            raise ValueError(f"attention must be one of {ATTENTIONS}, not "
                             f"{attention!r}")
        s = shape
        self.shape, self.attention = s, attention
        self.q_proj = torch.nn.Linear(s.hidden, s.heads * 2 * s.head_dim,
                                      bias=False)
        self.k_proj = torch.nn.Linear(s.hidden, s.kv_heads * s.head_dim,
                                      bias=False)
        self.v_proj = torch.nn.Linear(s.hidden, s.kv_heads * s.head_dim,
                                      bias=False)
        self.o_proj = torch.nn.Linear(s.heads * s.head_dim, s.hidden,
                                      bias=False)
        self.q_norm = RMSNorm(s.head_dim, s.eps)
        self.k_norm = RMSNorm(s.head_dim, s.eps)

    def forward(self, x, cos, sin):
        s = self.shape
        b, n, _ = x.shape
        qg = self.q_proj(x).view(b, n, s.heads, 2 * s.head_dim)
        q, g = qg[..., :s.head_dim], qg[..., s.head_dim:]
        k = self.k_proj(x).view(b, n, s.kv_heads, s.head_dim)
        v = self.v_proj(x).view(b, n, s.kv_heads, s.head_dim)
        q = _rotate(self.q_norm(q), cos, sin, s.rotary)
        k = _rotate(self.k_norm(k), cos, sin, s.rotary)
        y = gated_attention(q, k, v, g, self.attention)
        return self.o_proj(y.reshape(b, n, s.heads * s.head_dim))


class Block(torch.nn.Module):
    def __init__(self, shape, attention):
        super().__init__()
        self.attn_norm = RMSNorm(shape.hidden, shape.eps)
        self.attn = Attention(shape, attention)
        self.mlp_norm = RMSNorm(shape.hidden, shape.eps)
        self.gate_up = torch.nn.Linear(shape.hidden, 2 * shape.mlp,
                                       bias=False)
        self.down = torch.nn.Linear(shape.mlp, shape.hidden, bias=False)

    def forward(self, x, cos, sin):
        x = x + self.attn(self.attn_norm(x), cos, sin)
        gate, up = self.gate_up(self.mlp_norm(x)).chunk(2, -1)
        return x + self.down(F.silu(gate) * up)


class GatedLM(torch.nn.Module):
    """Token ids [B, S] -> logits [B, S, vocab]."""

    def __init__(self, shape=Shape(), attention="op"):
        super().__init__()
        self.shape = shape
        self.embed = torch.nn.Embedding(shape.vocab, shape.hidden)
        self.blocks = torch.nn.ModuleList(
            Block(shape, attention) for _ in range(shape.layers))
        self.norm = RMSNorm(shape.hidden, shape.eps)
        self.head = torch.nn.Linear(shape.hidden, shape.vocab, bias=False)
        for p in self.parameters():
            if p.dim() == 2:   # N(0, 1 / fan-in); norms keep zeros
                torch.nn.init.normal_(p, std=1 / math.sqrt(p.shape[1]))

    def forward(self, tokens):
        x = self.embed(tokens)
        cos, sin = rotary_tables(self.shape, tokens.shape[1], x.dtype)
        for block in self.blocks:
            x = block(x, cos, sin)
        return self.head(self.norm(x))


def loss(model, tokens):
    """Next-token cross-entropy of `model` on tokens [B, S]."""
    logits = model(tokens[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           tokens[:, 1:].reshape(-1))


def warmup(model, tokens):
    """Compiles (or loads) the op's forward and backward kernels for
    `model`'s layers at `tokens`' shape, so a training step compiles
    nothing (B and the length do not matter)."""
    from .. import torch as gat
    s = model.shape
    b, n = tokens.shape
    meta = dict(device="meta", dtype=model.head.weight.dtype,
                requires_grad=True)
    qg = torch.empty(b, n, s.heads, 2 * s.head_dim, **meta)
    kv = torch.empty(b, n, s.kv_heads, s.head_dim, **meta)
    gat.warmup(qg[..., :s.head_dim], kv, kv, qg[..., s.head_dim:],
               causal=True, layout="bshd", device="cpu")


def loss_tolerances(ref32, ref64, vocab):
    """Per-step tolerances of a float32 run's losses against the float64
    run `ref64` of the same training, `ref32` the unfused float32 run's:
    2 E(t) + r(t). The float32 runs are the float64 trajectory plus
    float32 rounding, which the training amplifies alike whatever made
    it: E(t) = max over s <= t of |ref32(s) - ref64(s)| measures that.
    The op's error model bounds its rounding by twice the plain float32
    sums' bound (the CPU path's tiled sums; torch_backward.py takes the
    same factor), hence 2 E(t); r(t) = 2^-24 (sqrt(vocab) + 2) |ref64(t)|
    is one float32 evaluation of the loss (a softmax over the vocabulary),
    which stands for E before the runs diverge."""
    tolerances, envelope = [], 0.0
    for l32, l64 in zip(ref32, ref64):
        envelope = max(envelope, abs(l32 - l64))
        tolerances.append(2 * envelope + F32_UNIT * (math.sqrt(vocab) + 2)
                          * abs(l64))
    return tolerances
