# REQUIRES: torch
# RUN: %PYTHON %s
"""gat.attention's direct path (_op.direct): a call whose signature the op
has checked before, in eager code that records no autograd, runs the op's
kernel without torch's dispatcher. It must give the op's result bit for
bit, and step aside wherever something would see the op (modes, the
profiler, vmap, forward-mode AD, torch.compile, torch.jit.trace) or the
dispatcher would convert an argument (options of other types, tensor
subclasses)."""

import os
import warnings

import torch
import torch.autograd.forward_ad as fwAD

import gated_attention.torch as gat
from gated_attention.testing.observers import PathSpy, Recorder, graph_recorder
from gated_attention.torch import _op

SEED = int(os.environ.get("GATED_ATTENTION_TEST_SEED", "5"))
gen = torch.Generator().manual_seed(SEED)

spy = PathSpy(_op, "direct")
taken = spy.taken


def call(*args, direct, **kw):
    """gat.attention(*args, **kw), asserting whether it ran directly."""
    return spy.call(gat.attention, *args, direct=direct, **kw)


def op(*args, **kw):
    return torch.ops.gated_attention.attention(*args, **kw)


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=gen).to(dtype)


# 1. The op's result, bit for bit, once the signature has been seen: both
#    layouts, with and without a gate, grouped queries, two dtypes, a key
#    tensor whose rows are strided (read in place) or whose last dim is
#    (copied first), and a decode step.
b, hq, hkv, sq, skv, d = 2, 4, 2, 5, 9, 32
for dtype in (torch.float32, torch.bfloat16):
    for layout in ("bhsd", "bshd"):
        def shape(h, s):
            return (b, h, s, d) if layout == "bhsd" else (b, s, h, d)
        q, g = randn(*shape(hq, sq), dtype=dtype), randn(*shape(hq, sq),
                                                          dtype=dtype)
        k, v = randn(*shape(hkv, skv), dtype=dtype), randn(*shape(hkv, skv),
                                                            dtype=dtype)
        for gate in (g, None):
            kw = dict(causal=True, layout=layout)
            first = call(q, k, v, gate, direct=False, **kw)
            again = call(q, k, v, gate, direct=True, **kw)
            assert torch.equal(first, again) and again.dtype == dtype
            assert torch.equal(again, op(q, k, v, gate, **kw))
            assert again.shape == q.shape and again.is_contiguous()
        strided = randn(*shape(hkv, 2 * skv), dtype=dtype)[
            (slice(None), slice(None, None, 2)) if layout == "bshd" else
            (slice(None), slice(None), slice(None, None, 2))]
        assert strided.shape == k.shape and not strided.is_contiguous()
        kw = dict(causal=True, layout=layout)
        assert torch.equal(call(q, strided, v, g, direct=True, **kw),
                           op(q, strided.contiguous(), v, g, **kw))
        last = randn(*k.shape[:-1], 2 * d, dtype=dtype)[..., ::2]
        assert torch.equal(call(q, k, last, g, direct=True, **kw),
                           op(q, k, last.contiguous(), g, **kw))
q1, k1 = randn(1, 16, 1, 64), randn(1, 2, 300, 64)
call(q1, k1, k1, q1, causal=True, direct=False)
assert torch.equal(call(q1, k1, k1, q1, causal=True, direct=True),
                   op(q1, k1, k1, q1, causal=True))
print("PASS the direct path gives the op's result bit for bit")

q, k, v, g = randn(1, 4, 6, 32), randn(1, 2, 6, 32), randn(1, 2, 6, 32), \
    randn(1, 4, 6, 32)
ref = call(q, k, v, g, causal=True, direct=False)

# 2. Autograd: an input that requires grad goes through autograd (the
#    training path) unless grad mode is off; the result never requires
#    grad without it.
qg = q.clone().requires_grad_()
y = call(qg, k, v, g, causal=True, direct=False)
assert y.requires_grad and y.grad_fn is not None
with torch.no_grad():
    y = call(qg, k, v, g, causal=True, direct=True)
assert not y.requires_grad and torch.equal(y, ref)
with torch.inference_mode():
    y = call(q, k, v, g, causal=True, direct=True)
    assert y.is_inference() and torch.equal(y, ref)
print("PASS autograd and inference mode")


# 3. What would see the op: a dispatch mode, a function mode (torch.device
#    as a context manager is one), the profiler; each gets the op.
with Recorder() as rec:
    y = call(q, k, v, g, causal=True, direct=False)
assert "gated_attention.attention.default" in rec.ops, rec.ops
assert torch.equal(y, ref)
with torch.device("cpu"):
    assert torch.equal(call(q, k, v, g, causal=True, direct=False), ref)
with torch.profiler.profile() as prof:
    call(q, k, v, g, causal=True, direct=False)
names = [e.key for e in prof.key_averages()]
assert any("gated_attention::attention" in n for n in names), names
print("PASS dispatch and function modes and the profiler see the op")

# 4. Transforms: vmap (the op's batching fallback) and forward-mode AD.
qs = randn(3, 1, 4, 6, 32)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")   # vmap's fallback warns
    taken.clear()
    ys = torch.vmap(lambda x: gat.attention(x, k, v, g, causal=True))(qs)
assert taken == [False], taken
for i in range(3):
    assert torch.equal(ys[i], op(qs[i], k, v, g, causal=True))
with fwAD.dual_level():
    dual = fwAD.make_dual(q, torch.ones_like(q))
    call(dual, k, v, g, causal=True, direct=False)
print("PASS vmap and forward-mode AD go through the op")

# 5. What the dispatcher converts goes through it: options of other types
#    than the schema's, tensor subclasses.
assert torch.equal(call(q, k, v, g, causal=1, direct=False), ref)
scaled = call(q, k, v, g, causal=True, scale=0.25, direct=False)
assert torch.equal(call(q, k, v, g, causal=True, scale=1 / 4, direct=True),
                   scaled)
assert torch.equal(call(q, k, v, g, causal=True, scale=0.25, direct=True),
                   scaled)
param = torch.nn.Parameter(q.clone(), requires_grad=False)
assert torch.equal(call(param, k, v, g, causal=True, direct=False), ref)
print("PASS options of other types and subclasses go through the op")

# 6. A signature the op has not checked goes through it, and what its
#    checks refuse stays refused after a good call of nearly the same
#    arguments.
for args, kw, error, words in (
        ((q, k.half(), v, g), {}, ValueError, "one dtype"),
        ((q, k, v, randn(1, 3, 6, 32)), {}, ValueError, "does not fit"),
        ((q, k, v, g), dict(gate="tanh2"), ValueError, "gate"),
        ((q, k, v, g), dict(layout="hsbd"), ValueError, "layout")):
    taken.clear()
    try:
        gat.attention(*args, causal=True, **kw)
        raise AssertionError(f"no error: {words}")
    except error as e:
        assert words in str(e), e
    assert taken == [False], taken
print("PASS unchecked signatures go through the op")


# 7. torch.compile traces the op, not the direct path: the signature has
#    been seen, yet the graph holds the op.
backend, graphs = graph_recorder()


@torch.compile(backend=backend, fullgraph=True)
def compiled(q, k, v, g):
    return gat.attention(q, k, v, g, causal=True)


assert torch.equal(compiled(q, k, v, g), ref)
assert len(graphs) == 1 and any("gated_attention.attention" in t
                                for t in graphs[0]), graphs
print("PASS torch.compile traces the op")


# 8. torch.jit.trace records the op (a kernel run directly would have been
#    recorded as its output's allocation: the trace would return garbage
#    on other inputs).
def traced_fn(q, k):
    return gat.attention(q, k, k, causal=True)


with warnings.catch_warnings():
    warnings.simplefilter("ignore")   # torch.jit is deprecated
    taken.clear()
    traced = torch.jit.trace(traced_fn, (q, k), check_trace=False)
assert taken == [False], taken
assert "gated_attention::attention" in str(traced.graph), traced.graph
q2, k2 = randn(*q.shape), randn(*k.shape)
assert torch.equal(traced(q2, k2), op(q2, k2, k2, causal=True))
print("PASS torch.jit.trace records the op")
