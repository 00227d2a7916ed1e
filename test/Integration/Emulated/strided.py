# RUN: %PYTHON %s
# The tensor-core kernels read and write through strides (launch description
# version 2), run on the emulator against the float64 reference:
# - Qwen3-Next's projection: q and the gate as the two halves of one
#   [B, S, H, 2 * D] tensor ([q | gate] per head), K, V and the output in
#   [B, S, H, D] (FlashAttention's layout), GQA, batches, both kernels'
#   gate/out paths; a headwise gate read from a column of a wider tensor.
# - Decode steps (a static Sq = 1), whose CTAs pack the query heads of a K/V
#   head: q, the gate and the output read and written a run-time head
#   stride apart (2 x D for the projection's halves).
# - Layouts the kernel cannot take are a ValueError before anything runs:
#   rows not aligned for 16-byte cp.async, other rows than the kernel was
#   compiled for (row strides are compile-time: gated_attention.row_strides),
#   K and V with different strides (they share theirs when D = Dv), Q
#   given strides on the sm_90a kernel (its TMA maps read [B, H, S, D]);
#   a misaligned row stride is a compile error.
# Each strided result must also differ from what the contiguous layout
# would compute from the same storage (so that the strides are really used).
import numpy as np

from gated_attention import accuracy, config, launcher
from gated_attention.dtypes import from_bits, to_bits
from gated_attention.testing import emulate


def emulated(kernel, desc, storage, b, sq, skv, strides=None):
    """The output's storage of the kernel launched on the emulator."""
    return launcher.run(emulate.Emulator().kernel(kernel, desc), storage,
                        strides=strides, b=b, sq=sq, skv=skv)


def bits(x, dtype):
    return to_bits(np.ascontiguousarray(x).astype(np.float32).ravel(), dtype)


def bshd(x):
    """A [B, H, S, D] array's values stored [B, S, H, D] and its strides."""
    b, h, s, d = x.shape
    return x.transpose(0, 2, 1, 3), {"B": s * h * d, "H": d, "S": h * d}


def run(cfg, options, seed, out_rows="bshd"):
    wgmma = "wgmma" in options
    inputs = cfg.inputs(seed)
    b, hq, sq, d = inputs["query"].shape
    storage, strides = {}, {}
    if cfg.gate_width == "elementwise" and cfg.dv == d \
            and cfg.gate_heads == "per_head" and not wgmma:
        # [B, S, H, 2D]: q at column 0 of each head, the gate at column D
        # (its own storage starting D elements in: a pointer offset).
        proj = np.zeros((b, sq, hq, 2 * d))
        proj[..., :d] = inputs["query"].transpose(0, 2, 1, 3)
        proj[..., d:] = inputs["gate"].transpose(0, 2, 1, 3)
        flat = bits(proj, cfg.dtype)
        layout = {"B": sq * hq * 2 * d, "H": 2 * d, "S": hq * 2 * d}
        storage["q"], strides["q"] = flat, layout
        storage["gate"], strides["gate"] = flat[d:], layout
    elif cfg.gate_width == "headwise":
        # A column of a [B, S, Hg, 8] tensor.
        g = inputs["gate"]
        wide = np.zeros((b, sq, g.shape[1], 8))
        wide[..., 3] = g[..., 0].transpose(0, 2, 1)
        storage["gate"] = bits(wide, cfg.dtype)[3:]
        strides["gate"] = {"B": sq * g.shape[1] * 8, "H": 8,
                           "S": g.shape[1] * 8}
    for name, operand in (("q", "query"), ("k", "key"), ("v", "value"),
                          ("gate", "gate")):
        if name in storage:
            continue
        if name == "gate" or (name in ("k", "v") and not wgmma):
            values, strides[name] = bshd(inputs[operand])
            storage[name] = bits(values, cfg.dtype)
        else:
            storage[name] = bits(inputs[operand], cfg.dtype)
    # The output in [B, S, H, Dv], or (out_rows "bhsd") [B, H, S, Dv].
    strides["out"] = ({"B": sq * hq * cfg.dv, "H": cfg.dv, "S": hq * cfg.dv}
                      if out_rows == "bshd" else
                      {"B": hq * sq * cfg.dv, "H": sq * cfg.dv, "S": cfg.dv})
    # The kernel is compiled for these rows (gated_attention.row_strides).
    kernel, desc = emulate.compile_case(
        cfg, options=options,
        row_strides={n: s["S"] for n, s in strides.items()})
    out = emulated(kernel, desc, storage, cfg.b, cfg.sq, cfg.skv,
                   strides=strides)
    result = from_bits(out, cfg.dtype).astype(np.float64)
    result = (result.reshape(b, sq, hq, cfg.dv).transpose(0, 2, 1, 3)
              if out_rows == "bshd" else result.reshape(b, hq, sq, cfg.dv))
    check = accuracy.compare(cfg, result, cfg.reference(inputs), inputs,
                             kernel=desc)
    # The same storage read as if contiguous (by the kernel compiled for
    # [B, H, S, D]) must be wrong: the strides are used.
    kernel, desc = emulate.compile_case(cfg, options=options)
    ignored = emulated(kernel, desc, {
        n: np.resize(s, int(np.prod(cfg.shapes()[o])))
        for n, s, o in ((n, storage[n], o) for n, o in (
            ("q", "query"), ("k", "key"), ("v", "value"), ("gate", "gate")))},
        cfg.b, cfg.sq, cfg.skv)
    wrong = from_bits(ignored, cfg.dtype).astype(np.float64).reshape(
        cfg.shapes()["result"])
    assert not accuracy.compare(cfg, wrong, cfg.reference(inputs),
                                inputs).ok, cfg.describe()
    print(f"{'PASS' if check.ok else 'FAIL'} {cfg.describe()} "
          f"[{desc['kernel']}] {accuracy.describe(check)}")
    return check.ok


cases = [
    ("dtype=bf16,d=64,dv=64,hq=4,hkv=2,b=2,sq=40,skv=70,causal=0|1", ""),
    ("dtype=f16,d=128,dv=128,hq=2,hkv=1,sq=33,skv=33,causal=1,gate=silu,"
     "combine=add", ""),
    ("dtype=bf16,d=64,dv=64,hq=2,hkv=1,b=2,sq=20,skv=50,gw=headwise,"
     "gh=per_head|shared", ""),
    ("dtype=bf16,d=64,dv=64,hq=8,hkv=2,b=2,sq=1,skv=70,causal=0|1", ""),
    ("dtype=f16,d=64,dv=64,hq=4,hkv=1,b=2,sq=1,skv=50,gw=headwise,"
     "gh=per_head|shared", ""),
    # D != Dv: K and V with strides of their own.
    ("dtype=bf16,d=128,dv=64,hq=4,hkv=2,sq=30,skv=45,causal=1", ""),
    ("dtype=bf16,d=64,dv=64,hq=2,hkv=1,sq=70,skv=90,causal=1,"
     "gw=elementwise|headwise", "chip=sm_90a kernel=wgmma"),
    # Dv = 256 with [B, S, H, Dv] rows: not the staged epilogue's
    # contiguous rows (FlashKernelConfig::stagesOutput), the register path.
    ("dtype=bf16,d=256,dv=256,hq=2,hkv=1,sq=40,skv=50,causal=1,"
     "gw=elementwise|headwise", "chip=sm_90a kernel=wgmma"),
    # Contiguous output rows, the gate's [B, S, H, Dv]: the output staged,
    # the gate loaded by each lane (a row past Sq reads row Sq - 1's).
    ("dtype=bf16,d=256,dv=256,hq=2,hkv=1,b=2,sq=40,skv=50,causal=1",
     "chip=sm_90a kernel=wgmma", "bhsd"),
]
failures = 0
for spec, options, *out_rows in cases:
    for i, cfg in enumerate(config.parse_cases(spec)):
        failures += not run(cfg, options, seed=11 + i, out_rows=(out_rows or ["bshd"])[0])
assert failures == 0, f"{failures} strided cases failed"

# Layouts the kernels cannot take.
cfg = config.parse_cases("dtype=bf16,d=64,dv=64,hq=2,hkv=1,sq=16,skv=16")[0]
kernel, desc = emulate.compile_case(cfg)
inputs = cfg.inputs(0)
storage = {n: bits(inputs[o], cfg.dtype) for n, o in (
    ("q", "query"), ("k", "key"), ("v", "value"), ("gate", "gate"))}
# A head stride that breaks the 16-byte rows (an odd pointer offset).
try:
    emulated(kernel, desc, storage, 1, 16, 16,
             strides={"k": {"B": 64 * 32, "H": 64 * 16 + 4, "S": 64},
                      "v": {"B": 64 * 32, "H": 64 * 16 + 4, "S": 64}})
    raise AssertionError("misaligned K rows were accepted")
except ValueError as e:
    assert "'k' needs its address and row starts aligned to 16 bytes" in str(e), e
    assert "H = 1028" in str(e), e
# Rows other than those the kernel was compiled for.
try:
    emulated(kernel, desc, storage, 1, 16, 16,
             strides={"q": {"B": 128 * 32, "H": 128, "S": 256}})
    raise AssertionError("another row stride was accepted")
except ValueError as e:
    assert "rows 256 elements apart; the kernel was compiled for 64" in str(e), e
# K and V share their (B, H) strides when D = Dv.
try:
    emulated(kernel, desc, storage, 1, 16, 16,
             strides={"k": {"B": 64 * 32, "H": 64 * 16, "S": 64}})
    raise AssertionError("K and V with different strides were accepted")
except ValueError as e:
    assert "operands k and v share their B stride" in str(e), e
# Row strides the kernel cannot be compiled for: a diagnostic, not a kernel.
try:
    emulate.compile_case(cfg, row_strides={"q": 68})
    raise AssertionError("a misaligned row stride compiled")
except Exception as e:
    assert "the q row stride 68 must be a multiple of 8 elements" in str(e), e

kernel, desc = emulate.compile_case(cfg, options="chip=sm_90a kernel=wgmma")
try:
    emulated(kernel, desc, storage, 1, 16, 16,
             strides={"q": {"B": 16 * 2 * 128, "H": 128, "S": 2 * 128}})
    raise AssertionError("strided Q was accepted by the TMA kernel")
except ValueError as e:
    assert "operand 'q' must be [B, H, S, D]-contiguous" in str(e), e
print("strided: ok")
