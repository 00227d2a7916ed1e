# RUN: %PYTHON %s %S/../Dialect/GatedAttention/Transforms/raise.mlir
# The unfused forms of raise.mlir compiled by --gated-attention-to-llvm (which
# raises them to the op first) compute gated attention: checked against the
# float64 reference with the semantics each form spells out.
import subprocess
import sys

import numpy as np

from gated_attention import native, reference

text = open(sys.argv[1]).read()
chunks = text.split("// -----")
forms = {
    # name: (input shapes, reference)
    "batch_matmul_softmax": (
        [(8, 16, 32)] * 4,
        lambda q, k, v, g: reference.gated_attention_reference(
            q[None], k[None], v[None], g[None], scale=0.125)[0]),
    "no_gate": (
        [(8, 16, 32)] * 3,
        lambda q, k, v: reference.gated_attention_reference(
            q[None], k[None], v[None], None, scale=0.125, gate="none")[0]),
    "added_triangle": (
        [(2, 4, 8), (2, 6, 8), (2, 6, 8), (2, 4, 8)],
        lambda q, k, v, g: reference.gated_attention_reference(
            q[None], k[None], v[None], g[None], scale=1.0, causal=True)[0]),
    "headwise_heads_in_batch": (
        [(8, 16, 32)] * 3 + [(8, 16)],
        lambda q, k, v, g: reference.gated_attention_reference(
            q[None], k[None], v[None], g[None, :, :, None], scale=0.125)[0]),
    "headwise_producer": (
        [(8, 16, 32)] * 3 + [(8, 16)],
        lambda q, k, v, g: reference.gated_attention_reference(
            q[None], k[None], v[None], g[None, :, :, None], scale=0.125,
            gate="silu", combine="add")[0]),
    "shared_elementwise": (
        [(1, 4, 8, 16), (1, 2, 12, 16), (1, 2, 12, 16), (1, 8, 16)],
        lambda q, k, v, g: reference.gated_attention_reference(
            q, k, v, g[:, None], scale=0.25, causal=True)),
    "shared_headwise": (
        [(1, 4, 8, 16), (1, 2, 12, 16), (1, 2, 12, 16), (1, 8)],
        lambda q, k, v, g: reference.gated_attention_reference(
            q, k, v, g[:, None, :, None], scale=0.25, causal=True)),
    "headwise_4d": (
        [(1, 4, 8, 16), (1, 2, 12, 16), (1, 2, 12, 16), (1, 4, 8)],
        lambda q, k, v, g: reference.gated_attention_reference(
            q, k, v, g[..., None], scale=0.25, causal=True)),
    "gate_transposed": (
        [(1, 4, 8, 16), (1, 2, 12, 16), (1, 2, 12, 16), (1, 8, 4)],
        lambda q, k, v, g: reference.gated_attention_reference(
            q, k, v, g.transpose(0, 2, 1)[..., None], scale=0.25,
            causal=True)),
    "generic_gqa_causal": (
        [(1, 4, 8, 16), (1, 2, 12, 16), (1, 2, 12, 16), (1, 4, 8, 16)],
        lambda q, k, v, g: reference.gated_attention_reference(
            q, k, v, g, scale=0.25, causal=True, gate="silu", combine="add")),
    "unsigned_i64_causal": (
        [(1, 4, 8, 16), (1, 2, 12, 16), (1, 2, 12, 16), (1, 4, 8, 16)],
        lambda q, k, v, g: reference.gated_attention_reference(
            q, k, v, g, scale=0.25, causal=True, gate="silu", combine="add")),
}
rng = np.random.default_rng(3)
for name, (shapes, ref) in forms.items():
    chunk = next(c for c in chunks if f"func.func @{name}(" in c)
    module = chunk
    # A C interface for ctypes.
    head, _, rest = module.partition(f"func.func @{name}(")
    sig, _, body = rest.partition(" {\n")
    module = f"{head}func.func @{name}({sig} attributes {{llvm.emit_c_interface}} {{\n{body}"
    raised = subprocess.run(["gated-attention-opt", "-", "--gated-attention-raise"],
                            input=module, capture_output=True, text=True,
                            check=True).stdout
    assert "gated_attention.attention" in raised, name
    lib = native.SharedLibrary(module, openmp=True)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    out = lib.call(name, inputs, len(shapes[0]), np.float32)
    expected = ref(*[x.astype(np.float64) for x in inputs])
    err = np.abs(out - expected)
    assert np.all(err <= 2e-5 + 2e-5 * np.abs(expected)), (name, err.max())
    print(f"PASS {name} max_abs_err={err.max():.3g}")
