# REQUIRES: torch
# RUN: %PYTHON %s
"""torch.ops.gated_attention.attention on CPU tensors: numerics against
float64 F.scaled_dot_product_attention(...) * act(g) over the option matrix
(each option value in several configurations; GATED_ATTENTION_TEST_SEED
picks other ones), both layouts, strided q | gate halves of one projection
read in place, dtypes kept, bad arguments (tensors of other kinds: sparse,
mkldnn, nested, quantized, in the eager and the fake kernel too), and that
the backward runs (its numerics: torch_backward.py)."""

import math
import os
import warnings

import numpy as np
import torch
import torch.nn.functional as F

import gated_attention.torch as gat
from gated_attention import accuracy, reference
from gated_attention.torch import _args, _cpu

SEED = int(os.environ.get("GATED_ATTENTION_TEST_SEED", "13"))
rng = np.random.default_rng(SEED)
torch.manual_seed(SEED)
TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
ACT = {"sigmoid": torch.sigmoid, "silu": F.silu,
       "ns_sigmoid": lambda g: 0.5 + 0.5 * torch.sigmoid(g)}


def sdpa_reference(q, k, v, g, causal, scale, gate, combine):
    """float64 SDPA (bottom-right causal mask) combined with act(g); bhsd."""
    q, k, v = (x.double() for x in (q, k, v))
    sq, skv = q.shape[2], k.shape[2]
    mask = None
    if causal:
        mask = torch.ones(sq, skv, dtype=torch.bool).tril(diagonal=skv - sq)
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale,
                                       enable_gqa=True)
    # SDPA's row that sees no key is NaN (0/0); the op defines it as 0.
    if mask is not None:
        y = torch.where(mask.any(-1)[:, None], y, torch.zeros_like(y))
    if g is None:
        return y
    a = ACT[gate](g.double())
    return y * a if combine == "mul" else y + a


def check(cfg_name, out, ref, q, k, v, g, cfg):
    inputs = {"query": q, "key": k, "value": v, "gate": g}
    inputs = {n: None if x is None else x.double().numpy()
              for n, x in inputs.items()}
    result = accuracy.compare(cfg, out.double().numpy(), ref.numpy(), inputs)
    assert result.ok, (cfg_name, accuracy.describe(result), result.worst)
    return result.ratio


def make(shape, dtype, layout):
    """A random tensor of bhsd `shape` in `layout` (its own memory order)."""
    b, h, s, d = shape
    if layout == "bhsd":
        return torch.randn(b, h, s, d).to(TORCH[dtype])
    return torch.randn(b, s, h, d).to(TORCH[dtype])


# 1. The option matrix: every value of every option appears in several
# configurations; the rest are drawn.
OPTIONS = {"dtype": ["f32", "f16", "bf16"], "causal": [False, True],
           "gate": ["sigmoid", "silu", "ns_sigmoid", "none"],
           "combine": ["mul", "add"], "gate_heads": ["per_head", "shared"],
           "gate_width": ["elementwise", "headwise"],
           "layout": ["bhsd", "bshd"], "group": [1, 2, 4]}
CASES = 16
worst = 0.0
for i in range(CASES):
    opt = {name: values[(i + rng.integers(len(values))) % len(values)]
           for name, values in OPTIONS.items()}
    if opt["gate"] == "none":
        opt["combine"] = "mul"
    hkv = int(rng.integers(1, 3))
    hq = hkv * int(opt["group"])
    b, sq, skv = int(rng.integers(1, 3)), int(rng.integers(1, 90)), \
        int(rng.integers(1, 90))
    d, dv = int(rng.choice([16, 32, 64])), int(rng.choice([16, 32]))
    scale = None if rng.integers(2) else float(rng.uniform(0.05, 0.4))
    dtype, layout = opt["dtype"], opt["layout"]
    q = make((b, hq, sq, d), dtype, layout)
    k = make((b, hkv, skv, d), dtype, layout)
    v = make((b, hkv, skv, dv), dtype, layout)
    g = None
    if opt["gate"] != "none":
        hg = hq if opt["gate_heads"] == "per_head" else 1
        dg = dv if opt["gate_width"] == "elementwise" else 1
        g = make((b, hg, sq, dg), dtype, layout) * 2
    kwargs = dict(causal=bool(opt["causal"]), scale=scale,
                  gate="sigmoid" if g is None else opt["gate"],
                  combine=opt["combine"])
    out = gat.attention(q, k, v, g, layout=layout, **kwargs)
    assert out.dtype == q.dtype and out.device == q.device, out.dtype
    assert out.shape == (*q.shape[:3], dv), (out.shape, q.shape)
    views = [None if x is None else _args.as_bhsd(x, layout)
             for x in (q, k, v, g)]
    cfg = _args.check(*views, kwargs["causal"], scale, kwargs["gate"],
                      kwargs["combine"], "bhsd")
    ref = sdpa_reference(*views, kwargs["causal"], scale, kwargs["gate"],
                         kwargs["combine"])
    name = f"case {i}: {cfg.describe()} layout={layout}"
    ratio = check(name, _args.as_bhsd(out, layout), ref, *views, cfg)
    print(f"{name}: err/bound {ratio:.3g}")
    worst = max(worst, ratio)
    # The op called directly, as compiled graphs call it: the same result.
    again = torch.ops.gated_attention.attention(q, k, v, g, layout=layout,
                                                **kwargs)
    assert torch.equal(again, out), name
print(f"option matrix: {CASES} cases, worst err/bound {worst:.3g}")

# 2. Qwen3-Next's q_proj output holds [q | gate] per head: q and the gate
# are strided halves of one tensor, read where they are.
B, S, HQ, HKV, D = 2, 37, 4, 2, 64
proj = torch.randn(B, S, HQ * 2 * D).to(torch.bfloat16)
halves = proj.view(B, S, HQ, 2 * D)
q, gate = halves[..., :D], halves[..., D:]
assert not q.is_contiguous() and q.data_ptr() == proj.data_ptr()
k = torch.randn(B, S, HKV, D).to(torch.bfloat16)
v = torch.randn(B, S, HKV, D).to(torch.bfloat16)
seen = []
real_descriptor = _cpu._descriptor
_cpu._descriptor = lambda x: (seen.append(x.data_ptr()),
                              real_descriptor(x))[1]
try:
    out = gat.attention(q, k, v, gate, causal=True, layout="bshd")
finally:
    _cpu._descriptor = real_descriptor
assert seen[:4] == [q.data_ptr(), k.data_ptr(), v.data_ptr(),
                    gate.data_ptr()], "inputs were copied"
assert seen[4] == out.data_ptr() and out.is_contiguous(), \
    "the result was not computed in the output tensor"
assert out.shape == (B, S, HQ, D) and out.dtype == torch.bfloat16
views = [x.transpose(1, 2) for x in (q, k, v, gate)]
cfg = _args.check(*views, True, None, "sigmoid", "mul", "bhsd")
check("q|gate halves", out.transpose(1, 2),
      sdpa_reference(*views, True, None, "sigmoid", "mul"), *views, cfg)
# The same on contiguous copies: bit-identical (strides change no math).
same = gat.attention(q.contiguous(), k, v, gate.contiguous(), causal=True,
                     layout="bshd")
assert torch.equal(same, out)
# An innermost dim with a stride is copied first, and still right.
wide = torch.randn(B, S, HQ, D, 2).to(torch.bfloat16)
odd = wide[..., 0]
assert odd.stride(-1) == 2
assert torch.equal(gat.attention(odd, k, v, gate, causal=True,
                                 layout="bshd"),
                   gat.attention(odd.contiguous(), k, v, gate, causal=True,
                                 layout="bshd"))

# 3. Decode: Sq = 1 sees every key (bottom-right causal), unlike SDPA's
# is_causal (top-left: key 0 only).
q1 = torch.randn(1, 4, 1, 32)
k1, v1 = torch.randn(1, 2, 9, 32), torch.randn(1, 2, 9, 32)
dec = gat.attention(q1, k1, v1, causal=True)
full = gat.attention(q1, k1, v1, causal=False)
assert torch.equal(dec, full)
topleft = F.scaled_dot_product_attention(q1, k1, v1, is_causal=True,
                                         enable_gqa=True)
assert not torch.allclose(dec, topleft)

# 4. Empty batch and sequences; no keys (rows are 0, then the gate).
for shape_q, shape_kv in (((0, 4, 5, 32), (0, 2, 5, 32)),
                          ((1, 4, 0, 32), (1, 2, 5, 32))):
    e = gat.attention(torch.randn(shape_q), torch.randn(shape_kv),
                      torch.randn(shape_kv))
    assert e.shape == shape_q, e.shape
qz, gz = torch.randn(1, 4, 3, 32), torch.randn(1, 4, 3, 32)
kz = torch.randn(1, 2, 0, 32)
assert torch.equal(gat.attention(qz, kz, kz), torch.zeros(1, 4, 3, 32))
assert torch.allclose(gat.attention(qz, kz, kz, gz, combine="add"),
                      torch.sigmoid(gz))


# 5. Bad arguments: clear errors naming them, nothing run.
def fails(kind, fragment, *args, **kwargs):
    try:
        gat.attention(*args, **kwargs)
    except kind as e:
        assert fragment in str(e), (fragment, str(e))
        return
    raise AssertionError(f"no {kind.__name__} for {fragment!r}")


q, k, v = torch.randn(1, 4, 8, 32), torch.randn(1, 2, 8, 32), \
    torch.randn(1, 2, 8, 32)
fails(ValueError, "layout", q, k, v, layout="sbhd")
# bhsd tensors passed as bshd: heads and lengths swap, shapes stop fitting.
fails(ValueError, "layout='bshd'", q, k, torch.randn(1, 2, 9, 32),
      layout="bshd")
fails(ValueError, "layout='bhsd'", q, torch.randn(1, 8, 2, 32),
      torch.randn(1, 8, 2, 32))
fails(ValueError, "one dtype", q, k.half(), v)
fails(ValueError, "float32, float16, bfloat16 or float64 (CPU)",
      q.to(torch.int32), k.to(torch.int32), v.to(torch.int32))
fails(ValueError, "4-D", q[0], k, v)
fails(TypeError, "must be a tensor", q.numpy(), k, v)
fails(ValueError, "unknown gate", q, k, v, torch.randn(1, 4, 8, 32),
      gate="tanh")
fails(ValueError, "without a gate array", q, k, v, combine="add")
fails(ValueError, "scale must be positive", q, k, v, scale=-1.0)
fails(ValueError, "does not fit", q, k, v, torch.randn(1, 3, 8, 32))
fails(ValueError, "not a multiple", torch.randn(1, 3, 8, 32), k, v)
# Tensors of kinds the kernels do not read, as any argument: named, through
# the wrapper and the op itself (nested tensors: the wrapper; torch's
# dispatcher refuses them before the op).
gd = torch.randn(1, 4, 8, 32)
warnings.simplefilter("ignore", UserWarning)   # (beta, deprecated kinds)
kinds = {"sparse_coo": (lambda x: x.to_sparse(), "torch.sparse_coo"),
         "sparse_csr": (lambda x: x[0, 0].to_sparse_csr(), "sparse_csr"),
         "mkldnn": (lambda x: x.to_mkldnn(), "mkldnn"),
         "quantized": (lambda x: torch.quantize_per_tensor(
             x, 0.1, 0, torch.qint8), "quantized"),
         "nested": (lambda x: torch.nested.nested_tensor(list(x[0])),
                    "nested")}
for n, name in enumerate("qkvg"):
    for kind, (make, words) in kinds.items():
        args = [q, k, v, gd]
        args[n] = make(args[n])
        fails(ValueError, f"{name} is a", *args)
        fails(ValueError, words, *args)
        if kind != "nested":
            try:
                torch.ops.gated_attention.attention(*args)
                raise AssertionError(f"op took a {kind} {name}")
            except ValueError as e:
                assert f"{name} is a" in str(e), e
# The fake kernel (tracing, torch.compile) refuses them too.
with torch._subclasses.fake_tensor.FakeTensorMode():
    try:
        torch.ops.gated_attention.attention(
            torch.randn(1, 4, 8, 32).to_sparse(), torch.randn(1, 2, 8, 32),
            torch.randn(1, 2, 8, 32))
        raise AssertionError("the fake kernel took a sparse q")
    except ValueError as e:
        assert "q is a torch.sparse_coo tensor" in str(e), e

# The op's signature cache (a known signature skips _args.check): one
# entry per signature, none for an empty result, and what the checks
# refuse stays refused after a good call of nearly the same arguments.
from gated_attention.torch import _op  # noqa: E402

q5, k5 = torch.randn(1, 4, 7, 32), torch.randn(1, 2, 7, 32)
before = len(_op._calls)
first = gat.attention(q5, k5, k5, causal=True)
assert len(_op._calls) == before + 1
assert torch.equal(gat.attention(q5, k5, k5, causal=True), first)
assert len(_op._calls) == before + 1
gat.attention(torch.randn(0, 4, 7, 32), torch.randn(0, 2, 7, 32),
              torch.randn(0, 2, 7, 32))
assert len(_op._calls) == before + 1
fails(ValueError, "one dtype", q5, k5.half(), k5, causal=True)
fails(ValueError, "does not fit", q5, k5, k5, torch.randn(1, 3, 7, 32),
      causal=True)
assert len(_op._calls) == before + 1

# 6. The backward runs on the CPU (its numerics: torch_backward.py).
qg = q.clone().requires_grad_()
y = gat.attention(qg, k, v)
assert y.requires_grad
y.sum().backward()
assert qg.grad is not None and qg.grad.shape == qg.shape

print("torch op: ok")
