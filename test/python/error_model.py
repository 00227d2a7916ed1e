# RUN: %PYTHON %s
"""The error model every comparison with the reference uses
(accuracy.error_bound): the emulated tensor-core kernel passes on the
Qwen3-Next shape with a SiLU gate (P rounded to bf16 before P.V, amplified
by the unbounded gate: one element was 8% over the old fixed tolerance),
and the bound still catches real bugs: one element off by 5 bounds, a
scale off by 1%, a causal mask off by one key, the wrong activation, a
dropped key, P rounded twice over."""

import dataclasses

import numpy as np

from gated_attention import accuracy, config, dtypes, reference
from gated_attention.testing import emulate

cases = config.parse_cases(
    "hq=16,hkv=2,d=256,dv=256,sq=80,skv=80,causal=1,dtype=bf16,gate=silu")
cases += config.parse_cases(
    "hq=4,hkv=2,d=64,dv=64,sq=70,skv=90,causal=1,dtype=f16,gate=silu,"
    "combine=mul|add")
for cfg in cases:
    # Seed 1: the inputs on which the bf16 case was 8% over the old fixed
    # tolerance (8e-3 + 8e-3 |ref|).
    seed = 1
    out, ref, kernel = emulate.run_case(cfg, seed)
    x = cfg.inputs(seed)
    good = accuracy.compare(cfg, out, ref, x)
    assert good.ok, (cfg.describe(), good)
    fixed = accuracy.compare(cfg, out, ref)
    print(f"PASS {kernel} {cfg.describe()} {accuracy.describe(good)} "
          f"(fixed tolerance: {accuracy.describe(fixed)})")
    bound = accuracy.error_bound(cfg, x)
    assert bound.shape == ref.shape and np.all(bound > 0)

    def rejects(bad, what):
        result = accuracy.compare(cfg, bad, ref, x)
        assert not result.ok, (what, result)
        print(f"  FAIL as it must: {what} {accuracy.describe(result)}")

    # One element off by 5 bounds; half a bound on a clean element passes.
    i = np.unravel_index(np.argmax(bound), bound.shape)
    bumped = out.copy()
    bumped[i] = ref[i] + 5 * bound[i]
    rejects(bumped, "one element off by 5 bounds")
    j = np.unravel_index(np.argmin(np.abs(out - ref) / bound), bound.shape)
    nudged = out.copy()
    nudged[j] = ref[j] + 0.5 * bound[j]
    assert accuracy.compare(cfg, nudged, ref, x).ok

    # Kernels with a bug, computed exactly and rounded to the element type.
    def kernel_with(**changes):
        c = dataclasses.replace(cfg, **changes)
        return dtypes.round_to(c.reference(x), cfg.dtype)

    s = 1 / np.sqrt(cfg.d)
    rejects(kernel_with(scale=s * 1.01), "scale off by 1%")
    rejects(kernel_with(gate="sigmoid"), "sigmoid instead of SiLU")
    # Causal, one key too many: query i also sees key i + Skv - Sq + 1.
    def with_mask(mask):
        kr = np.repeat(x["key"], cfg.hq // cfg.hkv, axis=1)
        vr = np.repeat(x["value"], cfg.hq // cfg.hkv, axis=1)
        sc = np.einsum("bhid,bhjd->bhij", x["query"], kr) / np.sqrt(cfg.d)
        sc = np.where(mask, sc, -np.inf)
        p = np.exp(sc - sc.max(axis=-1, keepdims=True))
        y = np.einsum("bhij,bhje->bhie", p / p.sum(-1, keepdims=True), vr)
        act = reference.activation(x["gate"], cfg.gate)
        return dtypes.round_to(y * act if cfg.combine == "mul" else y + act,
                               cfg.dtype)
    i_, j_ = np.arange(cfg.sq)[:, None], np.arange(cfg.skv)[None, :]
    assert accuracy.compare(cfg, with_mask(j_ <= i_ + cfg.skv - cfg.sq), ref,
                            x).ok
    rejects(with_mask(j_ <= i_ + cfg.skv - cfg.sq + 1),
            "causal mask one key off")
    dropped = dict(x, key=x["key"][:, :, :-1], value=x["value"][:, :, :-1])
    rejects(dtypes.round_to(dataclasses.replace(
        cfg, skv=cfg.skv - 1).reference(dropped), cfg.dtype),
        "last key dropped")
    # Every weight too big by 2^-6 (the row sum from the wrong terms):
    w, _, _ = reference.attention_weights(x["query"], x["key"], cfg.scale,
                                          cfg.causal)
    vr = np.repeat(x["value"], cfg.hq // cfg.hkv, axis=1)
    y = np.einsum("bhij,bhje->bhie", w * (1 + 2 ** -6), vr)
    act = reference.activation(x["gate"], cfg.gate)
    biased = y * act if cfg.combine == "mul" else y + act
    rejects(dtypes.round_to(biased, cfg.dtype), "every weight 2^-6 too big")

# The model's terms: the P rounding term scales with the gate (|act(g)|),
# the output term with |result|; without a gate neither is amplified.
cfg = config.AttentionConfig(hq=2, hkv=1, sq=4, skv=4, d=16, dv=16,
                             dtype="bf16", gate="silu")
x = cfg.inputs(1)
b1 = accuracy.error_bound(cfg, x)
x10 = dict(x, gate=x["gate"] + 10.0)
ratio = accuracy.error_bound(cfg, x10) / b1
assert np.all(ratio > 2) and np.median(ratio) > 10, ratio
u = dtypes.UNIT_ROUNDOFF["bf16"]
nogate = dataclasses.replace(cfg, gate="none")
bn = accuracy.error_bound(nogate, x)
assert np.all(bn >= u * np.abs(nogate.reference(x)))
assert np.all(bn <= 3 * u * np.max(np.abs(x["value"])) + 1e-30)
print("PASS the bound scales with |act(g)| and |V|")
