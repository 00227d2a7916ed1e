"""The torch modules the frontend tests export with torch-mlir and raise:
gated attention as model code writes it.

- `sdpa_gqa`: F.scaled_dot_product_attention(q, k, v, is_causal=True,
  enable_gqa=True) * torch.sigmoid(g), the elementwise gate of Qwen3-Next;
- the paper's other gates: `headwise` (one gate value per head and token,
  g [B, H, S, 1]), `shared` (one gate for all heads, g [B, 1, S, D]),
  `additive` (SDPA + sigmoid(g)), `silu` (SDPA * silu(g));
- `einsum`: the same attention written with two `torch.einsum`s;
- `gelu_block`: the gated attention followed by a feed-forward with exact
  GELU (`math.erf`, a libm call on the CPU) and a residual;
- `top_left`: SDPA with Sq < Skv, whose `is_causal` mask (top-left) is not
  the op's: it must stay unfused;
- `qwen3_next`: HF transformers' Qwen3NextAttention (a small random config,
  no weights downloaded): q_proj gives [q | gate] per head, q/k RMS norms,
  rotary embeddings, GQA, SDPA, the gate, o_proj;
- `eager`: attention as HF transformers' eager implementation writes it:
  K/V repeated for GQA, `QKᵀ * scaling + mask` with the causal mask built
  in the graph from `torch.finfo(dtype).min`, the softmax in float32,
  dropout(p=0), and the gate applied in [B, S, H·D];
- `paper_headwise`: the paper's code's headwise gate, one value per head
  and token in [B, S, H, 1], applied to SDPA's output in [B, S, H, D];
- `masked_fill`: manual attention with the mask of nanoGPT-style code,
  `masked_fill(tril(ones).view(1, 1, S, S) == 0, -inf)`;
- `buffer_mask`: the same mask read from a registered buffer, nanoGPT's
  `bias` (a float triangle of ones for 64 positions, sliced to S);
- `gpt2_mask`: GPT-2's older eager attention, `torch.where` of a bool
  triangle buffer between the scores and `torch.finfo(dtype).min`.

Each entry: (module, example inputs, whether raising must produce the op
with a gate). `export(name)` returns linalg-on-tensors MLIR text.
"""

import torch
import torch.nn.functional as F

B, S, HQ, HKV, D = 1, 16, 4, 2, 32


class Sdpa(torch.nn.Module):
    def __init__(self, act=torch.sigmoid, combine="mul", gqa=True):
        super().__init__()
        self.act, self.combine, self.gqa = act, combine, gqa

    def forward(self, q, k, v, g):
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           enable_gqa=self.gqa)
        a = self.act(g)
        return y * a if self.combine == "mul" else y + a


class Einsum(torch.nn.Module):
    """Attention as research code writes it with einsum (torch decomposes
    each einsum into 5-D reshapes and transposes around a batch_matmul)."""

    def forward(self, q, k, v, g):
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) / D ** 0.5
        p = s.softmax(dim=-1)
        return torch.einsum("bhqk,bhkd->bhqd", p, v) * torch.sigmoid(g)


class GeluBlock(torch.nn.Module):
    """The gated attention output through a GELU (exact, erf) feed-forward
    with a residual, as GPT-2/BERT-style blocks have it."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(1)
        self.up = torch.nn.Linear(D, 2 * D)
        self.down = torch.nn.Linear(2 * D, D)

    def forward(self, q, k, v, g):
        y = Sdpa()(q, k, v, g)
        return y + self.down(F.gelu(self.up(y)))


class Eager(torch.nn.Module):
    """HF transformers' eager attention (repeat_kv, an additive causal mask
    of finfo.min built in the graph, softmax in float32) and the gate in
    [B, S, H·D], as Qwen3NextAttention applies it."""

    def forward(self, q, k, v, g):
        def repeat(x):
            b, h, s, d = x.shape
            return x[:, :, None].expand(b, h, HQ // h, s, d).reshape(
                b, HQ, s, d)

        n = q.shape[2]
        lowest = torch.finfo(q.dtype).min
        mask = torch.full((n, n), lowest, dtype=q.dtype).triu(1)
        w = torch.matmul(q, repeat(k).transpose(2, 3)) * D ** -0.5 + mask
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        w = F.dropout(w, p=0.0, training=False)
        y = torch.matmul(w, repeat(v)).transpose(1, 2).reshape(B, n, HQ * D)
        return y * torch.sigmoid(g.transpose(1, 2).reshape(B, n, HQ * D))


class PaperHeadwise(torch.nn.Module):
    """The paper's headwise gate: g [B, S, H, 1] on SDPA's output
    transposed to [B, S, H, D]."""

    def forward(self, q, k, v, g):
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           enable_gqa=True).transpose(1, 2)
        return (y * torch.sigmoid(g)).reshape(B, S, HQ * D)


class MaskedFill(torch.nn.Module):
    """Manual attention masked as nanoGPT-style code masks it: a float
    lower triangle of ones, viewed as [1, 1, S, S], compared with 0."""

    def forward(self, q, k, v, g):
        n = q.shape[2]
        s = (q @ k.transpose(-2, -1)) * (1.0 / k.size(-1) ** 0.5)
        s = s.masked_fill(torch.tril(torch.ones(n, n)).view(1, 1, n, n) == 0,
                          float("-inf"))
        return (F.softmax(s, dim=-1) @ v) * torch.sigmoid(g)


class BufferMask(torch.nn.Module):
    """Manual attention masked from registered triangle buffers: nanoGPT's
    float `bias` compared with 0 (-inf), or GPT-2's bool one selecting the
    scores or finfo.min (`gpt2`)."""

    def __init__(self, gpt2=False):
        super().__init__()
        self.gpt2 = gpt2
        tri = torch.tril(torch.ones(64, 64))
        self.register_buffer("bias", (tri.bool() if gpt2 else tri).view(
            1, 1, 64, 64))

    def forward(self, q, k, v, g):
        n, m = q.shape[2], k.shape[2]
        s = (q @ k.transpose(-2, -1)) * (1.0 / k.size(-1) ** 0.5)
        visible = self.bias[:, :, m - n:m, :m]
        if self.gpt2:
            s = torch.where(visible, s, torch.full(
                [], torch.finfo(s.dtype).min, dtype=s.dtype))
        else:
            s = s.masked_fill(visible == 0, float("-inf"))
        return (F.softmax(s, dim=-1) @ v) * torch.sigmoid(g)


def _inputs(gate_shape, hkv=HKV):
    torch.manual_seed(0)
    return (torch.randn(B, HQ, S, D), torch.randn(B, hkv, S, D),
            torch.randn(B, hkv, S, D), torch.randn(*gate_shape))


def _qwen3_next():
    from transformers.models.qwen3_next import modeling_qwen3_next as m
    config = m.Qwen3NextConfig(
        hidden_size=64, num_attention_heads=HQ, num_key_value_heads=HKV,
        head_dim=D, num_hidden_layers=1, vocab_size=32,
        partial_rotary_factor=0.5)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    attention = m.Qwen3NextAttention(config, layer_idx=0).eval()
    # The model computes the rotary tables once for all layers: they are
    # inputs of the layer's attention (and the rotary module's non-persistent
    # buffer would not export).
    x = torch.randn(B, S, 64)
    cos, sin = m.Qwen3NextRotaryEmbedding(config)(
        x, torch.arange(S).unsqueeze(0))

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = attention

        def forward(self, x, cos, sin):
            return self.attention(x, (cos, sin), None)[0]

    return Block().eval(), (x, cos, sin)


MODULES = {
    "sdpa_gqa": lambda: (Sdpa(), _inputs((B, HQ, S, D))),
    "headwise": lambda: (Sdpa(), _inputs((B, HQ, S, 1))),
    "shared": lambda: (Sdpa(), _inputs((B, 1, S, D))),
    "additive": lambda: (Sdpa(combine="add"), _inputs((B, HQ, S, D))),
    "silu": lambda: (Sdpa(act=F.silu, gqa=False),
                     _inputs((B, HQ, S, D), hkv=HQ)),
    "qwen3_next": _qwen3_next,
    "einsum": lambda: (Einsum(), _inputs((B, HQ, S, D), hkv=HQ)),
    "gelu_block": lambda: (GeluBlock().eval(), _inputs((B, HQ, S, D))),
    "eager": lambda: (Eager(), _inputs((B, HQ, S, D))),
    "paper_headwise": lambda: (PaperHeadwise(), _inputs((B, S, HQ, 1))),
    "masked_fill": lambda: (MaskedFill(), _inputs((B, HQ, S, D), hkv=HQ)),
    "buffer_mask": lambda: (BufferMask(), _inputs((B, HQ, S, D), hkv=HQ)),
    "gpt2_mask": lambda: (BufferMask(gpt2=True),
                          _inputs((B, HQ, S, D), hkv=HQ)),
    # torch's is_causal is top-left aligned; with Sq < Skv that is not the
    # op's (bottom-right) mask, so this one must not be raised.
    "top_left": lambda: (Sdpa(), (torch.randn(B, HQ, S // 2, D),
                                  *_inputs((B, HQ, S // 2, D))[1:3],
                                  torch.randn(B, HQ, S // 2, D))),
}


def export(name):
    """linalg-on-tensors MLIR of module `name` (torch-mlir's FX importer,
    torch's default decompositions), function @forward."""
    from torch_mlir import fx
    module, args = MODULES[name]()
    with torch.no_grad():
        return str(fx.export_and_import(module, *args,
                                        output_type="linalg-on-tensors",
                                        func_name="forward"))


if __name__ == "__main__":
    import argparse
    import os
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", required=True)
    p.add_argument("names", nargs="*", default=sorted(MODULES))
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in args.names:
        with open(os.path.join(args.out, name + ".mlir"), "w") as f:
            f.write(export(name))
