# RUN: %PYTHON %s %S/raise.mlir
# The plugin's gates compute what they say, end to end on the CPU with the
# stock tool: (1) ops carrying them, through the Python package, in f32 and
# bf16, GQA, causal, head- and elementwise gates; (2) the unfused forms of
# raise.mlir compiled by --gated-attention-to-llvm (which raises them with
# the plugin's pattern first). Each against the float64 reference with the
# variant's numpy activation.
import os
import sys

import numpy as np

import gated_attention as ga
from gated_attention import dtypes

ga.load_plugin(os.environ["GATE_VARIANTS_PLUGIN"])
ga.register_gate("#gate_variants.tanh", np.tanh)
for t in (0.5, 2.0, 4.0):
    ga.register_gate(f"#gate_variants.sigmoid<temperature = {t} : f32>",
                     lambda g, t=t: 1.0 / (1.0 + np.exp(-g / t)))

TOL = {"f32": 2e-5, "bf16": 2e-2}
rng = np.random.default_rng(5)
cases = [
    # gate, dtype, causal, heads (q, kv), gate layout (Hg, Dg)
    ("#gate_variants.tanh", "f32", True, (4, 2), "full"),
    ("#gate_variants.tanh", "bf16", False, (4, 4), "headwise"),
    ("#gate_variants.sigmoid<temperature = 0.5 : f32>", "f32", False, (4, 1), "shared"),
    ("#gate_variants.sigmoid<temperature = 2.0 : f32>", "bf16", True, (2, 2), "full"),
]
for gate, dtype, causal, (hq, hkv), layout in cases:
    for combine in ("mul", "add"):
        b, sq, skv, d = 2, 45, 70, 32
        gshape = {"full": (b, hq, sq, d), "headwise": (b, hq, sq, 1),
                  "shared": (b, 1, sq, d)}[layout]
        q, k, v, g = (dtypes.round_to(rng.standard_normal(s), dtype)
                      for s in ((b, hq, sq, d), (b, hkv, skv, d),
                                (b, hkv, skv, d), gshape))
        out = ga.attention(q, k, v, g, causal=causal, gate=gate,
                           combine=combine, dtype=dtype)
        ref = ga.attention_reference(q, k, v, g, causal=causal, gate=gate,
                           combine=combine)
        err = np.abs(out - ref)
        tol = TOL[dtype]
        assert np.all(err <= tol + tol * np.abs(ref)), (gate, dtype, err.max())
        print(f"PASS op gate={gate} dtype={dtype} causal={int(causal)} "
              f"combine={combine} {layout} max_abs_err={err.max():.3g}")

# The unfused forms: [B·H, S, D] with scale 1.
forms = {
    "tanh_in_combine": lambda o, g: o * np.tanh(g),
    "temperature_in_producer": lambda o, g: o + 1 / (1 + np.exp(-g * 0.5)),
    "temperature_divided": lambda o, g: o / (1 + np.exp(-g / 4)),
    "unknown_activation": lambda o, g: o * np.tanh(2 * g),
}
text = open(sys.argv[1]).read()
for name, gated in forms.items():
    chunk = next(c for c in text.split("// -----")
                 if f"func.func @{name}(" in c)
    head, _, rest = chunk.partition(f"func.func @{name}(")
    sig, _, body = rest.partition(" {\n")
    module = (f"{head}func.func @{name}({sig} attributes "
              f"{{llvm.emit_c_interface}} {{\n{body}")
    lib = ga.compile_cpu(module)
    q, k, v, g = (rng.standard_normal((8, 16, 32)).astype(np.float32)
                  for _ in range(4))
    out = lib.call(name, [q, k, v, g], 3, np.float32)
    o = ga.attention_reference(q[None], k[None], v[None], scale=1.0)[0]
    ref = gated(o, g.astype(np.float64))
    err = np.abs(out - ref)
    assert np.all(err <= 2e-5 + 2e-5 * np.abs(ref)), (name, err.max())
    print(f"PASS unfused {name} max_abs_err={err.max():.3g}")

# The tensor-core kernel's IR with the variants, run by the warp-level
# emulator (bf16 and f16, causal, GQA, tails).
from gated_attention import accuracy, config  # noqa: E402
from gated_attention.testing import check, emulate  # noqa: E402

for i, cfg in enumerate(config.parse_cases(
        "dtype=bf16|f16,d=64,dv=64,hq=4,hkv=2,sq=40,skv=70,causal=1,"
        "gate=#gate_variants.tanh|#gate_variants.sigmoid<temperature = 0.5 : f32>")):
    out, ref, kernel = emulate.run_case(cfg, seed=i)
    # The error model's bound for these inputs (docs/Design.md).
    result = check.compare(cfg, out, ref, cfg.inputs(i))
    assert result.ok, (cfg.describe(), accuracy.describe(result))
    print(f"PASS emulated {kernel} gate={cfg.gate} dtype={cfg.dtype} "
          f"{accuracy.describe(result)}")
