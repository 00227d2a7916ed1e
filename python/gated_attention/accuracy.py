"""How far a lowering's result may be from the float64 reference.

Every comparison with reference.gated_attention_reference (check, emulate,
cuda, run_example, the device check, the package's tests) goes through
`compare`, which bounds each output element by `error_bound`: an error
model of the op in element type T (unit roundoff u = 2^-24 for f32, 2^-11
for f16, 2^-8 for bf16) with f32 arithmetic inside. The reference runs on
the inputs already rounded to T, so their rounding contributes nothing.
For output element (b, h, i, e), with softmax weights w_j of row i:

    Y  = sum_j w_j v_je           the attention output
    A  = sum_j w_j |v_je|         the same weights applied to |V|
    dY = u_P A + s_P V1 / l + eps (A + |Y|)

- u_P A: the tensor-core kernel rounds P to T before P.V (as
  FlashAttention does); each weight is then off by at most u relative, so
  Y by at most u A (<= u max|V|). u_P = u for f16 / bf16, 0 for f32.
- s_P V1 / l: an f16 weight below f16's normal range is off by up to half
  its smallest subnormal s_P absolutely; V1 = sum of |v_je| over the keys
  the row sees, l >= 1 the row's sum of exp(s - max). Negligible for bf16.
- The CPU's bf16 products on AVX512-BF16 or AMX (vdpbf16ps, tdpbf16ps;
  `flush_subnormals`) round P to bf16 (the u_P A term) and read bf16
  subnormals as 0 and flush f32 sums below 2^-126 to 0. In P.V, whose
  weights the tiled path scales by c <= 1 (a power of two below 1 only
  when max|v| (Skv + Bk) exceeds 2^116: 1/c <= max(1, max|v| (Skv + Bk)
  2^-116)), each key loses at most 2^-126 |v_je| (its weight), 2^-126 c
  p_j (its value) and 2^-126 (its partial sum): after the division by c l,
  f_P = 2^-126 ((V1 + n / l) / c + 1) with n the keys the row sees. In
  Q.Kᵀ each of the D terms loses at most 2^-126 (|q_t| + |k_t|) and each
  of the D additions 2^-126: the score moves by at most
  |scale| 2^-126 (D + |q_i|_1 + max_j |k_j|_1), added to eps.
- eps (A + |Y|): f32 arithmetic. A score off by delta moves its weight by
  about delta relative and Y by at most delta (A + |Y|); scores come from
  a D-term f32 dot product and an exp2 argument of up to twice the score
  magnitude S+ = |scale| max_j sum_t |q_it k_jt|, sums run over Skv keys:
  eps = 2^-24 ((sqrt(D) + 2) S+ + sqrt(Skv) + 8), square roots because
  rounding errors of long sums add like a random walk (probabilistic
  error analysis; the worst case, linear in D and Skv, is never reached).
  A lowering that sums key blocks of Bk keys with compensated summation
  and moves the softmax reference point only by more than a threshold
  tau = 8 ln 2 (the tiled CPU path; `key_block` = Bk) has plain sums of at
  most n = min(Skv, Bk) terms, 2u from the compensation and at most
  2 S+ / tau rescalings of 2u each, whatever Skv:
  eps = 2^-24 ((sqrt(D) + 3) S+ + sqrt(n) + 10).
  For f32, bf16 and f16 results that path adds P.V to acc in chunks
  (`chunked_acc`): plain sums of fewer than C + Bk keys (C =
  CPU_ACC_CHUNK_KEYS), each chunk added with compensation, so there
  n = min(Skv, C + Bk).
  Split-KV on the CPU (`splits` = N > 1 parts of the keys, each part such
  a lowering, merged as O = sum_i w_i O_i / sum_i w_i l_i with
  w_i = exp(m_i - m)) adds the merge: the argument m_i - m (|.| <= 2 S+)
  rounds by u |m_i - m|, exp by 2u, the product w_i O_i by u, and the
  N-term sums by sqrt(N) u (random walk, as above); a weight off by delta
  relative moves the weights of its part's keys by delta, so Y by
  delta (A + |Y|): eps += 2^-24 (2 S+ + 3 + sqrt(N)).

The output out = Y * a (combine mul) or Y + a (add), a = act(G) computed
in f32 (relative error eps_a = 2^-24 (10 + 1.25 |g|): exp(-g) rounds its
argument), then rounded to T:

    mul:  |out - ref| <= |a| dY + eps_a |a| |Y| + u_o |ref| + s_o + f_a l A
    add:  |out - ref| <= dY + eps_a |a| + u_o |ref| + s_o + f_a
    none: |out - ref| <= dY + u_o |ref| + s_o

with u_o = u + 5e-6 (the output's rounding, plus printMemrefF32's six
significant digits, which check.py reads) and s_o half T's smallest
subnormal. eps_a: exp(-g) within 2.5 ulp (libdevice's expf), its argument
-g log2 e rounding by |g| units plus the f32 constant log2 e's error (0.22
units relative): 1.25 |g| units; 1 + e, the division, SiLU's product or
NS-sigmoid's sum one unit each: 10 + 1.25 |g|. Results below 2^-126 may
be flushed to zero: an activation below that is 0, and a scale below it
drops an output of at most |o| = l A times it (l the row's sum of
exp(s - max), A below): f_a = 2^-126 (1 + |g|). The gate multiplies the
P rounding term: an unbounded gate (SiLU(g) ~ g) amplifies it, which
fixed atol/rtol tolerances missed.

The sm_90a kernel (`kernel` names it: _sm90a in its name, or its launch
description says wgmma) activates the built-in gates on the MUFU
unit from t = tanh.approx.f32(g / 2), sigmoid(g) = (1 + t) / 2: sigmoid
0.5 + 0.5 t, SiLU (g / 2)(1 + t), NS-sigmoid 0.75 + 0.25 t, and it
divides by l before the epilogue (the last key block's P and O's last
rescale carry rcp.approx(l) or, for a sigmoid that multiplies,
rcp.approx(2 l), the output then o + o t). The PTX ISA (9.1, section
9.7.3.22) bounds tanh.approx.f32's relative error over the whole f32
range by 2^-11 (TANH_APPROX_ERROR): t is off by at most that times |t|,
absolutely, and the activation by
e_t = 2^-11 |t| |da/dt| with da/dt = 1/2, g/2, 1/4; near sigmoid = 0
(t near -1) this is an absolute error, not a relative one. Its f32
arithmetic: rcp.approx within 1.5 ulp of 1 / l (3 units; PTX ISA 9.1
section 9.7.3.13), the products by it (P, O's factor, O) and the
activation's FFMA one unit each, the combine one more:
eps_a = 2^-24 8, and, combine add, 2^-24 6 |Y| for O's own scaling. g / 2
is exact but below T's normal range (a bf16 product may flush, a 2^-126
f32 one too): e_h = max(s_T, 2^-126) (2 + |g|) more; the output's
rounding of the value off by them adds u_o (e_t + e_h). Then

    mul:  |out - ref| <= |a| dY + (eps_a |a| + (1 + u_o)(e_t + e_h)) |Y|
                         + u_o |ref| + s_o + f_a l A
    add:  |out - ref| <= dY + eps_a |a| + (1 + u_o)(e_t + e_h)
                         + 2^-24 6 |Y| + u_o |ref| + s_o + f_a

Against the output's own rounding u |ref| = u sigmoid(g) |Y| (sigmoid,
mul) the tanh term is at most 0.11 of bf16's for g >= -1 (sigmoid
>= 0.27) and equal to it at g = -2.8 (sigmoid = 0.056); for f16 equal at
g = -1.1 (sigmoid = 0.25). Below, it is an absolute error of at most
2^-11.987 |Y|: a sixteenth of bf16's rounding of the ungated |Y|, half
of f16's (docs/Design.md has the table).

f64 runs the same model with the f64 arithmetic of the reference
lowering: every 2^-24 of f32 arithmetic above becomes 2^-53
(dtypes.arithmetic_unit), u = 2^-53 and no printing term (f64 results are
read from memory, never printed through f32).

A result passes when every element is within its bound (or is NaN where
the reference is NaN, or the same infinity); `compare` reports the worst
ratio |out - ref| / bound, so 1.0 is the limit and a healthy kernel sits
well below it.
"""

import collections
import re

import numpy as np

from . import dtypes, reference

F32_UNIT = 2.0**-24
# The smallest normal f32: .ftz approximations flush results below it.
F32_FLUSH = 2.0**-126
# tanh.approx.f32's largest relative error (PTX ISA 9.1, section 9.7.3.22;
# 2^-10.987 there is the .f16 form's absolute error, section 9.7.4.9): the
# sm_90a kernel's gate activation.
TANH_APPROX_ERROR = 2.0**-11
# d activation / d tanh(g / 2) of the built-in gates, as a function of g.
_TANH_SLOPE = {"sigmoid": lambda g: 0.5, "silu": lambda g: 0.5 * np.abs(g),
               "ns_sigmoid": lambda g: 0.25}
# The largest key block of the tiled CPU path (--gated-attention-to-llvm's
# key-block=0 chooses 64, 128 or 256; the backward takes 64), which
# ga.attention and CpuAttention run: the bound grows with the block, so it
# covers them all.
CPU_KEY_BLOCK = 256
# Keys per chunk of the tiled CPU path's f32, bf16 and f16 accumulator
# (OnlineSoftmaxTile::kAccChunkKeys).
CPU_ACC_CHUNK_KEYS = 1024
PRINT_RELATIVE = 5e-6

Comparison = collections.namedtuple(
    "Comparison", "ok max_abs_err ratio worst")
Comparison.__doc__ = """ok: every element within its bound; max_abs_err:
largest |out - ref|; ratio: largest |out - ref| / bound (inf on a NaN or a
shape mismatch); worst: the index of that element (None if none)."""


def softmax_error(d, skv, s_plus, key_block=None, unit=F32_UNIT, splits=1,
                  chunked_acc=False):
    """eps of the module docstring: the relative error of a row's softmax
    weights (and the absolute error of its scores and of log l) from the
    arithmetic of unit roundoff `unit` (f32's; f64's for f64), for head dim
    `d`, `skv` keys, the rows' score magnitude `s_plus`, and the key block
    of a lowering with compensated sums (None: plain sums over all
    keys), whose keys may be split into `splits` merged parts.
    `chunked_acc`: that lowering compensates acc once per chunk of
    CPU_ACC_CHUNK_KEYS keys, not per key block (its f32, bf16 and f16
    results)."""
    if key_block is None:
        return unit * ((np.sqrt(d) + 2) * s_plus + np.sqrt(skv) + 8)
    terms = min(skv, key_block + (CPU_ACC_CHUNK_KEYS if chunked_acc else 0))
    eps = unit * ((np.sqrt(d) + 3) * s_plus + np.sqrt(terms) + 10)
    if splits > 1:
        eps = eps + unit * (2 * s_plus + 3 + np.sqrt(splits))
    return eps


def lse_error_bound(cfg, inputs, key_block=None, log2_domain=False,
                    splits=1):
    """Bound on |lse - reference.log_sum_exp| per row [B, Hq, Sq] (`cfg`,
    `inputs` and `key_block` as error_bound takes them). L = m + log(l)
    moves by at most the largest error of the row's scores (dL/ds_j = P_j
    sums to 1) plus the relative error of l: eps; the f32 log and the sum
    m + log(l) round by one unit of |L| each. A row that sees no key is
    +inf exactly. `splits`: the tiled path's split-KV parts.

    `log2_domain`: the tensor-core kernels, whose m is in log2 units and
    whose weights are exp2's (FragmentSoftmax.h), L = ln 2 * m + log(l).
    Converting m rounds twice (ln 2 as an f32, the product): 2 units of
    |m| <= S+. Their exp2 (libdevice's exp2f, or ex2.approx.ftz) is within
    2 ulp of the correctly rounded result, 2.5 of the exact one: each
    weight, so l, is off by 5 units relative more, and so is log(l);
    ex2.approx.ftz flushes weights below 2^-126 (the row's largest is 1):
    l >= 1 loses at most Skv 2^-126."""
    q, k = (np.asarray(inputs[n], np.float64) for n in ("query", "key"))
    d, skv = q.shape[3], k.shape[2]
    scale = cfg.scale if cfg.scale is not None else 1.0 / np.sqrt(d)
    _, _, mask = reference.attention_weights(q, k, scale, cfg.causal)
    kr = np.repeat(k, q.shape[1] // k.shape[1], axis=1)
    mag = np.einsum("bhid,bhjd->bhij", np.abs(q), np.abs(kr))
    s_plus = np.abs(scale) * np.where(mask, mag, 0.0).max(axis=-1,
                                                          initial=0.0)
    lse = reference.log_sum_exp(q, k, scale, cfg.causal)
    unit = dtypes.arithmetic_unit(cfg.dtype)
    with np.errstate(invalid="ignore"):
        bound = (softmax_error(d, skv, s_plus, key_block, unit, splits)
                 + 2 * unit * np.where(np.isinf(lse), 0.0, np.abs(lse)))
    if log2_domain:
        bound = bound + 2 * F32_UNIT * s_plus + 5 * F32_UNIT + \
            skv * F32_FLUSH
    return bound


def tanh_gates(kernel):
    """Whether `kernel` (a kernel's name or launch description; None: any
    other lowering) activates the built-in gates from tanh.approx: the
    sm_90a (wgmma) kernel."""
    if isinstance(kernel, dict):
        return kernel.get("instructions") == "wgmma"
    return isinstance(kernel, str) and \
        re.search(r"_sm90a(_|$)", kernel) is not None


def error_bound(cfg, inputs, key_block=None, flush_subnormals=False,
                splits=1, kernel=None):
    """Per-element bound on |out - reference| for `cfg` (an
    AttentionConfig) run on `inputs` ("query", "key", "value" and "gate":
    float64 arrays already representable in cfg.dtype); the shape of the
    result. `key_block`: the key block of a lowering that adds its key
    blocks with compensated summation (the tiled CPU path), or None for
    one whose sums run over all Skv keys. `flush_subnormals`: the tiled
    path's bf16 products run on AVX512-BF16 or AMX. `splits`: the tiled
    path splits each row's keys into that many merged parts (split-KV).
    `kernel`: the kernel's name or launch description (tanh_gates: the
    sm_90a kernel's activation). See the module docstring for the model."""
    u = dtypes.UNIT_ROUNDOFF[cfg.dtype]
    half_subnormal = dtypes.SMALLEST_SUBNORMAL[cfg.dtype] / 2
    q, k, v = (np.asarray(inputs[n], np.float64)
               for n in ("query", "key", "value"))
    d, skv = q.shape[3], k.shape[2]
    scale = cfg.scale if cfg.scale is not None else 1.0 / np.sqrt(d)
    w, l, mask = reference.attention_weights(q, k, scale, cfg.causal)
    group = q.shape[1] // k.shape[1]
    vr = np.repeat(v, group, axis=1)
    kr = np.repeat(k, group, axis=1)
    with np.errstate(invalid="ignore", over="ignore"):
        y = np.einsum("bhij,bhje->bhie", w, vr)
        a_v = np.einsum("bhij,bhje->bhie", w, np.abs(vr))
        mag = np.einsum("bhid,bhjd->bhij", np.abs(q), np.abs(kr))
        s_plus = np.abs(scale) * np.where(mask, mag, 0.0).max(
            axis=-1, keepdims=True, initial=0.0)
    unit = dtypes.arithmetic_unit(cfg.dtype)
    eps = softmax_error(d, skv, s_plus, key_block, unit, splits,
                        chunked_acc=cfg.dtype != "f64")
    if flush_subnormals:
        q1 = np.abs(q).sum(axis=-1, keepdims=True)
        k1 = np.abs(kr).sum(axis=-1).max(axis=-1, initial=0.0)
        eps = eps + np.abs(scale) * F32_FLUSH * (d + q1 + k1[..., None, None])
    dy = eps * (a_v + np.abs(y))
    if cfg.dtype not in ("f32", "f64"):
        v1 = np.einsum("ij,bhje->bhie", mask.astype(np.float64), np.abs(vr))
        with np.errstate(invalid="ignore", divide="ignore"):
            v1 = np.where(l > 0, v1 / np.where(l > 0, l, 1.0), 0.0)
            seen = np.where(l > 0, mask.sum(axis=-1)[:, None]
                            / np.where(l > 0, l, 1.0), 0.0)
        dy = dy + u * a_v + dtypes.SMALLEST_SUBNORMAL[cfg.dtype] / 2 * v1
        if flush_subnormals:
            block = key_block if key_block is not None else CPU_KEY_BLOCK
            inv_c = max(1.0, np.abs(v).max(initial=0.0) * (skv + block)
                        * 2.0**-116)
            dy = dy + F32_FLUSH * ((v1 + seen) * inv_c + 1)
    u_out = u + (PRINT_RELATIVE if cfg.dtype != "f64" else 0.0)
    if cfg.gate == "none":
        return dy + u_out * np.abs(y) + half_subnormal
    g = np.asarray(inputs["gate"], np.float64)
    a = reference.activation(g, cfg.gate)
    flush = F32_FLUSH * (1 + np.abs(g))
    if tanh_gates(kernel) and cfg.gate in _TANH_SLOPE:
        eps_a = unit * 8
        # Absolute errors of the activation: tanh.approx's, g / 2's.
        # (1 + u_out): the output rounds the value that carries them.
        e_a = (TANH_APPROX_ERROR * np.abs(np.tanh(g / 2))
               * _TANH_SLOPE[cfg.gate](g)
               + max(dtypes.SMALLEST_SUBNORMAL[cfg.dtype], F32_FLUSH)
               * (2 + np.abs(g))) * (1 + u_out)
        scaled = unit * 6
    else:
        eps_a = unit * (10 + 1.25 * np.abs(g))
        e_a = scaled = 0.0
    if cfg.combine == "mul":
        with np.errstate(invalid="ignore"):
            lost = flush * np.where(l > 0, l, 0.0) * a_v
        return (np.abs(a) * dy + (eps_a * np.abs(a) + e_a) * np.abs(y)
                + u_out * np.abs(y * a) + half_subnormal + lost)
    return (dy + eps_a * np.abs(a) + e_a + scaled * np.abs(y)
            + u_out * np.abs(y + a) + half_subnormal + flush)


def legacy_bound(cfg, ref):
    """atol + rtol |ref| of dtypes.TOLERANCES: for callers that do not
    pass the inputs (the model needs them)."""
    atol, rtol = dtypes.TOLERANCES[cfg.dtype]
    return atol + rtol * np.abs(ref)


def compare(cfg, out, ref, inputs=None, key_block=None,
            flush_subnormals=False, splits=1, kernel=None):
    """Comparison of `out` with the reference `ref` for `cfg`, element by
    element against error_bound(cfg, inputs, key_block, flush_subnormals,
    splits, kernel) (fixed tolerances, a weaker check, without
    `inputs`)."""
    out = np.asarray(out, np.float64)
    ref = np.asarray(ref, np.float64)
    if out.shape != ref.shape:
        return Comparison(False, float("inf"), float("inf"), None)
    bound = (error_bound(cfg, inputs, key_block, flush_subnormals, splits,
                         kernel)
             if inputs is not None
             else legacy_bound(cfg, ref))
    return _within(out, ref, bound)


def compare_lse(cfg, lse, inputs, key_block=None, log2_domain=False,
                splits=1):
    """Comparison of a lowering's log-sum-exp `lse` [B, Hq, Sq] with
    reference.log_sum_exp of `inputs` within lse_error_bound (the
    arguments as it takes them): +inf exactly where a row sees no key, a
    NaN (a row left unwritten) fails."""
    q, k = inputs["query"], inputs["key"]
    ref = reference.log_sum_exp(q, k, cfg.scale, cfg.causal)
    lse = np.asarray(lse, np.float64)
    if lse.shape != ref.shape:
        return Comparison(False, float("inf"), float("inf"), None)
    return _within(lse, ref, lse_error_bound(cfg, inputs, key_block,
                                             log2_domain, splits))


def _within(out, ref, bound):
    """Comparison of `out` with `ref` (same shapes) element by element
    against `bound`."""
    bound = np.broadcast_to(bound, ref.shape)
    with np.errstate(invalid="ignore"):
        # Non-finite results agree only with the same non-finite value.
        same = (np.isnan(out) & np.isnan(ref)) | (np.isinf(ref) & (out == ref))
        err = np.where(same, 0.0, np.abs(out - ref))
        err = np.where(np.isnan(err), np.inf, err)
        # (An exact element is within any bound, 0 too: f64's half
        # smallest subnormal is 0 in float64.)
        ratio = np.where(same | (err == 0), 0.0, np.where(
            np.isfinite(err) & np.isfinite(bound), err / bound, np.inf))
    if not ratio.size:
        return Comparison(True, 0.0, 0.0, None)
    worst = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    return Comparison(bool(np.all(ratio <= 1.0)), float(err.max()),
                      float(ratio[worst]), tuple(int(i) for i in worst))


def describe(result):
    """'err/bound=R' (R the worst ratio) for a Comparison."""
    return f"err/bound={result.ratio:.3g}"
