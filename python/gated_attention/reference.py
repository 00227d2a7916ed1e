"""Float64 numpy reference of gated_attention.attention.

Written from the op's definition, independently of any lowering: K/V heads
are repeated with numpy (the lowerings must not), the gate is broadcast by
numpy rules, and a row without a visible key gives 0. What the lowerings
compute in f32 is reproduced where it decides the result, not only its
precision: a score beyond the f32 range is +-inf (see attention_weights).
"""

import numpy as np

# "none": the op without a gate operand (plain attention).
GATES = ("sigmoid", "silu", "ns_sigmoid", "none")
COMBINES = ("mul", "add")

# Gate variants added by plugins: MLIR attribute text -> numpy activation.
_VARIANTS = {}


def register_gate(attribute, fn):
    """Registers the float64 reference of a plugin's gate variant, named by
    its attribute as written in MLIR (e.g. "#gate_variants.tanh"); configs
    may then use that text as their `gate`."""
    if not attribute.startswith("#"):
        raise ValueError(f"a gate variant is an MLIR attribute, not {attribute!r}")
    _VARIANTS[attribute] = fn


def is_gate(gate):
    """Whether `gate` is a built-in gate or a gate attribute the tool
    parses as one (config.gate_attribute: a plugin's gate once loaded; its
    reference may be registered later)."""
    from . import config   # (config imports this module)
    try:
        config.check_gate(gate)
    except ValueError:
        return False
    return True


def sigmoid(x):
    # exp(-x) overflows to inf for very negative x, giving exactly 0.
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def activation(g, gate):
    """The gate activation of the op's `gate` attribute."""
    if gate == "sigmoid":
        return sigmoid(g)
    if gate == "silu":
        return g * sigmoid(g)
    if gate == "ns_sigmoid":
        return 0.5 + 0.5 * sigmoid(g)
    if gate in _VARIANTS:
        return _VARIANTS[gate](g)
    raise ValueError(f"unknown gate activation {gate!r}; valid: "
                     f"{', '.join(sorted(set(GATES) - {'none'}))} and the "
                     f"registered plugin gates {sorted(_VARIANTS)} (a "
                     f"plugin's gate needs reference.register_gate)")


def causal_mask(sq, skv):
    """Bottom-right aligned: query i sees key j iff j <= i + (skv - sq)."""
    i = np.arange(sq)[:, None]
    j = np.arange(skv)[None, :]
    return j <= i + (skv - sq)


# Scores are f32 in every lowering: beyond this they are +-inf.
F32_MAX = float(np.finfo(np.float32).max)


def attention_weights(q, k, scale=None, causal=False):
    """(softmax weights [B, Hq, Sq, Skv], row sums l [B, Hq, Sq, 1],
    visibility mask [Sq, Skv]) of the op, in float64, with K's heads
    repeated for GQA.

    Weights are exp(s - m) / l with m the row's largest visible score and
    l = sum_j exp(s_j - m) (>= 1 in a row that sees a key, 0 in a row that
    sees none, whose weights are 0). As in the op's f32 arithmetic, a score
    scale * q.k beyond the f32 range is +-inf: a row with a +inf score is
    NaN (inf - inf), as in torch's SDPA; a -inf score has weight 0 (a row
    whose visible scores are all -inf sees no key). NaN in q or k makes
    the rows that see it NaN.
    """
    q, k = (np.asarray(t, dtype=np.float64) for t in (q, k))
    hq, sq, d = q.shape[1:]
    hkv, skv = k.shape[1], k.shape[2]
    if hkv == 0 or hq % hkv:
        raise ValueError(f"Hq = {hq} is not a multiple of Hkv = {hkv}")
    if scale is None:
        scale = 1.0 / np.sqrt(d)
    k = np.repeat(k, hq // hkv, axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        s = np.einsum("bhid,bhjd->bhij", q, k) * scale
        s = np.where(np.abs(s) > F32_MAX, np.copysign(np.inf, s), s)
    mask = causal_mask(sq, skv) if causal else np.ones((sq, skv), bool)
    s = np.where(mask, s, -np.inf)
    # max() propagates NaN; an empty row (no key, or all at -inf) has
    # m = -inf, taken as 0 so that its weights are exp(-inf) = 0.
    m = s.max(axis=-1, keepdims=True, initial=-np.inf)
    m = np.where(np.isneginf(m), 0.0, m)
    with np.errstate(invalid="ignore"):
        p = np.exp(s - m)
    denom = p.sum(axis=-1, keepdims=True)
    # 0 / 0 only in empty rows, whose weights are 0; NaN stays NaN.
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(denom == 0, 0.0, p / denom)
    return w, denom, mask


def log_sum_exp(q, k, scale=None, causal=False):
    """The op's log-sum-exp result [B, Hq, Sq] in float64: m + log(l) with
    m and l those of attention_weights (the scaled, masked scores' largest
    value and sum of exp(s - m)), +inf in a row that sees no key (l = 0),
    so that exp(s - L) = 0 there."""
    q, k = (np.asarray(t, dtype=np.float64) for t in (q, k))
    w, l, mask = attention_weights(q, k, scale, causal)
    if scale is None:
        scale = 1.0 / np.sqrt(q.shape[3])
    kr = np.repeat(k, q.shape[1] // k.shape[1], axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        s = np.einsum("bhid,bhjd->bhij", q, kr) * scale
    m = np.where(mask, s, -np.inf).max(axis=-1, initial=-np.inf)
    m = np.where(np.isneginf(m), 0.0, m)
    l = l[..., 0]
    with np.errstate(divide="ignore"):
        return np.where(l == 0, np.inf, m + np.log(np.where(l == 0, 1.0, l)))


def gated_attention_reference(q, k, v, g, scale=None, causal=False,
                              gate="sigmoid", combine="mul"):
    """Returns the op's result in float64.

    q: B x Hq x Sq x D, k: B x Hkv x Skv x D, v: B x Hkv x Skv x Dv,
    g: B x Hg x Sq x Dg with Hg in {Hq, 1} and Dg in {Dv, 1} (ignored, and
    may be None, for gate="none").

    A row that sees no key (Skv = 0, or causal with Sq > Skv) is 0 before
    the gate: 0 for combine="mul", act(g) for "add". NaN and inf propagate
    as IEEE arithmetic makes them (see attention_weights for scores that
    overflow f32): a NaN in q or k makes the rows that see it NaN; a NaN in
    v makes its column NaN in every row here (0 * NaN is NaN, as in
    torch's math SDPA; the lowerings guarantee it only in the rows that
    see its key); a NaN in g makes the outputs it gates NaN.
    """
    v = np.asarray(v, dtype=np.float64)
    w, _, _ = attention_weights(q, k, scale, causal)
    v = np.repeat(v, w.shape[1] // v.shape[1], axis=1)
    with np.errstate(invalid="ignore"):
        y = np.einsum("bhij,bhje->bhie", w, v)

    if gate == "none":
        return y
    a = activation(np.asarray(g, dtype=np.float64), gate)
    if combine == "mul":
        return y * a
    if combine == "add":
        return y + a
    raise ValueError(f"unknown combine {combine!r}; valid: "
                     f"{', '.join(COMBINES)}")
