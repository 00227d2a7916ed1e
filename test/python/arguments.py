# RUN: %PYTHON %s %gated_attention_src_root
"""Every Python entry point checks its arguments before compiling: a bad
value is a ValueError naming it (and listing the valid values where there
is a list), never a ToolError, a crash or a silently ignored argument.
Also the package's version and dir(), and compile_ptx on f32."""

import dataclasses
import os
import re
import sys

import numpy as np

import gated_attention as ga
from gated_attention import config, cuda, runner

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
raises(lambda: ga.attention(q, k, v, g, dtype="f64"),
       "unknown dtype 'f64'", "f32, f16, bf16")
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
