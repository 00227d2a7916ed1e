# RUN: %PYTHON %s
"""The Python package's user API (gated_attention.compiler): build IR,
compile for the CPU and to PTX, run on numpy arrays, the Qwen3-Next preset,
and clear errors on bad input. Numerics against the float64 reference."""

import dataclasses

import numpy as np

import gated_attention as ga
from gated_attention import accuracy, dtypes

rng = np.random.default_rng(11)


def rand(shape, dtype):
    return dtypes.round_to(rng.standard_normal(shape), dtype)


# 1. IR with every option; the tool parses and verifies it.
cfg = ga.AttentionConfig(b=2, hq=8, hkv=2, sq=33, skv=65, d=64, dv=32,
                         gate="ns_sigmoid", combine="add", causal=True,
                         gate_heads="shared", gate_width="headwise",
                         dtype="bf16", scale=0.2)
text = ga.attention_ir(cfg)
for needle in ("causal", "combine = #gated_attention.combine<add>",
               "gate = #gated_attention.gate<ns_sigmoid>",
               "scale = 0x3E4CCCCD : f32",  # 0.2 as f32 bits: exact
               "tensor<2x1x33x1xbf16>", "llvm.emit_c_interface"):
    assert needle in text, (needle, text)
from gated_attention import runner  # noqa: E402
assert "gated_attention.attention" in runner.compile_module(text, [])
print("PASS attention_ir")

# 2. attention() on the CPU across the design space, each against the
# reference on the same rounded inputs.
cases = [
    # dtype, (b, hq, hkv, sq, skv, d, dv), gate (Hg, Dg), gate, combine, causal
    ("f32", (2, 4, 2, 37, 50, 32, 16), "full", "sigmoid", "mul", True),
    ("f32", (1, 3, 3, 20, 20, 16, 16), "headwise", "silu", "add", False),
    ("f16", (1, 4, 1, 64, 64, 64, 64), "shared", "sigmoid", "mul", True),
    ("bf16", (1, 16, 2, 40, 40, 256, 256), "full", "sigmoid", "mul", True),
    ("bf16", (2, 2, 2, 9, 30, 32, 32), None, None, "mul", False),
]
for dtype, (b, hq, hkv, sq, skv, d, dv), layout, gate, combine, causal in cases:
    q, k, v = rand((b, hq, sq, d), dtype), rand((b, hkv, skv, d), dtype), \
        rand((b, hkv, skv, dv), dtype)
    gshape = {"full": (b, hq, sq, dv), "headwise": (b, hq, sq, 1),
              "shared": (b, 1, sq, dv), None: None}[layout]
    g = rand(gshape, dtype) if gshape else None
    kw = dict(causal=causal, combine=combine)
    if gate:
        kw["gate"] = gate
    out = ga.attention(q, k, v, g, dtype=dtype, **kw)
    ref = ga.attention_reference(q, k, v, g, **kw)
    assert out.shape == (b, hq, sq, dv), out.shape
    # The inputs are representable: the error model's bound applies.
    result = accuracy.compare(
        ga.config_for(q, k, v, g, dtype=dtype, **kw), out, ref,
        dict(zip(("query", "key", "value", "gate"), (q, k, v, g))))
    assert result.ok, (dtype, result)
    print(f"PASS attention dtype={dtype} gate={gate} layout={layout} "
          f"causal={int(causal)} {accuracy.describe(result)}")

# One compile serves every batch and length of a configuration (B, Sq, Skv
# are dynamic in the compiled code).
before = len(ga.compiler._COMPILED)
for b, sq, skv in ((1, 5, 7), (3, 70, 18)):
    q, k, v, g = (rand(s, "f32") for s in ((b, 4, sq, 32), (b, 2, skv, 32),
                                           (b, 2, skv, 16), (b, 4, sq, 16)))
    out = ga.attention(q, k, v, g, causal=True)
    result = accuracy.compare(
        ga.config_for(q, k, v, g, causal=True), out,
        ga.attention_reference(q, k, v, g, causal=True),
        dict(zip(("query", "key", "value", "gate"), (q, k, v, g))))
    assert result.ok, result
assert len(ga.compiler._COMPILED) == before, "recompiled for new lengths"
print("PASS attention reuses its compile across lengths")

# 3. PTX and launch descriptions for the GPU.
kernels = ga.compile_ptx(ga.attention_ir(ga.AttentionConfig(
    hq=16, hkv=2, sq=128, skv=128, d=128, dv=128, causal=True,
    dtype="bf16")))
assert len(kernels) == 1, kernels
name, ptx_text, desc = kernels[0]
assert ".entry " + name in ptx_text and "mma.sync" in ptx_text, name
assert desc["kernel"] == name and desc["Hq"] == 16 and desc["Hkv"] == 2
assert [a["name"] for a in desc["arguments"]] == \
    ["q", "k", "v", "gate", "out", "Sq", "Skv", "q.B", "q.H", "k+v.B",
     "k+v.H", "gate.B", "gate.H", "out.B", "out.H"], desc["arguments"]
print(f"PASS compile_ptx {name} grid={desc['grid']} block={desc['block']}")

# The kernel cache: a kernel compiled once is read back (here with a tool
# that does not exist, so a second compile would fail), for every length.
import os  # noqa: E402
import tempfile  # noqa: E402
from gated_attention import cuda  # noqa: E402
with tempfile.TemporaryDirectory() as cache:
    saved_cache_dir = os.environ.get("GATED_ATTENTION_CACHE_DIR")
    os.environ["GATED_ATTENTION_CACHE_DIR"] = cache
    cfg = ga.AttentionConfig(hq=4, hkv=2, sq=50, skv=50, d=64, dv=64,
                             dtype="f16", gate="silu")
    first = ga.CudaAttention.compile(cfg)
    assert sorted(f.rsplit(".", 1)[1] for f in os.listdir(cache)) == \
        ["json", "ptx"], os.listdir(cache)
    again = cuda.compile_kernel(
        dataclasses.replace(cfg, b=1, sq=1, skv=1, dynamic=("b", "sq", "skv")),
        opt="/nonexistent/gated-attention-opt")
    assert again == first, "not read back from the cache"
    assert ga.CudaAttention.compile(dataclasses.replace(cfg, sq=999)) == first
    os.environ.pop("GATED_ATTENTION_CACHE_DIR")
    if saved_cache_dir is not None:
        os.environ["GATED_ATTENTION_CACHE_DIR"] = saved_cache_dir
print("PASS kernel cache")

# 4. The Qwen3-Next preset: IR, CPU run, reference.
block = ga.qwen3_next.Block(b=1, s=6)
assert "func.func @qwen3_next_attention" in block.ir
inputs = block.random_inputs(seed=2)
out = block(**inputs)
ref = block.reference(**inputs)
err = np.abs(out - ref)
assert out.shape == (1, 6, 2048)
assert np.all(err <= 2e-4 + 2e-4 * np.abs(ref)), err.max()
print(f"PASS qwen3_next.Block max_abs_err={err.max():.3g}")

# 5. Bad input: clear errors, no crash.
q = rand((1, 4, 8, 16), "f32")
for args, kwargs, message in [
        ((q, rand((1, 3, 8, 16), "f32"), rand((1, 3, 8, 16), "f32")), {},
         "not a multiple"),
        ((q, q[:, :2], q[:, :2], rand((1, 4, 8, 3), "f32")), {},
         "does not fit"),
        ((q[0], q, q), {}, "must be 4-D"),
        ((q, q, q), {"device": "tpu"}, "unknown device 'tpu'; valid: cpu"),
        ((q, q, q), {"dtype": "f8"}, "unknown dtype")]:
    try:
        ga.attention(*args, **kwargs)
    except ValueError as e:
        assert message in str(e), (message, e)
    else:
        raise AssertionError(f"accepted bad input: {message}")
try:
    ga.compile_cpu("func.func @f() { %x = gated_attention.attention }")
except ga.ToolError as e:
    assert "error:" in str(e), e
else:
    raise AssertionError("compiled invalid IR")
try:
    ga.load_plugin("/nonexistent/plugin.so")
except FileNotFoundError:
    pass
else:
    raise AssertionError("loaded a missing plugin")
print("PASS errors")
