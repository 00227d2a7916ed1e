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

Every entry point checks its arguments before compiling: a bad value is a
ValueError that names it (listing the valid values), never a tool error or
a crash; ToolError is left for IR the tool rejects.

Numerics (the same on every path; attention_reference agrees):

- inputs are rounded to `dtype` (to nearest even); values beyond its range
  (65504 for f16, about 3.39e38 for bf16 and f32) become +-inf;
- scores s = scale * q.k are f32: when one a row sees exceeds the f32
  range (|s| > 3.4e38, e.g. scale = 3.4e38), the row is NaN if it
  overflows upwards (inf - inf in the softmax, as in torch's SDPA); a score
  that overflows downwards gets weight 0, and a row all of whose scores do
  is an empty row (the tensor-core kernel folds log2(e) into the scale:
  its limit is |s| > 2.36e38, and a scale above that is NaN everywhere);
- a row that sees no key (Skv = 0, or causal with Sq > Skv) is 0, then
  combined with the gate: 0 (mul) or act(g) (add);
- NaN propagates: a NaN or inf in q or k makes the rows that see it NaN, a
  NaN in v makes its column NaN in the rows that see its key, a NaN in g
  the outputs it gates;
- the result is rounded to `dtype`; values beyond its range become +-inf.
"""

import dataclasses
import re

import numpy as np

from . import config as config_mod
from . import dtypes, kernel_cache, launch, mlir, native, ptx
from . import reference as reference_mod, runner
from . import cuda, launcher

AttentionConfig = config_mod.AttentionConfig
load_plugin = runner.load_plugin
register_gate = reference_mod.register_gate
ToolError = runner.ToolError

DEVICES = ("cpu", "cuda")
CHIPS = ptx.CHIPS
KERNEL_KINDS = ("tensor_core", "all")


def _check_config(cfg):
    if not isinstance(cfg, AttentionConfig):
        raise ValueError(f"expected an AttentionConfig, not "
                         f"{type(cfg).__name__}")
    return cfg


def _check_text(text):
    if not isinstance(text, str):
        raise ValueError(f"expected MLIR text (str), not "
                         f"{type(text).__name__}")
    return text


def _check_chip(chip):
    return config_mod.check_choice("chip", chip, CHIPS)


def attention_ir(cfg, name="attention"):
    """A module holding `func.func @name(q, k, v[, g]) -> result` with one
    gated_attention.attention op of `cfg` (callable from C / ctypes)."""
    _check_config(cfg)
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][\w$.]*",
                                                     name):
        raise ValueError(f"function name must be an identifier, not "
                         f"{name!r}")
    return "module {\n" + mlir.attention_function(cfg, name,
                                                  c_interface=True) + "}\n"


def compile_cpu(text, pipeline=("--gated-attention-to-llvm",), openmp=True):
    """Compiles MLIR text for this CPU into a shared library (see
    native.SharedLibrary.call); raises ToolError with the tool's diagnostics
    on bad input. `pipeline`: gated-attention-opt arguments (one string is
    one argument)."""
    _check_text(text)
    if isinstance(pipeline, str):
        pipeline = (pipeline,)
    if not all(isinstance(a, str) for a in pipeline):
        raise ValueError(f"pipeline must be gated-attention-opt arguments "
                         f"(strings), not {pipeline!r}")
    return native.SharedLibrary(text, tuple(pipeline), openmp=bool(openmp))


def compile_ptx(text, chip="sm_90", kernels="tensor_core"):
    """Compiles MLIR text with --gated-attention-to-ptx for `chip` (one of
    CHIPS) and returns its kernels as (name, PTX text, launch description)
    tuples: by default the tensor-core kernels, which have a description
    (how to launch them; see gated_attention.launcher); with
    kernels="all" every kernel, the description None where there is none.

    Raises ValueError when the module has no tensor-core kernel (f32
    attention, or head dims the tensor-core kernel does not take, lowers
    to the SIMT kernel instead; the message names what came out), and
    ptx.MissingLibdeviceError when a kernel calls a libdevice function that
    was not linked: it could not be loaded."""
    _check_text(text)
    _check_chip(chip)
    config_mod.check_choice("kernels", kernels, KERNEL_KINDS)
    lowered = runner.compile_module(text,
                                    [f"--gated-attention-to-ptx=chip={chip}"])
    found = ptx.all_kernels(lowered)
    for name, text_, _ in found:
        ptx.check_resolved(name, text_)
    if kernels == "all":
        return found
    tensor_core = [k for k in found if k[2] is not None]
    if not tensor_core:
        others = ", ".join(k[0] for k in found) or "none"
        raise ValueError(
            f"no tensor-core kernel: the tensor-core kernel takes f16/bf16 "
            f"attention with head dims that are multiples of 16 up to 256; "
            f"f32 and other head dims lower to the SIMT kernel, which has no "
            f"launch description (kernels here: {others}); "
            f"compile_ptx(..., kernels='all') returns every kernel's PTX")
    return tensor_core


def _is_real_dtype(dt):
    """float / int arrays, and ml_dtypes' types (bfloat16, ...)."""
    return dt.kind in "fiu" or (
        dt.kind == "V" and dt.type.__module__.startswith("ml_dtypes"))


def _array(name, x):
    """`x` as a numpy array of real numbers, else a ValueError."""
    if x is None:
        raise ValueError(f"{name} is None")
    try:
        a = np.asarray(x)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{name} is not an array: {e}") from None
    if not _is_real_dtype(a.dtype):
        hint = " (pass .real, or the real and imaginary parts apart)" \
            if a.dtype.kind == "c" else ""
        raise ValueError(f"{name} must be a real (float or integer) array, "
                         f"not {a.dtype}{hint}")
    return a


def _gate_kind(g, gate, combine):
    """The op's gate and combine for gate array `g` and the arguments:
    gate (None: sigmoid with a gate array, none without) and combine
    (None: mul) describe how g is applied, so without g they must be
    left at their defaults. The dense and the paged entry points (numpy
    and torch) all check them here."""
    if combine is None:
        combine = "mul"
    config_mod.check_choice("combine", combine, reference_mod.COMBINES)
    if gate is not None:
        gate = config_mod.check_gate(gate)
    if g is None:
        if gate not in (None, "none", "sigmoid"):
            raise ValueError(f"gate={gate!r} without a gate array g: pass "
                             f"g, or leave gate unset")
        if combine != "mul":
            raise ValueError(f"combine={combine!r} without a gate array g")
        return "none", "mul"
    if gate == "none":
        raise ValueError("gate='none' with a gate array g, which would be "
                         "ignored: drop g, or name its activation")
    return gate or "sigmoid", combine


def config_for(q, k, v, g=None, *, causal=False, gate=None, combine=None,
               scale=None, dtype="f32"):
    """The AttentionConfig of arrays q [B, Hq, Sq, D], k [B, Hkv, Skv, D],
    v [B, Hkv, Skv, Dv] and g [B, Hg, Sq, Dg] (Hg in {Hq, 1}, Dg in {Dv, 1};
    None for no gate). `gate` (default sigmoid) and `combine` (default mul)
    say how g is applied. Raises ValueError on arrays or arguments the op
    does not take."""
    arrays = [_array(n, x) for n, x in (("q", q), ("k", k), ("v", v))]
    gshape = None if g is None else _array("g", g).shape
    return config_for_shapes(*[a.shape for a in arrays], gshape,
                             causal=causal, gate=gate, combine=combine,
                             scale=scale, dtype=dtype)


def config_for_shapes(qshape, kshape, vshape, gshape=None, *, causal=False,
                      gate=None, combine=None, scale=None, dtype="f32"):
    """config_for on the shapes of q, k, v and g (None: no gate)."""
    shapes = [tuple(s) for s in (qshape, kshape, vshape)]
    for n, shape in zip("qkv", shapes):
        if len(shape) != 4:
            raise ValueError(f"q, k, v must be 4-D [B, H, S, D], got "
                             f"{n} of shape {shape}")
    (b, hq, sq, d), (bk, hkv, skv, dk), (bv, hv, sv, dv) = shapes
    if (bk, dk) != (b, d) or (bv, hv, sv) != (b, hkv, skv):
        raise ValueError(f"k, v do not match q: q [B, Hq, Sq, D], "
                         f"k [B, Hkv, Skv, D], v [B, Hkv, Skv, Dv], got "
                         f"{shapes}")
    for name, size in (("Hq", hq), ("Hkv", hkv), ("D", d), ("Dv", dv)):
        if size == 0:
            raise ValueError(f"{name} = 0: the op needs at least one head "
                             f"and a non-empty head dim, got {shapes}")
    if hq % hkv:
        raise ValueError(f"Hq = {hq} is not a multiple of Hkv = {hkv}")
    gate, combine = _gate_kind(gshape, gate, combine)
    heads, width = "per_head", "elementwise"
    if gshape is not None:
        gshape = tuple(gshape)
        gb, hg, gs, dg = (gshape + (None,) * 4)[:4]
        if len(gshape) != 4 or gb != b or gs != sq or hg not in (hq, 1) or \
                dg not in (dv, 1):
            raise ValueError(f"gate of shape {gshape} does not fit "
                             f"[{b}, {hq} or 1, {sq}, {dv} or 1]")
        heads = "per_head" if hg == hq else "shared"
        width = "elementwise" if dg == dv else "headwise"
    return AttentionConfig(b=b, hq=hq, hkv=hkv, sq=sq, skv=skv, d=d, dv=dv,
                           gate=gate, combine=combine, causal=causal,
                           gate_heads=heads, gate_width=width, dtype=dtype,
                           scale=scale)


def _lengths(cfg):
    """`cfg` without its batch and lengths (what a compile depends on)."""
    return dataclasses.replace(cfg, b=1, sq=1, skv=1, dynamic=())


def _operands(cfg, operands):
    """Checks that `operands` (q, k, v[, g]) fit the compiled `cfg` at any
    B, Sq, Skv; returns (their config, the arrays)."""
    want = len(cfg.operands)
    if len(operands) != want:
        raise ValueError(f"expected {want} operands "
                         f"({', '.join(cfg.operands)}), got {len(operands)}")
    got = config_for(*operands, causal=cfg.causal,
                     gate=cfg.gate if cfg.gate != "none" else None,
                     combine=cfg.combine, scale=cfg.scale, dtype=cfg.dtype)
    if _lengths(got) != _lengths(cfg):
        raise ValueError(f"operands of configuration {got.describe()} "
                         f"passed to a kernel compiled for {cfg.describe()} "
                         f"(only B, Sq and Skv may differ)")
    return got, [_array(n, x) for n, x in zip("qkvg", operands)]


class CpuAttention:
    """The op of `cfg` compiled for this CPU, with B, Sq and Skv dynamic:
    one compile serves every batch and sequence length, and every process
    (the library is kept in the disk cache, kernel_cache)."""

    def __init__(self, cfg):
        _check_config(cfg)
        self.cfg = dataclasses.replace(cfg, dynamic=("b", "sq", "skv"))
        self.lib = kernel_cache.cpu_library(
            attention_ir(self.cfg),
            f"{kernel_cache.variant(self.cfg)} for the CPU")

    def __call__(self, *operands):
        """operands: q, k, v[, g] (real arrays of the config's head counts
        and dims, any B, Sq, Skv; rounded to the element type); returns the
        result in the element type's numpy dtype (dtypes.numpy_dtype:
        float32, float16, ml_dtypes.bfloat16)."""
        got, arrays = _operands(self.cfg, operands)
        dt = self.cfg.dtype
        out_type = dtypes.numpy_dtype(dt)  # before the work: needs ml_dtypes
        if any(n == 0 for n in got.shapes()["result"]):
            return np.zeros(got.shapes()["result"], out_type)
        args = [dtypes.kernel_operand(x, dt) for x in arrays]
        return dtypes.kernel_result(
            self.lib.call("attention", args, 4, dtypes.storage_type(dt)), dt)


# Why the tensor-core kernel does not take a config ("" if it does).
tensor_core_unsupported = ptx.tensor_core_unsupported


class CudaAttention:
    """The op's tensor-core kernel (f16 / bf16) on the CUDA GPU: Sq and Skv
    are kernel arguments, B sets the grid, so one compile serves them all.
    A decode step (Sq = 1) whose B x Hq tiles would leave the GPU idle runs
    split-KV: the keys split across CTAs (launch.split_count, the device's
    SM count) and a merge kernel that applies the gate once. `persistent`
    (chip sm_90a): the wgmma kernel loops over its tiles, longest first, on
    at most one CTA per SM (off by default: docs/Design.md)."""

    def __init__(self, cfg, chip="sm_90", persistent=False):
        _check_config(cfg)
        _check_chip(chip)
        reason = tensor_core_unsupported(cfg)
        if reason:
            raise ValueError(f"device='cuda' runs the tensor-core kernel: "
                             f"{reason}")
        self.cfg, self.chip = cfg, chip
        _, text, desc = self.compile(cfg, chip, persistent)
        self.driver = cuda.Driver()
        self.backend = cuda.Backend(self.driver)
        self.kernels = {"dense": self.backend.kernel(text, desc)}
        # A decode step's kernels (Sq = 1 static), compiled on first use.
        self.decode = None

    @staticmethod
    def compile(cfg, chip="sm_90", persistent=False):
        """(name, PTX, launch description) of the kernel serving `cfg` at
        every B, Sq and Skv (no GPU needed: see cuda.compile_kernel's cache
        for compiling here and running elsewhere)."""
        _check_config(cfg)
        return cuda.compile_kernel(
            dataclasses.replace(cfg, b=1, sq=1, skv=1,
                                dynamic=("b", "sq", "skv")), chip=chip,
            persistent=persistent)

    def __call__(self, *operands):
        """As CpuAttention.__call__, on the GPU."""
        got, arrays = _operands(self.cfg, operands)
        dt = self.cfg.dtype
        out_type = dtypes.numpy_dtype(dt)
        shape = got.shapes()["result"]
        if any(n == 0 for n in shape):
            return np.zeros(shape, out_type)
        bits = {n: dtypes.to_bits(np.asarray(x, np.float64), dt).ravel()
                for n, x in zip(("q", "k", "v", "gate"), arrays)}
        kernels, splits = self.kernels, 1
        if got.sq == 1:
            # (One query: the decode step's kernels, whose CTAs pack the
            # query heads of a K/V head; split-KV's where it pays.)
            if self.decode is None:
                self.decode = {
                    layout: self.backend.kernel(text, desc)
                    for layout, (_, text, desc) in cuda.compile_decode_kernels(
                        self.cfg, chip=self.chip).items()}
            kernels = self.decode
            splits = launch.decode_split_count(
                kernels["dense-split"].desc, got.b, got.skv,
                self.driver.sm_count())
        # (The SM count sizes a persistent kernel's grid; others ignore it.)
        out = launcher.run(kernels, bits, splits, b=got.b, sq=got.sq,
                           skv=got.skv, sm_count=self.driver.sm_count())
        return dtypes.from_bits_as(out.reshape(shape), dt)


_COMPILED = {}


def _compiled(cfg, device):
    # Lengths are runtime values of the compiled code: key without them.
    key = (_lengths(cfg), device)
    if key not in _COMPILED:
        _COMPILED[key] = (CpuAttention if device == "cpu" else CudaAttention)(
            cfg)
    return _COMPILED[key]


def attention(q, k, v, g=None, *, causal=False, gate=None, combine=None,
              scale=None, dtype="f32", device="cpu"):
    """gated_attention.attention on numpy arrays: SDPA(q, k, v) combined with
    gate(g), grouped-query when k/v have fewer heads than q, bottom-right
    causal when `causal`; `scale` defaults to D^-1/2.

    q [B, Hq, Sq, D], k [B, Hkv, Skv, D], v [B, Hkv, Skv, Dv], g [B, Hg,
    Sq, Dg] (Hg in {Hq, 1}, Dg in {Dv, 1}) or None: real arrays (any
    float or integer dtype, ml_dtypes.bfloat16 too, any strides), rounded
    to `dtype` (f32, f16, bf16; f64 on the CPU, accumulated in f64 by
    the reference lowering). `gate` (sigmoid, silu, ns_sigmoid or a
    plugin's attribute; default sigmoid) and `combine` (mul or add; default
    mul) say how g is applied. `device`: cpu or cuda (the tensor-core
    kernel: f16/bf16, head dims multiples of 16 up to 256).

    Returns the result in `dtype`'s numpy type: float32, float64, float16
    or ml_dtypes.bfloat16 (`pip install ml_dtypes`; only bf16 needs it).
    Compiled once per configuration and device (B, Sq, Skv are runtime
    values). See the module docstring for NaN, inf and overflow; bad
    arguments raise ValueError before anything is compiled."""
    config_mod.check_choice("device", device, DEVICES)
    cfg = config_for(q, k, v, g, causal=causal, gate=gate, combine=combine,
                     scale=scale, dtype=dtype)
    dtypes.numpy_dtype(cfg.dtype)  # fails early without ml_dtypes
    if device == "cuda":
        reason = tensor_core_unsupported(cfg)
        if reason:
            raise ValueError(f"device='cuda' runs the tensor-core kernel: "
                             f"{reason}")
    operands = (q, k, v) if g is None else (q, k, v, g)
    return _compiled(cfg, device)(*operands)


class CpuAttentionBackward:
    """The backward of the op of `cfg` (its gradients dQ, dK, dV and dG)
    compiled for this CPU, B, Sq and Skv dynamic, kept in the disk cache:
    the gated_attention.attention_backward op, which reads the gated
    output, never the ungated one (docs/Backward.md)."""

    def __init__(self, cfg):
        _check_config(cfg)
        self.cfg = dataclasses.replace(cfg, dynamic=("b", "sq", "skv"))
        self.lib = kernel_cache.cpu_library(
            "module {\n" + mlir.backward_function(
                self.cfg, "attention_backward") + "}\n",
            f"backward {kernel_cache.variant(self.cfg)} for the CPU")

    def __call__(self, q, k, v, out, dout, g=None):
        """The gradients (dq, dk, dv[, dg]) of out = attention(q, k, v[, g])
        for the output gradient `dout`: arrays as CpuAttention takes them
        (rounded to the element type), results in its numpy dtype."""
        operands = (q, k, v) if g is None else (q, k, v, g)
        got, arrays = _operands(self.cfg, operands)
        dt = self.cfg.dtype
        out_type = dtypes.numpy_dtype(dt)
        result = tuple(got.shapes()["result"])
        given = {"out": _array("out", out), "dout": _array("dout", dout)}
        for name, x in given.items():
            if x.shape != result:
                raise ValueError(f"{name} must have the result's shape "
                                 f"{result} (B, Hq, Sq, Dv), got {x.shape}")
        grads = [np.zeros(x.shape, dtypes.storage_type(dt)) for x in arrays]
        if all(x.size == 0 for x in grads):
            return tuple(x.astype(out_type) for x in grads)
        ins = [np.ascontiguousarray(dtypes.kernel_operand(x, dt)) for x in
               arrays[:3] + [given["out"], given["dout"]] + arrays[3:]]
        self.lib.call_into("attention_backward", ins + grads)
        return tuple(dtypes.kernel_result(x, dt) for x in grads)


class CpuAttentionLse:
    """The op of `cfg` compiled for this CPU returning its log-sum-exp as
    well (the optional second result), B, Sq and Skv dynamic, kept in the
    disk cache."""

    def __init__(self, cfg):
        _check_config(cfg)
        self.cfg = dataclasses.replace(cfg, dynamic=("b", "sq", "skv"))
        self.lib = kernel_cache.cpu_library(
            "module {\n" + mlir.destination_function(
                self.cfg, "attention_lse", lse=True) + "}\n",
            f"{kernel_cache.variant(self.cfg)} with lse for the CPU")

    def __call__(self, *operands):
        """operands as CpuAttention takes them; returns (out, lse): the
        result in the element type's numpy dtype and the log-sum-exp
        [B, Hq, Sq] in the accumulator type (float32; float64 for f64),
        +inf in a row that sees no key."""
        got, arrays = _operands(self.cfg, operands)
        dt = self.cfg.dtype
        out_type = dtypes.numpy_dtype(dt)
        shape = tuple(got.shapes()["result"])
        lse = np.full(shape[:3], np.inf,
                      dtypes.numpy_dtype(dtypes.ACCUMULATOR[dt]))
        if any(n == 0 for n in shape):
            return np.zeros(shape, out_type), lse
        out = np.zeros(shape, dtypes.storage_type(dt))
        ins = [np.ascontiguousarray(dtypes.kernel_operand(x, dt))
               for x in arrays]
        self.lib.call_into("attention_lse", ins + [out, lse])
        return dtypes.kernel_result(out, dt), lse


_COMPILED_LSE = {}


def attention_lse(q, k, v, g=None, *, causal=False, gate=None, combine=None,
                  scale=None, dtype="f32"):
    """`attention` on the CPU that also returns the op's log-sum-exp:
    (out, lse), lse float32 (float64 for f64) [B, Hq, Sq] with L = log sum_j exp(scale q.k_j)
    over the keys each row sees, +inf for a row that sees none (what
    `attention_backward` and merges of partial results read; see
    docs/Backward.md). Arguments as `attention` takes them."""
    cfg = config_for(q, k, v, g, causal=causal, gate=gate, combine=combine,
                     scale=scale, dtype=dtype)
    dtypes.numpy_dtype(cfg.dtype)  # fails early without ml_dtypes
    key = _lengths(cfg)
    if key not in _COMPILED_LSE:
        _COMPILED_LSE[key] = CpuAttentionLse(cfg)
    operands = (q, k, v) if g is None else (q, k, v, g)
    return _COMPILED_LSE[key](*operands)


_COMPILED_BACKWARD = {}


def attention_backward(q, k, v, dout, g=None, *, out=None, causal=False,
                       gate=None, combine=None, scale=None, dtype="f32",
                       device="cpu"):
    """The gradients of `attention` on numpy arrays: (dq, dk, dv), and dg
    when there is a gate, for the output gradient `dout` [B, Hq, Sq, Dv].
    Takes `attention`'s arguments; `out` is the forward's result (the
    gated output, as `attention` returned it for these arguments; computed
    here when None). Inputs are rounded to `dtype`, the gradients
    computed in f32 (f64 for f64) and returned in `dtype`'s numpy type, each in its
    input's shape (a shared or headwise gate's dg summed over the heads or
    the head dim it spans). CPU only: device="cuda" raises
    NotImplementedError (no GPU backward kernels yet)."""
    config_mod.check_choice("device", device, DEVICES)
    cfg = config_for(q, k, v, g, causal=causal, gate=gate, combine=combine,
                     scale=scale, dtype=dtype)
    dtypes.numpy_dtype(cfg.dtype)  # fails early without ml_dtypes
    if device == "cuda":
        raise NotImplementedError(
            "attention_backward runs on the CPU only: the GPU backward "
            "kernels do not exist yet (device='cpu')")
    if out is None:
        out = attention(q, k, v, g, causal=causal, gate=gate,
                        combine=combine, scale=scale, dtype=dtype)
    key = _lengths(cfg)
    if key not in _COMPILED_BACKWARD:
        _COMPILED_BACKWARD[key] = CpuAttentionBackward(cfg)
    return _COMPILED_BACKWARD[key](q, k, v, out, dout, g)


def attention_reference(q, k, v, g=None, *, causal=False, gate=None,
                        combine=None, scale=None):
    """The float64 numpy reference of `attention` (no rounding of inputs or
    result; the scale is the f32 value the op uses). Takes the arguments
    `attention` takes and checks them the same way; NaN, inf, empty rows
    and f32 score overflow as documented in the module docstring."""
    cfg = config_for(q, k, v, g, causal=causal, gate=gate, combine=combine,
                     scale=scale)
    scale = None if cfg.scale is None else float(np.float32(cfg.scale))
    return reference_mod.gated_attention_reference(
        _array("q", q), _array("k", k), _array("v", v),
        None if g is None else _array("g", g), scale=scale,
        causal=cfg.causal, gate=cfg.gate, combine=cfg.combine)
