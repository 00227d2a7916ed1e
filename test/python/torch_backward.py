# REQUIRES: torch
# RUN: %PYTHON %s
"""torch.ops.gated_attention.attention under autograd on the CPU: the
gradients of .backward() against float64 autograd of the unfused
expression, torch.autograd.gradcheck in float64, torch.library.opcheck of
both forward ops (their autograd registrations and the backward's
tracing) and of the backward op, the saved tensors (the gated output and
the log-sum-exp, not the ungated output) and that the training path's
backward reads the saved log-sum-exp. The CUDA backward is
torch_cuda_backward.py's.

gradcheck runs in float64 with its default tolerances (step 1e-6, atol
1e-5, rtol 1e-3): float64 ops lower through the reference lowerings,
which accumulate in f64, so the analytic and the numerical Jacobians agree
to about 1e-10 here; a wrong gradient term is off by O(1)."""

import math

import torch

import gated_attention.torch as gat
from gated_attention import accuracy, accuracy_backward, config

torch.manual_seed(0)
op = torch.ops.gated_attention.attention


def unfused(q, k, v, g, causal, gate, combine):
    group = q.shape[1] // k.shape[1]
    k, v = (x.repeat_interleave(group, 1) for x in (k, v))
    s = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5
    if causal:
        sq, skv = q.shape[2], k.shape[2]
        i = torch.arange(sq)[:, None]
        j = torch.arange(skv)[None, :]
        s = s.masked_fill(j > i + skv - sq, float("-inf"))
    y = torch.nan_to_num(torch.softmax(s, -1), nan=0.0) @ v
    if g is None:
        return y
    a = {"sigmoid": torch.sigmoid(g), "silu": g * torch.sigmoid(g),
         "ns_sigmoid": 0.5 + 0.5 * torch.sigmoid(g)}[gate]
    return y * a if combine == "mul" else y + a


def leaves(shapes, dtype=torch.float32):
    return [None if s is None else
            torch.randn(*s, dtype=dtype).requires_grad_() for s in shapes]


# .backward() in each layout, gate and combine, GQA, causal with Sq > Skv.
for layout in ("bhsd", "bshd"):
    for gate, combine, gshape in (("sigmoid", "mul", (2, 4, 7, 8)),
                                  ("silu", "add", (2, 1, 7, 1)),
                                  ("ns_sigmoid", "mul", (2, 4, 7, 1)),
                                  (None, "mul", None)):
        q, k, v, g = leaves([(2, 4, 7, 16), (2, 2, 5, 16), (2, 2, 5, 8),
                             gshape])
        kw = dict(causal=True, gate=gate or "sigmoid", combine=combine)
        if layout == "bshd":
            args = [None if x is None else x.transpose(1, 2).detach()
                    .requires_grad_() for x in (q, k, v, g)]
        else:
            args = [q, k, v, g]
        out = op(*args, layout=layout, **kw)
        dout = torch.randn_like(out)
        out.backward(dout)
        # Against float64 within the backward's error model, the saved
        # output being the forward kernel's: within accuracy.error_bound,
        # taken twice (the CPU path's tiled sums, whose bound accuracy.py
        # models with a key block, stay within twice the plain one here).
        cfg = config.AttentionConfig(
            b=2, hq=4, hkv=2, sq=7, skv=5, d=16, dv=8, gate=gate or "none",
            combine=combine, causal=True,
            gate_heads="shared" if gshape and gshape[1] == 1 else "per_head",
            gate_width="headwise" if gshape and gshape[3] == 1
            else "elementwise")
        names = ("query", "key", "value", "gate")
        x = {n: t.detach().double().numpy() for n, t in zip(names, (q, k, v, g))
             if t is not None}
        grads = {n: (t.grad if layout == "bhsd" else t.grad.transpose(1, 2))
                 .double().numpy() for n, t in zip(names, args)
                 if t is not None}
        bhsd_dout = dout if layout == "bhsd" else dout.transpose(1, 2)
        result = accuracy_backward.compare_backward(
            cfg, grads, x, bhsd_dout.double().numpy(),
            out_error=2 * accuracy.error_bound(cfg, x),
            **accuracy_backward.cpu_model(cfg))
        for name, r in result.items():
            assert r.ok, (layout, gate, combine, name, r)
print("PASS .backward() == float64 within the error model (layouts, gates, "
      "combines)")

# gradcheck in float64 through the public entry point (the training
# path: attention_with_lse saving L): GQA, causal or not with Sq != Skv and
# rows that see no key (causal, Sq > Skv), each gate kind, combine add,
# headwise and shared gates, no gate, both layouts.
GRADCHECKS = [
    # (q, k, v, g shapes in bhsd, causal, gate, combine, layout)
    ((1, 4, 5, 8), (1, 2, 3, 8), (1, 2, 3, 4), (1, 4, 5, 4), True,
     "sigmoid", "mul", "bhsd"),
    ((1, 2, 3, 8), (1, 1, 6, 8), (1, 1, 6, 8), (1, 1, 3, 1), False,
     "silu", "mul", "bshd"),
    ((2, 2, 4, 8), (2, 2, 4, 8), (2, 2, 4, 4), (2, 2, 4, 1), True,
     "ns_sigmoid", "add", "bhsd"),
    ((1, 4, 6, 8), (1, 1, 2, 8), (1, 1, 2, 8), None, True,
     "sigmoid", "mul", "bhsd"),
]
for qs, ks, vs, gs, causal, gate, combine, layout in GRADCHECKS:
    def to_layout(s):
        return None if s is None else (
            s if layout == "bhsd" else (s[0], s[2], s[1], s[3]))
    inputs = leaves([to_layout(s) for s in (qs, ks, vs, gs)], torch.float64)
    inputs = [x for x in inputs if x is not None]
    kw = dict(causal=causal, gate=gate, combine=combine, layout=layout)
    assert torch.autograd.gradcheck(
        lambda *x: gat.attention(*x, **kw), tuple(inputs)), kw
print("PASS gradcheck (float64, default tolerances)")

# opcheck: both forward ops with inputs that require grad (autograd
# registration, fake kernels, aot_dispatch tracing the backward op) and
# the backward op itself, with and without the log-sum-exp.
q, k, v, g = leaves([(1, 4, 5, 16), (1, 2, 6, 16), (1, 2, 6, 8),
                     (1, 4, 5, 8)])
torch.library.opcheck(op.default, (q, k, v, g), {"causal": True})
torch.library.opcheck(torch.ops.gated_attention.attention_with_lse.default,
                      (q, k, v, g), {"causal": True})
out, lse = torch.ops.gated_attention.attention_with_lse(q, k, v, g)
out = out.detach()
for saved_lse in (None, lse):
    torch.library.opcheck(
        torch.ops.gated_attention.attention_backward.default,
        tuple(x.detach() for x in (q, k, v)) + (out, torch.randn_like(out),
                                                g.detach(), saved_lse),
        {"causal": False})
print("PASS opcheck (both forwards with autograd, backward op)")

# What autograd keeps. The training path (gat.attention under autograd):
# q, k, v, g, the gated output and the log-sum-exp [B, Hq, Sq], nothing
# else (no ungated output); the op called directly: the first five.
q, k, v, g = leaves([(1, 4, 5, 16), (1, 2, 6, 16), (1, 2, 6, 8),
                     (1, 4, 5, 8)], torch.float64)
for fn, count in ((gat.attention, 6), (op, 5)):
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(
            lambda t: saved.append(t) or t, lambda t: t):
        out = fn(q, k, v, g, causal=True)
    assert len(saved) == count, (fn, len(saved))
    ptrs = {t.data_ptr() for t in saved}
    assert ptrs >= {x.data_ptr() for x in (q, k, v, g, out)}, fn
    if count == 6:
        lse, = [t for t in saved if t.dim() == 3]
        assert lse.shape == (1, 4, 5) and lse.dtype == torch.float64
print("PASS saves (q, k, v, g, out, lse) on the training path, "
      "(q, k, v, g, out) from the op")

# The training path's backward reads the saved L rather than recomputing
# it: L + log 2 halves every weight P = exp(s - L), so dV = Pᵀ dY halves.
def value_grad(shift):
    v.grad = None
    with torch.autograd.graph.saved_tensors_hooks(
            lambda t: t + shift if t.dim() == 3 else t, lambda t: t):
        out = gat.attention(q, k, v, g, causal=True)
    out.backward(torch.ones_like(out))
    return v.grad.clone()


exact, halved = value_grad(0.0), value_grad(math.log(2.0))
assert torch.allclose(halved, exact / 2, rtol=1e-12, atol=0.0), \
    (halved - exact / 2).abs().max()
print("PASS the backward reads the saved log-sum-exp (L + log 2 halves dV)")
