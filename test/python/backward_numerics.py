# REQUIRES: torch
# RUN: %PYTHON %s
"""Numerics of gated_attention.attention_backward on the CPU (the tiled
FlashAttention-2-shaped lowering of --gated-attention-to-llvm, through
torch.ops.gated_attention.attention_backward) against the float64
gradients, element by element within accuracy_backward.backward_error_bound:
a random matrix over GQA 1/2/8, D 64/128/256 with Dv != D, causal or not,
Sq != Skv (rows that see no key, Skv = 0), several query and key blocks
with ragged tails (Sq, Skv not multiples of the 64-row blocks), every gate
and combine, headwise/elementwise, shared/per-head gates, f32/f16/bf16;
each case both recomputing L and reading the forward's (the training
path; there the kernel also runs on NaN-filled gradient buffers and must
give the same bits: the op does not zero them); and the reference lowering
(reference=1) on a few of its cases. The
hand-written float64 reference is itself checked against torch's float64
autograd of the unfused expression, and the bound rejects a wrong gate
derivative and one element off by 5 bounds."""

import itertools

import numpy as np
import torch

import gated_attention.torch  # noqa: F401 (registers the ops)
from gated_attention.torch import _args, _backward
from gated_attention import accuracy_backward, config, dtypes, reference

TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def tensor(x, dtype):
    return torch.from_numpy(np.ascontiguousarray(x, np.float64)).to(
        TORCH[dtype])


def inputs_of(cfg, seed):
    x = cfg.inputs(seed)
    rng = np.random.default_rng(seed + 1)
    dout = dtypes.round_to(rng.standard_normal(cfg.shapes()["result"]),
                           cfg.dtype)
    # The saved output: the exact forward rounded to T (u_out = u).
    with np.errstate(invalid="ignore"):
        out = dtypes.round_to(cfg.reference(x), cfg.dtype)
    return x, dout, out


def run(cfg, x, dout, out, lse=None):
    """The op's gradients; with `lse` (float64 [B, Hq, Sq]) it reads that
    log-sum-exp, rounded to f32, as the training path does. Then the
    kernel is also run on gradient buffers filled with NaN: the op hands
    it uninitialized ones, so it must write every element (rows that see
    no key, ragged tails, Skv = 0) and give the same bits."""
    gated = cfg.gate != "none"
    args = [tensor(x[n], cfg.dtype) for n in ("query", "key", "value")]
    inputs = args + [tensor(out, cfg.dtype), tensor(dout, cfg.dtype),
                     tensor(x["gate"], cfg.dtype) if gated else None]
    lse_t = None if lse is None else torch.from_numpy(
        np.ascontiguousarray(lse, np.float32))
    dq, dk, dv, dg = torch.ops.gated_attention.attention_backward(
        *inputs, lse_t, causal=cfg.causal, scale=cfg.scale,
        gate=cfg.gate if gated else "sigmoid", combine=cfg.combine)
    grads = {"query": dq, "key": dk, "value": dv}
    if gated:
        grads["gate"] = dg
    if lse is not None and any(t.numel() for t in grads.values()):
        poisoned = [torch.full_like(t, float("nan")) for t in grads.values()]
        kernel = _backward.kernel_for(
            _args.check(*args, inputs[5], cfg.causal, cfg.scale,
                        cfg.gate if gated else "sigmoid", cfg.combine,
                        "bhsd"), lse=True)
        kernel(*[t for t in inputs if t is not None], lse_t, *poisoned)
        for name, want, got in zip(grads, grads.values(), poisoned):
            assert torch.equal(want, got), (cfg.describe(), name)
    return {n: t.double().numpy() for n, t in grads.items()}


def torch_reference(cfg, x, dout):
    """float64 autograd of the unfused expression (GQA by repeat)."""
    names = ("query", "key", "value") + (("gate",) if cfg.gate != "none"
                                         else ())
    t = {n: torch.from_numpy(np.asarray(x[n], np.float64)).requires_grad_()
         for n in names}
    group = cfg.hq // cfg.hkv
    k = t["key"].repeat_interleave(group, 1)
    v = t["value"].repeat_interleave(group, 1)
    scale = cfg.scale if cfg.scale is not None else cfg.d ** -0.5
    s = t["query"] @ k.transpose(-1, -2) * scale
    if cfg.causal:
        mask = torch.from_numpy(reference.causal_mask(cfg.sq, cfg.skv))
        s = s.masked_fill(~mask, float("-inf"))
    y = torch.nan_to_num(torch.softmax(s, -1), nan=0.0) @ v
    if cfg.gate != "none":
        g = t["gate"]
        a = {"sigmoid": torch.sigmoid(g), "silu": g * torch.sigmoid(g),
             "ns_sigmoid": 0.5 + 0.5 * torch.sigmoid(g)}[cfg.gate]
        y = y * a if cfg.combine == "mul" else y + a
    grads = torch.autograd.grad(y, [t[n] for n in names],
                                torch.from_numpy(dout))
    return {n: gr.numpy() for n, gr in zip(names, grads)}


# The hand reference is right (every gate, combine and layout, GQA, causal
# with empty rows).
for gate, combine, heads, width in itertools.product(
        ("sigmoid", "silu", "ns_sigmoid"), ("mul", "add"),
        ("per_head", "shared"), ("elementwise", "headwise")):
    cfg = config.AttentionConfig(b=2, hq=4, hkv=2, sq=7, skv=5, d=8, dv=6,
                                 gate=gate, combine=combine, causal=True,
                                 gate_heads=heads, gate_width=width)
    x, dout, _ = inputs_of(cfg, 3)
    mine = accuracy_backward.reference_backward(cfg, x, dout)
    theirs = torch_reference(cfg, x, dout)
    for n in theirs:
        assert np.allclose(mine[n], theirs[n], rtol=1e-12, atol=1e-12), (
            cfg.describe(), n)
print("PASS reference_backward == torch float64 autograd (24 gate layouts)")

# The matrix: every value of each axis appears, combined at random.
rng = np.random.default_rng(2025)
GATES = ("sigmoid", "silu", "ns_sigmoid", "none")
DTYPES = ("f32", "f16", "bf16")
cases = []
for i in range(12):
    group = (1, 2, 8)[i % 3]
    hkv = int(rng.choice((1, 2)))
    d = (64, 128, 256)[(i // 3) % 3]
    gate = GATES[i % 4]
    cases.append(config.AttentionConfig(
        b=2, hq=hkv * group, hkv=hkv, sq=17, skv=40, d=d,
        dv=int(rng.choice((d, 32))), gate=gate,
        combine="mul" if gate == "none" else str(rng.choice(("mul", "add"))),
        causal=bool(i % 2), gate_heads=str(rng.choice(("per_head",
                                                       "shared"))),
        gate_width=str(rng.choice(("elementwise", "headwise"))),
        dtype=DTYPES[i % 3]))
# dK and dV of one shape in f32 (D = Dv, GQA 1): their accumulators were
# once one shared tensor, which bufferization miscompiled into dV.
cases.append(config.AttentionConfig(b=2, hq=2, hkv=2, sq=17, skv=40, d=64,
                                    dv=64, gate="silu", combine="add",
                                    causal=True, gate_heads="shared",
                                    gate_width="headwise"))

worst = 0.0
for n, base in enumerate(cases):
    # One compile per case (B, Sq, Skv are run-time sizes): Sq < Skv,
    # Sq > Skv (causal: rows that see no key), Skv = 0, and 2 query blocks
    # by 3 key blocks, both ragged (causal: blocks above the diagonal
    # skipped, blocks across it masked), and 6 key blocks over at most 4
    # splits of the key blocks (a split with two blocks, one ragged).
    for sq, skv in ((17, 40), (33, 9), (5, 0), (70, 150), (40, 330)):
        cfg = config.AttentionConfig(**{
            **{f: getattr(base, f) for f in base.__dataclass_fields__},
            "sq": sq, "skv": skv})
        x, dout, out = inputs_of(cfg, 100 + n)
        # Recomputing L, and reading the forward's (the training path).
        lse = reference.log_sum_exp(x["query"], x["key"], cfg.scale,
                                    cfg.causal)
        for given in (None, lse):
            got = run(cfg, x, dout, out, given)
            # (bf16 on AVX512-BF16: the products' operands rounded.)
            result = accuracy_backward.compare_backward(
                cfg, got, x, dout, **accuracy_backward.cpu_model(cfg))
            for name, r in result.items():
                assert r.ok, (cfg.describe(), given is not None, name, r)
                worst = max(worst, r.ratio)
            print(f"PASS {cfg.describe()}{' lse' if given is not None else ''} "
                  + " ".join(f"d{name[0]}:{r.ratio:.2g}"
                             for name, r in result.items()))
print(f"worst err/bound {worst:.3g}")

# The reference lowering (--gated-attention-to-llvm=reference=1, the tiled
# one's oracle) within the same bound, on a few of the matrix's cases.
# (kernel_for's key is (config, lse): run() without L calls the kernel
# registered at (config, False); once keyed by the config alone, this ran
# the tiled kernel.)
for n, base in enumerate(cases[:3]):
    key = (_args.compile_key(base), False)
    _backward._kernels[key] = _backward.CpuBackwardKernel(
        key[0], pipeline=("--gated-attention-to-llvm=reference=1",))
    try:
        cfg = config.AttentionConfig(**{
            **{f: getattr(base, f) for f in base.__dataclass_fields__},
            "sq": 70, "skv": 150})
        x, dout, out = inputs_of(cfg, 100 + n)
        result = accuracy_backward.compare_backward(cfg, run(cfg, x, dout, out),
                                                    x, dout)
        assert all(r.ok for r in result.values()), (cfg.describe(), result)
        assert _backward.kernel_for(base) is _backward._kernels[key]
    finally:
        del _backward._kernels[key]
print("PASS the reference lowering on 3 cases")

# The bound can fail: one element off by 5 bounds, and the sigmoid
# derivative where the gate is SiLU.
cfg = config.AttentionConfig(b=2, hq=4, hkv=2, sq=17, skv=40, d=64, dv=32,
                             gate="silu", causal=True, dtype="bf16")
x, dout, out = inputs_of(cfg, 7)
got = run(cfg, x, dout, out)
model = accuracy_backward.cpu_model(cfg)
bounds = accuracy_backward.backward_error_bound(cfg, x, dout, **model)
assert all(r.ok for r in accuracy_backward.compare_backward(
    cfg, got, x, dout, **model).values())
for name in got:
    bad = dict(got)
    bad[name] = got[name].copy()
    bad[name][0, 0, 3, 1] += 5 * bounds[name][0, 0, 3, 1]
    r = accuracy_backward.compare_backward(cfg, bad, x, dout, **model)[name]
    assert not r.ok, (name, r)
wrong = config.AttentionConfig(**{
    **{f: getattr(cfg, f) for f in cfg.__dataclass_fields__},
    "gate": "sigmoid"})
r = accuracy_backward.compare_backward(wrong, got, x, dout, **model)["gate"]
assert not r.ok, r
print("PASS the bound rejects a perturbed element and a wrong derivative")
