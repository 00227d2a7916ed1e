# RUN: %PYTHON %s %gated_attention_src_root
"""Every Python entry point checks its arguments before compiling: a bad
value is a ValueError naming it (and listing the valid values where there
is a list), never a ToolError, a crash or a silently ignored argument;
a gate given as attribute text is exactly one gate attribute (10.). Also
the package's version and dir(), and compile_ptx on f32."""

import dataclasses
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

import gated_attention as ga
from gated_attention import config, cuda, mlir, paged, reference, runner

SRC = sys.argv[1]
rng = np.random.default_rng(0)


def arrays(b=1, hq=4, hkv=2, sq=8, skv=8, d=16, dv=16, gshape="full"):
    g = {"full": (b, hq, sq, dv), "headwise": (b, hq, sq, 1),
         "shared": (b, 1, sq, dv), None: None}[gshape]
    shapes = [(b, hq, sq, d), (b, hkv, skv, d), (b, hkv, skv, dv), g]
    return [None if s is None else rng.standard_normal(s) for s in shapes]


def raises(fn, *needles, error=ValueError):
    """Calls fn(); it must raise `error` whose message has every needle."""
    try:
        fn()
    except error as e:
        for needle in needles:
            assert needle in str(e), (needle, str(e))
        return str(e)
    except Exception as e:
        raise AssertionError(f"{type(e).__name__} instead of "
                             f"{error.__name__}: {e}") from None
    raise AssertionError(f"accepted: expected {error.__name__} with "
                         f"{needles}")


# Nothing below may reach the tool: make any compile fail loudly.
os.environ["GATED_ATTENTION_OPT"] = "/nonexistent/gated-attention-opt"
q, k, v, g = arrays()

# 1. The package: version, dir().
assert re.fullmatch(r"\d+\.\d+\.\d+", ga.__version__), ga.__version__
with open(os.path.join(SRC, "CMakeLists.txt")) as f:
    cmake_version = re.search(r"project\(\S+\s+VERSION\s+([\d.]+)",
                              f.read()).group(1)
assert ga.__version__ == cmake_version, (ga.__version__, cmake_version)
listed = dir(ga)
for name in ("attention", "attention_reference", "compile_ptx", "compile_cpu",
             "AttentionConfig", "config_for", "CpuAttention", "CudaAttention",
             "ToolError", "paged_attention", "paged_attention_reference",
             "__version__"):
    assert name in listed, (name, listed)
print(f"PASS version {ga.__version__} (CMake's too), dir()")

# 2. Unknown names list the valid values.
raises(lambda: ga.attention(q, k, v, g, dtype="f8"),
       "unknown dtype 'f8'", "f32, f16, bf16, f64")
raises(lambda: ga.attention(q, k, v, g, gate="relu"),
       "unknown gate 'relu'", "sigmoid, silu, ns_sigmoid, none")
raises(lambda: ga.attention(q, k, v, g, combine="sub"),
       "unknown combine 'sub'", "mul, add")
raises(lambda: ga.attention(q, k, v, g, device="tpu"),
       "unknown device 'tpu'", "cpu, cuda")
raises(lambda: ga.AttentionConfig(gate_heads="all"),
       "unknown gate_heads 'all'", "per_head, shared")
raises(lambda: ga.AttentionConfig(gate_width="rowwise"),
       "unknown gate_width 'rowwise'", "elementwise, headwise")
raises(lambda: ga.AttentionConfig(dtype="float32"), "f32, f16, bf16")
raises(lambda: ga.compile_ptx("module {}", chip="sm_75"),
       "unknown chip 'sm_75'", "sm_80", "sm_90")
raises(lambda: ga.compile_ptx("module {}", kernels="simt"),
       "tensor_core, all")
raises(lambda: cuda.compile_kernel(ga.AttentionConfig(dtype="bf16"),
                                   chip="sm90"), "sm_80")
raises(lambda: ga.AttentionConfig(dynamic=("hq",)), "b, sq, skv")
raises(lambda: ga.AttentionConfig(dynamic="sq"), "tuple")
print("PASS unknown names list the valid values")

# 3. The gate argument and the gate array agree.
raises(lambda: ga.attention(q, k, v, g, gate="none"),
       "gate='none' with a gate array")
raises(lambda: ga.attention_reference(q, k, v, g, gate="none"),
       "gate='none' with a gate array")
raises(lambda: ga.attention(q, k, v, gate="silu"),
       "gate='silu' without a gate array")
raises(lambda: ga.attention(q, k, v, combine="add"),
       "combine='add' without a gate array")
raises(lambda: ga.AttentionConfig(gate="none", combine="add"),
       "needs a gate")
# The paged entry points check them the same way.
pq, pg = q[0].transpose(1, 0, 2), g[0].transpose(1, 0, 2)   # [T, Hq, D]
pages = rng.standard_normal((2, 16, 2, 16))
tables = (np.array([[0, 1]]), np.array([20]), np.array([0, len(pq)]))
for entry in (ga.paged_attention, ga.paged_attention_reference):
    raises(lambda: entry(pq, pages, pages, *tables, gate="silu"),
           "gate='silu' without a gate array")
    raises(lambda: entry(pq, pages, pages, *tables, combine="add"),
           "combine='add' without a gate array")
    raises(lambda: entry(pq, pages, pages, *tables, pg, gate="none"),
           "gate='none' with a gate array")
    raises(lambda: entry(pq, pages, pages, *tables, pg, gate="relu"),
           "unknown gate 'relu'")
print("PASS gate argument and gate array agree")

# 4. Shapes: ranks, mismatches, empty heads and head dims.
for args, needle in [
        ((q[0], k, v, g), "must be 4-D"),
        ((q, k[..., None], v, g), "must be 4-D"),
        ((q, k[:, :, :, :8], v, g), "do not match"),
        ((q, k, v[:, :1], g), "do not match"),
        ((q, k, v[:1, :, :3], g), "do not match"),
        ((q, k[:, :1].repeat(3, 1), v[:, :1].repeat(3, 1), g),
         "not a multiple"),
        ((q, k, v, g[:, :2]), "does not fit"),
        ((q, k, v, g[..., :3]), "does not fit"),
        ((q, k, v, g[0]), "does not fit"),
        ((q[:, :, :, :0], k[:, :, :, :0], v, g), "D = 0"),
        ((q, k, v[..., :0], g[..., :0]), "Dv = 0"),
        ((q[:, :0], k, v, g[:, :0]), "Hq = 0"),
        ((q, k[:, :0], v[:, :0], g), "Hkv = 0")]:
    raises(lambda: ga.attention(*args), needle)
    raises(lambda: ga.attention_reference(*args), needle)
    raises(lambda: ga.config_for(*args), needle)
print("PASS shapes")

# 5. Array contents: real numbers only; lists and integers are arrays.
for bad, needle in [(q.astype(complex), "complex"),
                    (q > 0, "bool"),
                    (q.astype(object), "object"),
                    (np.full(q.shape, "x"), "must be a real"),
                    ([[1, 2], [3]], "not an array"),
                    (None, "q is None")]:
    raises(lambda: ga.attention(bad, k, v, g), needle)
    raises(lambda: ga.attention_reference(bad, k, v, g), needle)
raises(lambda: ga.attention(q, k, v, g.astype(np.complex64)), "complex")
assert ga.config_for(q.tolist(), k.astype(np.int32), v, g).d == 16
print("PASS array contents")

# 6. Scalars: scale, causal, dims of a config.
for scale, needle in [(float("nan"), "finite"), (float("inf"), "finite"),
                      (-float("inf"), "finite"), (1e39, "finite in f32"),
                      (0.0, "non-zero"), (-0.0, "non-zero"),
                      (1e-50, "non-zero in f32"), (True, "real number"),
                      (1j, "real number"), ("0.1", "real number"),
                      (np.array([0.1]), "real number")]:
    raises(lambda: ga.attention(q, k, v, g, scale=scale), needle)
    raises(lambda: ga.attention_reference(q, k, v, g, scale=scale), needle)
    raises(lambda: ga.AttentionConfig(scale=scale), needle)
for causal in ("yes", 2, None, 0.5):
    raises(lambda: ga.attention(q, k, v, g, causal=causal), "causal must be")
for field, value, needle in [("hq", 0, "hq must be >= 1"),
                             ("hkv", 0, "hkv must be >= 1"),
                             ("d", 0, "d must be >= 1"),
                             ("dv", -1, "dv must be >= 1"),
                             ("b", -1, "b must be >= 0"),
                             ("sq", -5, "sq must be >= 0"),
                             ("skv", 2.0, "must be an integer"),
                             ("d", True, "must be an integer"),
                             ("d", "16", "must be an integer"),
                             ("sq", 2**62, "more than 2^48 elements"),
                             ("d", 4097, "d must be at most 4096")]:
    raises(lambda: ga.AttentionConfig(**{field: value}), needle)
# numpy integers are integers; zero lengths are valid.
cfg = ga.AttentionConfig(hq=np.int64(4), sq=0, skv=0, b=0, scale=np.float32(2))
assert isinstance(cfg.hq, int) and cfg.scale == 2.0
print("PASS scalars")

# 7. The other entry points.
raises(lambda: ga.attention_ir("hq=4"), "AttentionConfig")
raises(lambda: ga.attention_ir(ga.AttentionConfig(), name="a b"),
       "identifier")
raises(lambda: ga.compile_cpu(None), "MLIR text")
raises(lambda: ga.compile_cpu("module {}", pipeline=[1]), "strings")
raises(lambda: ga.compile_ptx(b"module {}"), "MLIR text")
raises(lambda: ga.CpuAttention({"hq": 4}), "AttentionConfig")
raises(lambda: ga.CudaAttention(ga.AttentionConfig(dtype="f32")),
       "tensor-core kernel", "f16 or bf16")
raises(lambda: ga.CudaAttention(ga.AttentionConfig(dtype="bf16", d=40)),
       "multiples of 16")
raises(lambda: ga.attention(*arrays(d=40), dtype="f16", device="cuda"),
       "multiples of 16")
raises(lambda: ga.register_gate("tanh", np.tanh), "MLIR attribute")
raises(lambda: ga.load_plugin("/nonexistent.so"), error=FileNotFoundError)
print("PASS other entry points")

# A compiled kernel checks the operands of each call (only B, Sq, Skv may
# differ from its config): a wrong shape would be read out of bounds.
del os.environ["GATED_ATTENTION_OPT"]
cpu = ga.CpuAttention(ga.config_for(q, k, v, g))
assert cpu(q, k, v, g).shape == q.shape
raises(lambda: cpu(q, k, v), "expected 4 operands")
raises(lambda: cpu(q, k, v, g[..., :1]), "compiled for")
raises(lambda: cpu(q[..., :8], k[..., :8], v, g), "compiled for")
raises(lambda: cpu(q, k, v, g.astype(complex)), "complex")
# Any strides: transposed and sliced views give the contiguous result.
qt = np.ascontiguousarray(q.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)
assert np.array_equal(cpu(qt, k[:, :, ::-1][:, :, ::-1], v, g), cpu(q, k, v, g))
print("PASS compiled kernels check their operands")
# A file that is not a plugin fails when it is loaded, not later (the tool
# would have ignored it and compiled without its gates).
raises(lambda: ga.load_plugin(__file__), "cannot load the dialect plugin",
       error=ga.ToolError)
print("PASS plugins that do not load")

# 8. compile_ptx on f32 says why there is no tensor-core kernel, and
# returns the SIMT kernel on request.
f32 = ga.attention_ir(ga.AttentionConfig(dtype="f32", d=64, dv=64))
raises(lambda: ga.compile_ptx(f32), "no tensor-core kernel", "f32",
       "SIMT", "kernels='all'")
everything = ga.compile_ptx(f32, kernels="all")
assert everything and all(desc is None and ".entry " + name in text
                          for name, text, desc in everything), everything
bf16 = ga.attention_ir(ga.AttentionConfig(dtype="bf16", d=64, dv=64))
assert [d is not None for _, _, d in ga.compile_ptx(bf16, kernels="all")] \
    == [True]
raises(lambda: cuda.compile_kernel(ga.AttentionConfig(dtype="f32")),
       "no tensor-core kernel", "f16 or bf16")
print("PASS compile_ptx on f32")

# 9. A tool that reports an error but exits 0 is an error all the same.
fake = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                    f"fake-opt-{os.getpid()}.sh")
with open(fake, "w") as f:
    f.write("#!/bin/sh\ncat\necho '<stdin>:1:1: error: broken' >&2\n")
os.chmod(fake, 0o755)
try:
    raises(lambda: runner.compile_module("module {}", [], opt=fake),
           "reported an error", "error: broken", error=runner.ToolError)
finally:
    os.unlink(fake)
print("PASS tool errors with exit status 0")

# Static IR whose score matrix the verifier would reject is a ValueError;
# the same sizes dynamic are fine (the tiled lowerings never materialize it).
huge = ga.AttentionConfig(b=1, hq=64, hkv=8, sq=2**22, skv=2**21, d=64,
                          dv=64)
raises(lambda: ga.attention_ir(huge), "score matrix", "dynamic")
assert "tensor<1x64x?x64xf32>" in ga.attention_ir(
    dataclasses.replace(huge, dynamic=("sq", "skv")))
print("PASS static score matrix bound")


# 10. A gate given as attribute text (gate="#...") is parsed by the tool as
# one attribute, and only a gate attribute is taken: text that would add
# attributes to the op (causal, scale, gated_attention.row_strides), other
# IR, an attribute that is not a gate, a typo or a plugin's gate before the
# plugin is loaded is a ValueError naming `gate`, at every entry point
# (configs, numpy dense and paged, the reference, the torch ops), never a
# silently different kernel. The IR carries the tool's printing of the
# attribute; `#gated_attention.gate<silu>` is the built-in "silu"; each
# distinct text costs one tool call. The other attributes are written from
# checked values too (row strides: integers, at least a row, at most 2^48).
q, g = rng.standard_normal((1, 4, 8, 16)), rng.standard_normal((1, 4, 8, 16))
k, v = rng.standard_normal((1, 2, 12, 16)), rng.standard_normal((1, 2, 12, 16))
# Count the tool's runs (the gate checks call it through compile_module).
calls = []
compile_module = runner.compile_module


def counted(text, *args, **kwargs):
    calls.append(text)
    return compile_module(text, *args, **kwargs)


runner.compile_module = counted

# 10.1 Text that adds attributes to the op: the user asked for a non-causal
# op at the default scale; the text would make it causal at scale 100.
INJECTED = [
    "#gated_attention.gate<silu>, causal, scale = 100.0 : f32",
    "#gated_attention.gate<silu>, causal",
    "#gated_attention.gate<silu>, gated_attention.row_strides = "
    "array<i64: 64, 16, 16, 16, 16>",
    "#gated_attention.gate<silu>}",
    "#gated_attention.gate<silu> {causal}",
    "#gated_attention.gate<silu>\nmodule {}",
    "#gated_attention.gate<silu> module {}",
]
for text in INJECTED:
    for fn in (lambda: ga.attention(q, k, v, g, gate=text),
               lambda: ga.attention_reference(q, k, v, g, gate=text),
               lambda: ga.config_for(q, k, v, g, gate=text),
               lambda: ga.AttentionConfig(gate=text)):
        raises(fn, "gate", repr(text))
    assert not reference.is_gate(text), text
print(f"PASS {len(INJECTED)} texts adding attributes or IR are refused")

# 10.2 Attributes that are not gates, unknown ones, and not attributes.
for text, needle in [("#gated_attention.combine<add>", "gate"),
                     ("#gated_attention.gate<relu>", "relu"),
                     ("#gated_attention.gate", "gated-attention-opt"),
                     ("#gate_variants.tanh", "gate_variants"),
                     ("#", "gated-attention-opt"),
                     ("1.0 : f32", "unknown gate"),
                     (None, "unknown gate"),
                     (3, "unknown gate")]:
    raises(lambda: ga.AttentionConfig(gate=text), "unknown gate", needle)
    if text is not None:   # (ga.attention's default: sigmoid)
        raises(lambda: ga.attention(q, k, v, g, gate=text), "unknown gate")
print("PASS non-gate attributes and unloaded plugins are refused")

# 10.3 Each distinct text is one tool call, whatever the entry point.
calls.clear()
for _ in range(3):
    raises(lambda: ga.AttentionConfig(gate=INJECTED[0]), "gate")
assert len(calls) == 0, calls   # checked in 1. already
raises(lambda: ga.AttentionConfig(gate="#gated_attention.gate<tanh>"),
       "tanh")
raises(lambda: ga.AttentionConfig(gate="#gated_attention.gate<tanh>"),
       "tanh")
assert len(calls) == 1, calls
print("PASS one tool call per distinct text")

# 10.4 The built-in gates as attributes are the built-in gates; the IR has
# no attribute the arguments did not ask for.
cfg = ga.AttentionConfig(gate="#gated_attention.gate<silu>")
assert cfg.gate == "silu" and cfg == ga.AttentionConfig(gate="silu"), cfg
assert ga.AttentionConfig(gate="#gated_attention.gate< ns_sigmoid >").gate \
    == "ns_sigmoid"
# (A comment ends the line it is on; the IR has the attribute alone.)
cfg = ga.AttentionConfig(gate="#gated_attention.gate<silu> // ,causal",
                         scale=0.5)
assert cfg.gate == "silu" and "scale" in ga.attention_ir(cfg), cfg
cfg = ga.AttentionConfig(gate="#gated_attention.gate<silu>")
text = ga.attention_ir(cfg)
assert "gate = #gated_attention.gate<silu>" in text and \
    "causal" not in text and "scale" not in text, text
y = ga.attention(q, k, v, g, gate="#gated_attention.gate<silu>")
ref = ga.attention_reference(q, k, v, g, gate="silu")
assert np.abs(y - ref).max() < 1e-5, np.abs(y - ref).max()
print("PASS built-in gates as attributes")

# 10.5 The paged op (numpy, its reference) takes the same checks.
T, P = 8, 16
kc, vc = rng.standard_normal((2, P, 2, 16)), rng.standard_normal((2, P, 2, 16))
pq, pg = rng.standard_normal((T, 4, 16)), rng.standard_normal((T, 4, 16))
tables = (np.array([[0, 1]]), np.array([20]), np.array([0, T]))
for text in INJECTED[:3]:
    raises(lambda: paged.paged_attention(pq, kc, vc, *tables, pg, gate=text),
           "gate", repr(text))
    raises(lambda: paged.paged_attention_reference(pq, kc, vc, *tables, pg,
                                                   gate=text),
           "gate", repr(text))
print("PASS paged entry points")

# 10.6 The torch ops, dense and paged (their fake kernels too).
try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    import gated_attention.torch as gat
    tq, tk, tv, tg = (torch.from_numpy(x).float() for x in (q, k, v, g))
    for text in INJECTED[:3]:
        raises(lambda: gat.attention(tq, tk, tv, tg, gate=text), "gate")
        raises(lambda: gat.paged_attention(
            *(torch.from_numpy(x).float() for x in (pq, kc, vc)),
            *(torch.from_numpy(x).int() for x in tables),
            torch.from_numpy(pg).float(), gate=text), "gate")
        meta = [x.to("meta") for x in (tq, tk, tv, tg)]
        raises(lambda: torch.ops.gated_attention.paged_attention(
            meta[0][0].transpose(0, 1), *(torch.empty(
                2, P, 2, 16, device="meta") for _ in range(2)),
            *(torch.from_numpy(x).int().to("meta") for x in tables),
            meta[3][0].transpose(0, 1), gate=text), "gate")
    print("PASS torch ops")

# 10.7 A plugin's gate: refused until its plugin is loaded, then taken, in
# the tool's printing (a reference registered under the text as written).
PLUGIN = os.environ.get("GATE_VARIANTS_PLUGIN")
if PLUGIN and os.path.exists(PLUGIN):
    sig = "#gate_variants.sigmoid<temperature = 0.5 : f32>"
    raises(lambda: ga.AttentionConfig(gate=sig), "gate_variants")
    ga.load_plugin(PLUGIN)
    calls.clear()
    cfg = ga.AttentionConfig(gate=sig)
    assert cfg.gate == sig, cfg.gate
    text = ga.attention_ir(cfg)
    assert "gate = #gate_variants.sigmoid<temperature = 5.000000e-01 : f32>" \
        in text, text
    assert "causal" not in text, text
    ga.attention_ir(ga.AttentionConfig(gate=sig, causal=True))
    assert len(calls) <= 1, calls   # (none: a verdict in the disk cache)
    for bad in (sig + ", causal", "#gate_variants.sigmoid<temperature = "
                "0.0 : f32>", "#gate_variants.tanh, scale = 2.0 : f32"):
        raises(lambda: ga.AttentionConfig(gate=bad), "unknown gate")
    ga.register_gate(sig, lambda x: 1 / (1 + np.exp(-x / 0.5)))
    y = ga.attention(q, k, v, g, gate=sig)
    ref = ga.attention_reference(q, k, v, g, gate=sig)
    assert np.abs(y - ref).max() < 1e-5, np.abs(y - ref).max()
    print("PASS plugin gates")

    # 10.9 The verdict on a gate's text is kept in the disk cache: another
    # process takes it without the tool, as a GPU machine running kernels
    # compiled elsewhere has to; with neither, a ToolError says so.
    WORKER = ("import sys; import gated_attention as ga\n"
              "from gated_attention import mlir\n"
              "if len(sys.argv) > 2: ga.load_plugin(sys.argv[2])\n"
              "try: print(mlir.attention_attributes(ga.AttentionConfig("
              "gate=sys.argv[1])))\n"
              "except ga.ToolError as e: print('ToolError', e)\n")

    def worker(cache, opt, *plugin):
        env = dict(os.environ, GATED_ATTENTION_CACHE_DIR=cache)
        if opt:
            env["GATED_ATTENTION_OPT"] = opt
        proc = subprocess.run([sys.executable, "-c", WORKER, sig, *plugin],
                              env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    with tempfile.TemporaryDirectory() as tmp:
        want = "{gate = #gate_variants.sigmoid<temperature = 5.000000e-01 " \
            ": f32>}"
        assert worker(tmp, None, PLUGIN) == want
        assert worker(tmp, "/nonexistent/gated-attention-opt") == want
        out = worker(os.path.join(tmp, "empty"),
                     "/nonexistent/gated-attention-opt")
        assert out.startswith("ToolError") and "needs gated-attention-opt" \
            in out and "GATED_ATTENTION_CACHE_DIR" in out, out
    print("PASS gate verdicts in the disk cache")

# 10.8 Row strides: integers, at least their row, at most 2^48.
cfg = ga.AttentionConfig(d=16, dv=32)
assert "array<i64: 64, 16, 32, 32, 32>" in mlir.attention_attributes(
    cfg, {"q": np.int64(64)})
for rows, needle in [({"q": 64.5}, "row_strides['q'] must be an integer"),
                     ({"k": True}, "row_strides['k'] must be an integer"),
                     ({"v": "32"}, "row_strides['v'] must be an integer"),
                     ({"out": 31}, "row_strides['out'] must be >= 32"),
                     ({"gate": 2**49}, "at most 2^48"),
                     ({"query": 64}, "unknown operands"),
                     ([("q", 64)], "must be a dict")]:
    raises(lambda: mlir.attention_attributes(cfg, rows), needle)
print("PASS row strides")
