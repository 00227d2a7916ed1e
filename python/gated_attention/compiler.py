"""Build, compile and run gated attention from Python.

The user-facing layer of the package: numpy arrays in, numpy arrays out;
gated-attention-opt does the compiling (one invocation per configuration,
cached), the CPU code runs in-process through ctypes and the GPU code through
the CUDA driver API.

    import numpy as np
    import gated_attention as ga

    q = np.random.randn(1, 16, 512, 256)        # B x Hq x Sq x D
    k = v = np.random.randn(1, 2, 512, 256)     # B x Hkv x Skv x D (GQA)
    g = np.random.randn(1, 16, 512, 256)        # the gate, B x Hg x Sq x Dg
    y = ga.attention(q, k, v, g, causal=True)                   # CPU, f32
    y = ga.attention(q, k, v, g, causal=True, dtype="bf16",
                     device="cuda")                              # tensor cores
    err = np.abs(y - ga.attention_reference(q, k, v, g, causal=True)).max()

    text = ga.attention_ir(ga.AttentionConfig(dtype="bf16", causal=True))
    lib = ga.compile_cpu(text)          # a shared library (native.SharedLibrary)
    kernels = ga.compile_ptx(text)      # [(name, PTX, launch description)]

Gate variants from plugins: `ga.load_plugin("GateVariants.so")`, then
`gate="#gate_variants.tanh"` (and `ga.register_gate(...)` for its reference).
"""

import dataclasses

import numpy as np

from . import config as config_mod
from . import dtypes, mlir, native, ptx, reference as reference_mod, runner

AttentionConfig = config_mod.AttentionConfig
load_plugin = runner.load_plugin
register_gate = reference_mod.register_gate
ToolError = runner.ToolError

DEVICES = ("cpu", "cuda")


def attention_ir(cfg, name="attention"):
    """A module holding `func.func @name(q, k, v[, g]) -> result` with one
    gated_attention.attention op of `cfg` (callable from C / ctypes)."""
    return "module {\n" + mlir.attention_function(cfg, name,
                                                  c_interface=True) + "}\n"


def compile_cpu(text, pipeline=("--gated-attention-to-llvm",), openmp=True):
    """Compiles MLIR text for this CPU into a shared library (see
    native.SharedLibrary.call); raises ToolError with the tool's diagnostics
    on bad input."""
    return native.SharedLibrary(text, pipeline, openmp=openmp)


def compile_ptx(text, chip="sm_90"):
    """Compiles MLIR text with --gated-attention-to-ptx; returns the
    tensor-core kernels as (name, PTX text, launch description) tuples (the
    description says how to launch it; see gated_attention.cuda.Kernel)."""
    lowered = runner.compile_module(text,
                                    [f"--gated-attention-to-ptx=chip={chip}"])
    return ptx.tensor_core_kernels(lowered)


def config_for(q, k, v, g=None, *, causal=False, gate="sigmoid",
               combine="mul", scale=None, dtype="f32"):
    """The AttentionConfig of arrays q [B, Hq, Sq, D], k [B, Hkv, Skv, D],
    v [B, Hkv, Skv, Dv] and g [B, Hg, Sq, Dg] (Hg in {Hq, 1}, Dg in {Dv, 1};
    None for no gate). Raises ValueError on shapes the op does not take."""
    shapes = [np.shape(x) for x in (q, k, v)]
    if any(len(s) != 4 for s in shapes):
        raise ValueError(f"q, k, v must be 4-D [B, H, S, D], got {shapes}")
    (b, hq, sq, d), (bk, hkv, skv, dk), (bv, hv, sv, dv) = shapes
    if (bk, dk) != (b, d) or (bv, hv, sv) != (b, hkv, skv):
        raise ValueError(f"k, v do not match q: {shapes}")
    if hkv == 0 or hq % hkv:
        raise ValueError(f"Hq = {hq} is not a multiple of Hkv = {hkv}")
    heads, width = "per_head", "elementwise"
    if g is None:
        gate = "none"
    else:
        gb, hg, gs, dg = (np.shape(g) + (None,) * 4)[:4]
        if np.ndim(g) != 4 or gb != b or gs != sq or hg not in (hq, 1) or \
                dg not in (dv, 1):
            raise ValueError(f"gate of shape {np.shape(g)} does not fit "
                             f"[{b}, {hq} or 1, {sq}, {dv} or 1]")
        heads = "per_head" if hg == hq else "shared"
        width = "elementwise" if dg == dv else "headwise"
    return AttentionConfig(b=b, hq=hq, hkv=hkv, sq=sq, skv=skv, d=d, dv=dv,
                           gate=gate, combine=combine, causal=causal,
                           gate_heads=heads, gate_width=width, dtype=dtype,
                           scale=scale)


class CpuAttention:
    """The op of `cfg` compiled for this CPU, with B, Sq and Skv dynamic:
    one compile serves every batch and sequence length."""

    def __init__(self, cfg):
        self.cfg = dataclasses.replace(cfg, dynamic=("b", "sq", "skv"))
        self.lib = compile_cpu(attention_ir(self.cfg))

    def __call__(self, *operands):
        """operands: q, k, v[, g] (any float arrays); returns the result as
        float64 (computed in the config's element type)."""
        dt = self.cfg.dtype
        if dt == "f32":
            args, out_type = [np.asarray(x, np.float32) for x in operands], \
                np.float32
        else:
            args, out_type = [dtypes.to_bits(x, dt) for x in operands], \
                np.uint16
        out = self.lib.call("attention", args, 4, out_type)
        if dt != "f32":
            out = dtypes.from_bits(out, dt)
        return out.astype(np.float64)


class CudaAttention:
    """The op's tensor-core kernel (f16 / bf16) on the CUDA GPU: Sq and Skv
    are kernel arguments, B sets the grid, so one compile serves them all."""

    def __init__(self, cfg, chip="sm_90"):
        from . import cuda
        if cfg.dtype == "f32":
            raise ValueError("device='cuda' runs the f16/bf16 tensor-core "
                             "kernel; use dtype='bf16' or 'f16'")
        self.cfg, self._cuda = cfg, cuda
        _, text, desc = self.compile(cfg, chip)
        self.driver = cuda.Driver()
        self.kernel = cuda.Kernel(self.driver, text, desc)

    @staticmethod
    def compile(cfg, chip="sm_90"):
        """(name, PTX, launch description) of the kernel serving `cfg` at
        every B, Sq and Skv (no GPU needed: see cuda.compile_kernel's cache
        for compiling here and running elsewhere)."""
        from . import cuda
        return cuda.compile_kernel(
            dataclasses.replace(cfg, b=1, sq=1, skv=1,
                                dynamic=("b", "sq", "skv")), chip=chip)

    def __call__(self, *operands):
        q, k, v = operands[:3]
        cfg = dataclasses.replace(self.cfg, b=q.shape[0], sq=q.shape[2],
                                  skv=k.shape[2])
        names = ("query", "key", "value", "gate")
        inputs = {n: np.asarray(x, np.float64) for n, x in zip(names, operands)}
        # A kernel without a gate still takes a (unread) gate buffer.
        inputs.setdefault("gate", np.zeros(1))
        return self._cuda.run(self.driver, self.kernel, cfg, inputs)


_COMPILED = {}


def _compiled(cfg, device):
    # Lengths are runtime values of the compiled code: key without them.
    key = (dataclasses.replace(cfg, b=1, sq=1, skv=1), device)
    if key not in _COMPILED:
        _COMPILED[key] = (CpuAttention if device == "cpu" else CudaAttention)(
            cfg)
    return _COMPILED[key]


def attention(q, k, v, g=None, *, causal=False, gate="sigmoid", combine="mul",
              scale=None, dtype="f32", device="cpu"):
    """gated_attention.attention on numpy arrays: SDPA(q, k, v) combined with
    gate(g), grouped-query when k/v have fewer heads than q, bottom-right
    causal when `causal`; `scale` defaults to D^-1/2. Inputs are rounded to
    `dtype` (f32, f16, bf16); the result comes back as float64. Compiled once
    per configuration and device."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, not {device!r}")
    cfg = config_for(q, k, v, g, causal=causal, gate=gate, combine=combine,
                     scale=scale, dtype=dtype)
    operands = (q, k, v) if g is None else (q, k, v, g)
    return _compiled(cfg, device)(*operands)


def attention_reference(q, k, v, g=None, *, causal=False, gate="sigmoid",
                        combine="mul", scale=None):
    """The float64 numpy reference of `attention` (no rounding)."""
    return reference_mod.gated_attention_reference(
        q, k, v, g, scale=scale, causal=causal,
        gate="none" if g is None else gate, combine=combine)
