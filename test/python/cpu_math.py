# RUN: %PYTHON %s
"""Math ops that LLVM has no instruction for compile on the CPU pipeline
and compute the right values: erf and erfc (exact GELU), cbrt as calls
into libm, integer powers as generated functions. They used to fail with
"'math.erf' was not lowered by the pipeline". math.clampf, which upstream
defines as max(min(x, lo), hi), stays an error at the op.

Each op runs elementwise in f32, f16 and bf16 against float64 on the same
(rounded) inputs. Error model, with u the unit roundoff of the element type
and u32 that of f32 (libm is within a few f32 ulp): one op is computed in
f32 and rounded once, |err| <= (u + 4 u32) |ref|; GELU, 0.5 x (1 +
erf(x / sqrt 2)), rounds five times, each error at most u times a term
bounded by |x| (1 + erf is up to 2), |err| <= 0.5 |x| (6 u + 8 u32). Plus
the element type's smallest subnormal (results that underflow)."""

import math
import re

import ml_dtypes
import numpy as np

from gated_attention import native, runner

DTYPES = {
    "f32": (np.float32, 2.0 ** -24, 2.0 ** -149),
    "f16": (np.float16, 2.0 ** -11, 2.0 ** -24),
    "bf16": (ml_dtypes.bfloat16, 2.0 ** -8, 2.0 ** -133),
}

ERF = np.vectorize(math.erf)


def one_op(ref, x, u):
    return (u + 4 * 2.0 ** -24) * np.abs(ref)


# name: (body computing %r from %x, float64 reference, error bound)
UNARY = {
    "erf": ("%r = math.erf %x : T", ERF, one_op),
    "erfc": ("%r = math.erfc %x : T", np.vectorize(math.erfc), one_op),
    "cbrt": ("%r = math.cbrt %x : T", np.cbrt, one_op),
    # exact GELU, as frontends lower torch.nn.functional.gelu
    "gelu": ("""%s = arith.constant 0.70710678118654752 : T
    %h = arith.constant 0.5 : T
    %one = arith.constant 1.0 : T
    %xs = arith.mulf %x, %s : T
    %e = math.erf %xs : T
    %e1 = arith.addf %e, %one : T
    %xh = arith.mulf %x, %h : T
    %r = arith.mulf %xh, %e1 : T""",
             lambda x: 0.5 * x * (1 + ERF(x / math.sqrt(2))),
             lambda ref, x, u: 0.5 * np.abs(x) * (6 * u + 8 * 2.0 ** -24)),
}

MODULE = """
func.func @f(%a: tensor<{n}x{t}>) -> tensor<{n}x{t}>
    attributes {{llvm.emit_c_interface}} {{
  %0 = linalg.generic {{indexing_maps = [affine_map<(d0) -> (d0)>,
                                        affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}}
      ins(%a : tensor<{n}x{t}>) outs(%a : tensor<{n}x{t}>) {{
  ^bb0(%x: {t}, %unused: {t}):
    {body}
    linalg.yield %r : {t}
  }} -> tensor<{n}x{t}>
  return %0 : tensor<{n}x{t}>
}}
"""

rng = np.random.default_rng(7)
n = 257
failures = 0
for t, (dtype, u, tiny) in DTYPES.items():
    # Both signs, around 0 and out to where erfc underflows in f16.
    x = np.concatenate([rng.uniform(-4, 4, n - 5), [0.0, -0.0, 1.0, 6.0, -6.0]])
    x = x.astype(dtype)
    x64 = x.astype(np.float64)
    for name, (body, reference, error_bound) in UNARY.items():
        text = MODULE.format(n=n, t=t, body=body.replace(": T", f": {t}"))
        lib = native.SharedLibrary(text, openmp=True)
        got = lib.call("f", [x], 1, dtype).astype(np.float64)
        ref = reference(x64)
        bound = error_bound(ref, x64, u) + tiny
        ratio = float(np.max(np.abs(got - ref) / bound))
        ok = ratio <= 1.0
        failures += not ok
        print(f"{'PASS' if ok else 'FAIL'} {name} {t}: worst error / bound "
              f"{ratio:.3f}")

# Integer powers: exact (no overflow for these operands).
text = MODULE.format(n=64, t="i32", body="""%c3 = arith.constant 3 : i32
    %r = math.ipowi %x, %c3 : i32""")
lib = native.SharedLibrary(text, openmp=True)
xi = rng.integers(-1000, 1000, 64).astype(np.int32)
got = lib.call("f", [xi], 1, np.int32)
ok = np.array_equal(got, xi.astype(np.int64) ** 3)
failures += not ok
print(f"{'PASS' if ok else 'FAIL'} ipowi i32: exact")

# What the pipeline cannot lower is an error at the op, naming it.
text = MODULE.format(n=8, t="f32", body="""%lo = arith.constant -0.5 : f32
    %hi = arith.constant 0.75 : f32
    %r = math.clampf %x to [%lo, %hi] : f32""")
try:
    native.SharedLibrary(text)
    ok, message = False, "compiled"
except runner.ToolError as e:
    message = str(e)
    ok = re.search(r"<stdin>:\d+:\d+: error: .*'math\.clampf'", message)
failures += not ok
print(f"{'PASS' if ok else 'FAIL'} clampf f32: an error at the op"
      + ("" if ok else f": {message[-400:]}"))

assert failures == 0, f"{failures} math ops wrong on the CPU"
