# RUN: %PYTHON %s
# Split-KV for a dense decode step (gated_attention.attention with Sq = 1 on
# the tensor cores): the dense-split kernel takes 1/splits of each (batch,
# head) tile's keys and writes f32 partials and their log-sum-exp, the merge
# kernel combines them and applies the gate once. On the emulator, against
# the float64 reference within the error model's bound
# (gated_attention.accuracy), over f16 and bf16, D 64/128/256, GQA and MQA,
# causal or not, every gate, combine and gate layout, no gate, B > 1, and
# more splits than key blocks (empty parts: -inf LSE, weight 0). Partials
# start as NaN, so a row the split kernel leaves unwritten fails. K and V
# stored [B, S, H, D] (the torch op's bshd layout, whose decode steps run
# split-KV too) take kernels compiled for their rows. A CTA of the split
# kernel packs the query rows of the G heads of one K/V head (G = 1, 2, 4,
# 8 below), reading them a run-time head stride apart: Q's rows 2 x D
# apart ("qpad", NaN between them) check that stride; so does the direct
# kernel (strided.py has its strided decode steps). With kernel=wgmma
# (sm_90a) the split and merge kernels are mma.sync's too and the direct
# kernel the warp-specialized one: both paths run.
# GATED_ATTENTION_TEST_SEED draws other inputs.
import os

from gated_attention import accuracy, config
from gated_attention.testing import emulate

SEED = int(os.environ.get("GATED_ATTENTION_TEST_SEED", "0"))

CASES = [
    ("dtype=bf16|f16,d=64,dv=64,hq=4,hkv=2,b=2,sq=1,skv=300,causal=0|1", 3),
    ("dtype=bf16,d=64,dv=64,hq=4,hkv=1,b=3,sq=1,skv=1000,causal=1", 3),
    ("dtype=bf16,d=64,dv=64,hq=2,hkv=1,sq=1,skv=40,gate=silu,combine=add", 7),
    ("dtype=f16,d=128,dv=64,hq=8,hkv=1,sq=1,skv=257,gw=headwise,gh=shared", 4),
    ("dtype=bf16,d=64,dv=64,hq=2,hkv=2,sq=1,skv=130,gate=none", 2),
    ("dtype=bf16,d=256,dv=256,hq=2,hkv=1,sq=1,skv=100,causal=1", 3),
    ("dtype=bf16,d=64,dv=64,hq=4,hkv=2,b=2,sq=1,skv=300,causal=1", 3,
     "bshd"),
    ("dtype=f16,d=128,dv=64,hq=4,hkv=1,b=2,sq=1,skv=200", 5, "bshd"),
    ("dtype=bf16,d=64,dv=64,hq=8,hkv=2,b=2,sq=1,skv=300,causal=1", 3,
     "qpad"),
    # G = 6: a CTA packs gcd(6, 64) = 2 of a K/V head's 6 query heads.
    ("dtype=f16,d=64,dv=64,hq=12,hkv=2,b=1,sq=1,skv=200,gate=silu", 2),
    # D = 192: 32-key split blocks, so that 256 threads copy whole rows.
    ("dtype=f16,d=192,dv=128,hq=4,hkv=2,b=2,sq=1,skv=150,causal=1", 3),
]
failures = count = 0
for spec, splits, *layout in CASES:
    for cfg in config.parse_cases(spec):
        seed = SEED * 1000 + count
        out, ref, name = emulate.run_decode(cfg, seed, splits,
                                            kv_bshd=layout == ["bshd"],
                                            q_padded=layout == ["qpad"])
        result = accuracy.compare(cfg, out, ref, cfg.inputs(seed),
                                  kernel=name)
        failures += not result.ok
        count += 1
        print(f"{'PASS' if result.ok else 'FAIL'} {cfg.describe()} [{name} "
              f"splits={splits} {''.join(layout) or 'bhsd'}] "
              f"{accuracy.describe(result)}", flush=True)

# The direct kernel (taken when the B x Hq tiles fill the GPU) packs the
# heads of a K/V head too, and so writes the gated rows a head stride apart.
for cfg in (c for spec in (
        "dtype=bf16,d=256,dv=256,hq=16,hkv=2,b=2,sq=1,skv=300,causal=1",
        "dtype=f16,d=128,dv=64,hq=8,hkv=1,sq=1,skv=257,gw=headwise,gh=shared",
        "dtype=bf16,d=64,dv=64,hq=4,hkv=2,b=2,sq=1,skv=0",
        "dtype=f16,d=64,dv=64,hq=12,hkv=2,sq=1,skv=100,causal=1")
        for c in config.parse_cases(spec)):
    seed = SEED * 1000 + count
    out, ref, name = emulate.run_case(cfg, seed)
    result = accuracy.compare(cfg, out, ref, cfg.inputs(seed), kernel=name)
    failures += not result.ok
    count += 1
    print(f"{'PASS' if result.ok else 'FAIL'} {cfg.describe()} [{name} "
          f"direct] {accuracy.describe(result)}", flush=True)

WGMMA = "chip=sm_90a kernel=wgmma"
for cfg in config.parse_cases(
        "dtype=bf16|f16,d=128,dv=128,hq=4,hkv=2,b=2,sq=1,skv=300,causal=0|1"):
    seed = SEED * 1000 + count
    split = emulate.run_decode(cfg, seed, 3, options=WGMMA)
    direct = emulate.run_case(cfg, seed, options=WGMMA)
    for (out, ref, name), how in ((split, "splits=3"), (direct, "direct")):
        result = accuracy.compare(cfg, out, ref, cfg.inputs(seed),
                                  kernel=name)
        failures += not result.ok
        count += 1
        print(f"{'PASS' if result.ok else 'FAIL'} {cfg.describe()} [{name} "
              f"{how} {WGMMA}] {accuracy.describe(result)}", flush=True)
assert not failures, f"{failures} of {count} failed"
print(f"decode split-KV: {count} passed")
