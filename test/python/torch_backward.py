# REQUIRES: torch
# RUN: %PYTHON %s
"""torch.ops.gated_attention.attention under autograd on the CPU: the
gradients of .backward() against float64 autograd of the unfused
expression, torch.autograd.gradcheck, torch.library.opcheck of the forward
(its autograd registration and the backward's tracing) and of the backward
op, the saved tensors (the gated output, not the ungated one). The CUDA
backward is torch_cuda_backward.py's.

gradcheck runs in float32: the op takes float32, float16 and bfloat16
(the lowerings compute in f32), not float64. Its tolerance comes from the
central difference's errors: with step h, rounding contributes about
c u |f| / h (u = 2^-24, c = the forward's error-model constant, < 64 for
these sizes: err/bound of accuracy.error_bound) and truncation h^2 / 6
|f'''| (|f'''| < 10 for these O(1) inputs); h = 2^-7 gives
64 * 2^-24 / 2^-7 + 2^-14 / 6 * 10 < 5e-4 + 1.1e-4, so atol = 1e-3 and
rtol = 1e-2 (the Jacobian entries are O(1))."""

import warnings

import torch

import gated_attention.torch  # noqa: F401 (registers the ops)
from gated_attention import accuracy, accuracy_backward, config
from gated_attention.torch import _backward

warnings.filterwarnings("ignore", message=".*not a double precision.*")

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
            out_error=2 * accuracy.error_bound(cfg, x))
        for name, r in result.items():
            assert r.ok, (layout, gate, combine, name, r)
print("PASS .backward() == float64 within the error model (layouts, gates, "
      "combines)")

# gradcheck (float32, see the docstring for the tolerance).
for gate, combine, gshape in (("sigmoid", "mul", (1, 4, 5, 8)),
                              ("silu", "mul", (1, 1, 5, 1)),
                              ("ns_sigmoid", "add", (1, 4, 5, 8))):
    q, k, v, g = leaves([(1, 4, 5, 16), (1, 2, 6, 16), (1, 2, 6, 8), gshape])
    assert torch.autograd.gradcheck(
        lambda q, k, v, g: op(q, k, v, g, causal=True, gate=gate,
                              combine=combine),
        (q, k, v, g), eps=2.0**-7, atol=1e-3, rtol=1e-2,
        nondet_tol=0.0)
print("PASS gradcheck (float32, atol 1e-3, rtol 1e-2)")

# opcheck: the forward with inputs that require grad (autograd
# registration, fake kernels, aot_dispatch tracing the backward op) and
# the backward op itself.
q, k, v, g = leaves([(1, 4, 5, 16), (1, 2, 6, 16), (1, 2, 6, 8),
                     (1, 4, 5, 8)])
torch.library.opcheck(op.default, (q, k, v, g), {"causal": True})
out = op(q, k, v, g).detach()
torch.library.opcheck(
    torch.ops.gated_attention.attention_backward.default,
    tuple(x.detach() for x in (q, k, v)) + (out, torch.randn_like(out),
                                            g.detach()),
    {"causal": False})
print("PASS opcheck (forward with autograd, backward op)")

# What autograd keeps: q, k, v, g and the gated output, nothing else.
q, k, v, g = leaves([(1, 4, 5, 16), (1, 2, 6, 16), (1, 2, 6, 8),
                     (1, 4, 5, 8)])
saved = []
with torch.autograd.graph.saved_tensors_hooks(
        lambda t: saved.append(t) or t, lambda t: t):
    out = op(q, k, v, g)
assert len(saved) == 5, len(saved)
assert any(t is out or (t.data_ptr() == out.data_ptr()) for t in saved)
print("PASS saves (q, k, v, g, out)")
