"""The backward's float64 reference and error model.

`reference_backward` computes the gradients of gated_attention.attention
in float64 by hand, from the op's definition (docs/Backward.md);
`backward_error_bound` bounds each gradient element of a lowering that
computes in f32 from inputs in element type T (unit roundoff u) and
rounds each gradient to T once; `compare_backward` checks a result
against both. Notation as in accuracy.py (F = 2^-24, S+ the largest score
magnitude of a row, A = sum_j w_j |v_j| the weights applied to |V|);
M(x) is x computed on absolute values (|dY| V^T for dP, ...), the scale of
x's rounding errors:

- weights: relative error eps_s = F ((sqrt(D) + 2) S+ + sqrt(Skv) + 8),
  the forward's; act(G): eps_g = F (12 + |g|) relative; act'(G): eps_g
  times |act'|, or for SiLU the magnitude of its terms, sigma + |g| sigma
  sigma(-g) (they cancel at its minimum, g = -1.28).
- dY = dOut * act(G): eps_g |dY|.  dP = dY V^T: (F (sqrt(Dv) + 2) +
  eps_g) M(dP).
- D = rowsum(dY * Y): from the saved output (sigmoid, NS-sigmoid, no gate)
  F (sqrt(Dv) + 2) sum |dOut out| + sum |dOut| e_out, e_out the saved
  output's error (u |out| + s_T when it is the exact result rounded to T,
  s_T half T's smallest subnormal: an f16 output below 2^-14 is rounded
  absolutely; a forward kernel's output: its accuracy.error_bound); from
  the
  recomputed Y (SiLU, add): its error (eps_s + F (sqrt(Skv) + 2)) A
  weighted by |dY|, plus the sum's.
- dS = scale P (dP - D): scale P (eps_s |dP - D| + err(dP) + err(D)) +
  3 F M(dS).
- dQ = dS K, dK = sum over the group's rows of dS^T Q, dV = sum of
  P^T dY: the propagated error plus F (sqrt(n) + 2) M(.) for a sum of n
  terms (Skv; R Sq for dK, dV).
- dG (before the headwise / shared sums): mul from Y: |dOut act'| (err(Y)
  + (eps_g + 3F) A); mul from out: |dOut out act'/act| (eps_g + 3F) +
  |dOut act'/act| e_out; add: |dOut| (err(act') + F |act'|); then the sum's F (sqrt(n) + 2).

The tensor-core kernels (gpu=True; docs/Backward.md, BackwardKernels.h)
differ from that lowering in four roundings, each bounded where it
happens:
- P = exp2(scale log2(e) s - log2(e) L) from L read in f32: L's rounding
  F |L|, the two products' F (|scale s| + |L|) and the difference's
  F |scale s - L| <= F (S+ + |L|), in the exponent (times ln 2 < 1: a
  relative error of P), plus exp2's 2 F: eps_s + F (2 S+ + 3 |L| + 2);
and the three roundings of their products' operands (rounded_operands=True,
which the CPU's bf16 backward on AVX512-BF16 or AMX shares, as torch's bf16
backward does: all five products take bf16 operands):
- dY = dOut * act(G) stored in T for the MMAs: u |dY| more in err(dY);
- P^T rounded to T as the A operand of P^T dY: u sum |P^T dY| in dV;
- dS rounded to T as the A operand of dS K and dS^T Q: u M(dS) more in
  err(dS).
The CPU's pair products (vdpbf16ps, tdpbf16ps; flush_subnormals=True) also
read bf16 subnormals as 0 and flush f32 sums below 2^-126 = Z to 0: a
product x y loses at most Z (|x| + |y|) and each addition Z, so a product of
n terms gains Z (sum |x| + sum |y| + n'), n' its additions counting the
zero-padded rows or keys of a block; in S^T = K Q^T that moves the score
by |scale| Z (D + |q_i|_1 + max_j |k_j|_1), added to eps_s (accuracy.py's
forward term).

Each gradient adds u |ref| + half T's smallest subnormal (its rounding).
Square roots: rounding errors of long sums add like a random walk, as in
accuracy.py.
"""

import numpy as np

from . import accuracy, dtypes, reference

F32_UNIT = accuracy.F32_UNIT
GRADIENTS = ("query", "key", "value", "gate")

# Gates whose gradient the backward reads from the saved output (mul):
# those with a bounded act'/act (AttentionBackwardMath).
FROM_OUTPUT = ("sigmoid", "ns_sigmoid")


def activation_derivative(g, gate):
    """act'(g) of a built-in gate."""
    s = reference.sigmoid(g)
    ds = s * reference.sigmoid(-g)
    if gate == "sigmoid":
        return ds
    if gate == "silu":
        return s + g * ds
    if gate == "ns_sigmoid":
        return 0.5 * ds
    raise ValueError(f"no derivative for gate {gate!r}")


def _derivative_magnitude(g, gate):
    """The scale of act'(g)'s rounding error: |act'| where act' is a
    product; SiLU's sigma + g sigma sigma(-g) cancels near g = -1.28 (its
    minimum), where the error is relative to the terms, not the sum."""
    if gate != "silu":
        return np.abs(activation_derivative(g, gate))
    s = reference.sigmoid(g)
    return s + np.abs(g) * s * reference.sigmoid(-g)


def _forward(cfg, inputs):
    q, k, v = (np.asarray(inputs[n], np.float64)
               for n in ("query", "key", "value"))
    d = q.shape[3]
    scale = cfg.scale if cfg.scale is not None else 1.0 / np.sqrt(d)
    w, _, mask = reference.attention_weights(q, k, scale, cfg.causal)
    group = q.shape[1] // k.shape[1]
    kr, vr = (np.repeat(x, group, axis=1) for x in (k, v))
    y = np.einsum("bhij,bhje->bhie", w, vr)
    return q, kr, vr, w, mask, y, scale, group


def _sum_group(x, group):
    """[B, Hq, S, X] summed over each GQA group: [B, Hkv, S, X]."""
    b, hq = x.shape[:2]
    return x.reshape(b, hq // group, group, *x.shape[2:]).sum(axis=2)


def _to_gate(x, cfg):
    """An elementwise [B, Hq, Sq, Dv] gate term summed into the gate's
    layout."""
    if cfg.gate_width == "headwise":
        x = x.sum(axis=3, keepdims=True)
    if cfg.gate_heads == "shared":
        x = x.sum(axis=1, keepdims=True)
    return x


def reference_backward(cfg, inputs, dout):
    """{"query", "key", "value"[, "gate"]: float64 gradient} of the op of
    `cfg` on `inputs` for the output gradient `dout` (float64 arrays)."""
    q, kr, vr, w, _, y, scale, group = _forward(cfg, inputs)
    dout = np.asarray(dout, np.float64)
    gated = cfg.gate != "none"
    if gated:
        g = np.broadcast_to(np.asarray(inputs["gate"], np.float64), y.shape)
        a = reference.activation(g, cfg.gate)
        dy = dout * a if cfg.combine == "mul" else dout
    else:
        dy = dout
    delta = (dy * y).sum(axis=-1, keepdims=True)
    dp = np.einsum("bhie,bhje->bhij", dy, vr)
    ds = scale * w * (dp - delta)
    grads = {"query": np.einsum("bhij,bhjd->bhid", ds, kr),
             "key": _sum_group(np.einsum("bhij,bhid->bhjd", ds, q), group),
             "value": _sum_group(np.einsum("bhij,bhie->bhje", w, dy), group)}
    if gated:
        da = activation_derivative(g, cfg.gate)
        term = dout * y * da if cfg.combine == "mul" else dout * da
        grads["gate"] = _to_gate(term, cfg)
    return grads


def log_sum_exp(cfg, inputs):
    """reference.log_sum_exp of `cfg`'s op on `inputs`: the forward's L
    [B, Hq, Sq], +inf for a row that sees no key."""
    return reference.log_sum_exp(inputs["query"], inputs["key"], cfg.scale,
                                 cfg.causal)


def backward_error_bound(cfg, inputs, dout, out_error=None, gpu=False,
                         rounded_operands=False, flush_subnormals=False):
    """{gradient: per-element bound on |lowering - reference|} (see the
    module docstring); `out_error`: a bound on the saved output's error
    (per element, absolute; default its rounding to T: the exact output
    rounded, u |out| + half T's smallest subnormal); `rounded_operands`:
    the products' operands dY, P and dS are rounded to T; `gpu`: the
    tensor-core kernels' roundings (rounded operands and exp2 from L);
    `flush_subnormals`: the products run on the CPU's bf16 pair
    instructions, which flush subnormals."""
    rounded = rounded_operands or gpu
    u = dtypes.UNIT_ROUNDOFF[cfg.dtype]
    half_subnormal = dtypes.SMALLEST_SUBNORMAL[cfg.dtype] / 2
    q, kr, vr, w, mask, y, scale, group = _forward(cfg, inputs)
    d, skv, dv = q.shape[3], kr.shape[2], vr.shape[3]
    sq = q.shape[2]
    signed_dout = np.asarray(dout, np.float64)
    dout = np.abs(signed_dout)
    av = np.abs(vr)
    a_v = np.einsum("bhij,bhje->bhie", w, av)          # A, M(Y)
    mag = np.einsum("bhid,bhjd->bhij", np.abs(q), np.abs(kr))
    s_plus = scale * np.where(mask, mag, 0.0).max(axis=-1, keepdims=True,
                                                  initial=0.0)
    eps_s = F32_UNIT * ((np.sqrt(d) + 2) * s_plus + np.sqrt(skv) + 8)
    if gpu:
        lse = np.abs(log_sum_exp(cfg, inputs))[..., None]
        lse = np.where(np.isfinite(lse), lse, 0.0)
        eps_s = eps_s + F32_UNIT * (2 * s_plus + 3 * lse + 2)
    flush = accuracy.F32_FLUSH if flush_subnormals else 0.0
    aq, akr = np.abs(q), np.abs(kr)
    k1 = akr.sum(axis=-1).max(axis=-1, initial=0.0)[..., None, None]
    eps_s = eps_s + np.abs(scale) * flush * (d + aq.sum(axis=-1, keepdims=True) + k1)
    # Zero-padded rows and keys of the last blocks add to the flushed sums.
    pad = accuracy.CPU_KEY_BLOCK
    sum_dv = F32_UNIT * (np.sqrt(dv) + 2)
    sum_kv = F32_UNIT * (np.sqrt(skv) + 2)
    sum_rows = F32_UNIT * (np.sqrt(group * sq) + 2)

    gated = cfg.gate != "none"
    if gated:
        g = np.broadcast_to(np.asarray(inputs["gate"], np.float64), y.shape)
        eps_g = F32_UNIT * (12 + np.abs(g))
        a = np.abs(reference.activation(g, cfg.gate))
        mul = cfg.combine == "mul"
        ady = dout * a if mul else dout
        err_dy = eps_g * ady if mul else 0.0 * ady
        from_output = mul and cfg.gate in FROM_OUTPUT
    else:
        ady, err_dy, from_output = dout, 0.0 * dout, True
    if rounded and gated:
        err_dy = err_dy + u * ady

    m_dp = np.einsum("bhie,bhje->bhij", ady, av)
    err_dp = (sum_dv * m_dp + np.einsum("bhie,bhje->bhij", err_dy, av)
              + flush * (ady.sum(axis=-1)[..., None]
                         + av.sum(axis=-1)[..., None, :] + dv))
    m_delta = (ady * a_v).sum(axis=-1, keepdims=True)
    err_y = (eps_s + sum_kv) * a_v
    out = np.abs(y) * (a if gated and mul else 1.0)
    # The saved output's error: by default its rounding to T, u |out| + a
    # half subnormal (f16 outputs below 2^-14 are rounded absolutely).
    err_out = (u * out + half_subnormal if out_error is None
               else np.broadcast_to(out_error, out.shape))
    if from_output:
        err_delta = (sum_dv * dout * out + dout * err_out).sum(
            axis=-1, keepdims=True)
    else:
        err_delta = ((ady * err_y + err_dy * a_v).sum(axis=-1, keepdims=True)
                     + sum_dv * m_delta)

    # |dP - D| of the exact computation (signed values).
    signed = _signed_terms(cfg, inputs, signed_dout)
    diff = np.abs(signed["dp"] - signed["delta"])
    m_ds = scale * w * (m_dp + m_delta)
    err_ds = scale * w * (eps_s * diff + err_dp + err_delta) \
        + (3 * F32_UNIT + (u if rounded else 0.0)) * m_ds

    # The flushes of the three sums (0 unless flush_subnormals): each
    # element's terms' operands and additions.
    ads = np.abs(scale) * w * diff
    flush_q = flush * (ads.sum(axis=-1)[..., None]
                       + akr.sum(axis=-2)[..., None, :] + skv + pad)
    flush_k = flush * (ads.sum(axis=-2)[..., None] + aq.sum(axis=-2)[..., None, :]
                       + sq + pad)
    flush_v = flush * (w.sum(axis=-2)[..., None] + ady.sum(axis=-2)[..., None, :]
                       + sq + pad)
    bounds = {
        "query": (np.einsum("bhij,bhjd->bhid", err_ds, akr)
                  + sum_kv * np.einsum("bhij,bhjd->bhid", m_ds, akr)
                  + flush_q),
        "key": _sum_group(np.einsum("bhij,bhid->bhjd", err_ds, aq)
                          + sum_rows * np.einsum("bhij,bhid->bhjd", m_ds, aq)
                          + flush_k, group),
        "value": _sum_group(np.einsum("bhij,bhie->bhje", eps_s * w, ady)
                            + np.einsum("bhij,bhie->bhje", w, err_dy)
                            + (sum_rows + (u if rounded else 0.0))
                            * np.einsum("bhij,bhie->bhje", w, ady)
                            + flush_v, group)}
    if gated:
        da = np.abs(activation_derivative(g, cfg.gate))
        err_da = eps_g * _derivative_magnitude(g, cfg.gate)
        if not mul:
            term, m_term = dout * (err_da + F32_UNIT * da), dout * da
        elif from_output:
            ratio = np.where(a > 0, da / np.where(a > 0, a, 1.0), 0.0)
            m_term = dout * np.abs(y) * a * ratio
            term = (m_term * (eps_g + 3 * F32_UNIT)
                    + dout * ratio * err_out)
        else:
            m_term = dout * da * a_v
            term = dout * (da * err_y + (err_da + 3 * F32_UNIT * da) * a_v)
        n = ((dv if cfg.gate_width == "headwise" else 1)
             * (q.shape[1] if cfg.gate_heads == "shared" else 1))
        bounds["gate"] = (_to_gate(term, cfg)
                          + F32_UNIT * (np.sqrt(n) + 2) * _to_gate(m_term,
                                                                   cfg))
    ref = reference_backward(cfg, inputs, signed_dout)
    return {name: bound + u * np.abs(ref[name]) + half_subnormal
            for name, bound in bounds.items()}


def cpu_model(cfg, matrix_units="host"):
    """backward_error_bound's keywords for the tiled CPU backward of `cfg`
    compiled with `matrix_units` (--gated-attention-to-llvm's option; host:
    AVX512-BF16 where this CPU has it): a bf16 op on AVX512-BF16 or AMX
    multiplies all five products in bf16 pairs (dY, P and dS rounded, as
    torch's and the GPU kernels' products are; subnormals flushed), any
    other op in f32."""
    if matrix_units == "host":
        from . import native
        matrix_units = native.host_matrix_units()
    pairs = cfg.dtype == "bf16" and matrix_units in ("avx512-bf16", "amx")
    return {"rounded_operands": pairs, "flush_subnormals": pairs}


def _signed_terms(cfg, inputs, dout):
    """dP and D of the exact computation."""
    _, _, vr, _, _, y, _, _ = _forward(cfg, inputs)
    dout = np.asarray(dout, np.float64)
    if cfg.gate != "none" and cfg.combine == "mul":
        g = np.broadcast_to(np.asarray(inputs["gate"], np.float64), y.shape)
        dy = dout * reference.activation(g, cfg.gate)
    else:
        dy = dout
    return {"dp": np.einsum("bhie,bhje->bhij", dy, vr),
            "delta": (dy * y).sum(axis=-1, keepdims=True)}


def compare_backward(cfg, grads, inputs, dout, out_error=None, gpu=False,
                     rounded_operands=False, flush_subnormals=False):
    """{gradient: accuracy.Comparison} of a lowering's `grads` (name ->
    array) with reference_backward, element by element against
    backward_error_bound (`gpu`: that of the tensor-core kernels;
    `rounded_operands`, `flush_subnormals`: as there)."""
    ref = reference_backward(cfg, inputs, dout)
    bounds = backward_error_bound(cfg, inputs, dout, out_error, gpu,
                                  rounded_operands, flush_subnormals)
    return {name: _compare(grads[name], ref[name], bounds[name])
            for name in ref}


def _compare(out, ref, bound):
    out = np.asarray(out, np.float64)
    if out.shape != ref.shape:
        return accuracy.Comparison(False, float("inf"), float("inf"), None)
    err = np.abs(out - ref)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(np.isfinite(err), err / bound, np.inf)
    if not ratio.size:
        return accuracy.Comparison(True, 0.0, 0.0, None)
    worst = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    return accuracy.Comparison(bool(np.all(ratio <= 1.0)), float(err.max()),
                               float(ratio[worst]),
                               tuple(int(i) for i in worst))
