# RUN: %PYTHON %s
"""gated_attention.attention_backward, the numpy entry point of the
backward: its gradients against the float64 reference gradients
(accuracy_backward.reference_backward) within the backward's error model,
for f32 / f16 / bf16, GQA, causal with Sq > Skv (rows that see no key),
shared headwise and per-head elementwise gates, mul and add, no gate and
Skv = 0; `out` given or computed; the bound rejects a wrong gradient; bad
arguments are ValueErrors naming them, device="cuda" a
NotImplementedError. Needs numpy only (and ml_dtypes for bf16)."""

import numpy as np

import gated_attention as ga
from gated_attention import accuracy, accuracy_backward, config, dtypes

NAMES = ("query", "key", "value", "gate")


def check(cfg, seed, give_out):
    x = cfg.inputs(seed)
    rng = np.random.default_rng(seed + 1)
    dout = dtypes.round_to(rng.standard_normal(cfg.shapes()["result"]),
                           cfg.dtype)
    gated = cfg.gate != "none"
    args = [x[n] for n in NAMES[:3]]
    kw = dict(causal=cfg.causal, combine=cfg.combine, dtype=cfg.dtype,
              gate=cfg.gate if gated else None)
    g = x["gate"] if gated else None
    out = ga.attention(*args, g, **kw)
    grads = ga.attention_backward(*args, dout, g, out=out if give_out
                                  else None, **kw)
    assert len(grads) == (4 if gated else 3), len(grads)
    for name, grad in zip(NAMES, grads):
        assert grad.shape == x[name].shape and \
            grad.dtype == dtypes.numpy_dtype(cfg.dtype), (name, grad.dtype)
    got = {n: np.asarray(gr, np.float64) for n, gr in zip(NAMES, grads)}
    # The saved output is the forward kernel's: its error bound, twice
    # (the tiled path's key-block sums stay within twice the plain bound).
    result = accuracy_backward.compare_backward(
        cfg, got, x, dout, out_error=2 * accuracy.error_bound(cfg, x),
        **accuracy_backward.cpu_model(cfg))
    for name, r in result.items():
        assert r.ok, (cfg.describe(), name, r)
    return got, x, dout


cases = [
    config.AttentionConfig(b=2, hq=4, hkv=2, sq=9, skv=13, d=32, dv=16,
                           causal=True),
    config.AttentionConfig(b=1, hq=2, hkv=2, sq=5, skv=7, d=16, dv=8,
                           gate="ns_sigmoid", dtype="f16"),
    config.AttentionConfig(b=1, hq=2, hkv=1, sq=4, skv=4, d=16, dv=16,
                           gate="none", causal=True),
    config.AttentionConfig(b=1, hq=2, hkv=1, sq=3, skv=0, d=16, dv=16),
    config.AttentionConfig(b=1, hq=8, hkv=1, sq=11, skv=6, d=16, dv=16,
                           gate="silu", combine="add", causal=True,
                           gate_heads="shared", gate_width="headwise",
                           dtype="bf16"),
]
for i, cfg in enumerate(cases):
    check(cfg, 10 + i, give_out=i % 2 == 0)
    print(f"PASS {cfg.describe()}")

# The check can fail: dQ off by a small relative error is outside the
# bound.
cfg = cases[0]
got, x, dout = check(cfg, 10, give_out=True)
got["query"] = got["query"] * (1 + 1e-3)
r = accuracy_backward.compare_backward(
    cfg, got, x, dout, out_error=2 * accuracy.error_bound(cfg, x))["query"]
assert not r.ok, r
print("PASS a perturbed dq is rejected")

# Bad arguments.
q = np.zeros((1, 2, 3, 16))
k = np.zeros((1, 1, 4, 16))
for kwargs, args, kind, words in (
        ({}, (q, k, k, np.zeros((1, 2, 3, 8))), ValueError, "dout"),
        ({"out": np.zeros((1, 2, 4, 16))}, (q, k, k, np.zeros((1, 2, 3, 16))),
         ValueError, "out"),
        ({"device": "tpu"}, (q, k, k, np.zeros((1, 2, 3, 16))), ValueError,
         "device"),
        ({"device": "cuda"}, (q, k, k, np.zeros((1, 2, 3, 16))),
         NotImplementedError, "CPU only"),
        ({"dtype": "f8"}, (q, k, k, np.zeros((1, 2, 3, 16))), ValueError,
         "dtype")):
    try:
        ga.attention_backward(*args, **kwargs)
        raise AssertionError(f"no error for {kwargs}")
    except kind as e:
        assert words in str(e), (kwargs, e)
print("PASS bad arguments")
