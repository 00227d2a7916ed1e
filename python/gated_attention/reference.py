"""Float64 numpy reference of gated_attention.attention.

Written from the op's definition, independently of any lowering: K/V heads
are repeated with numpy (the lowerings must not), the gate is broadcast by
numpy rules, and a row without a visible key gives 0.
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
    """Whether `gate` is a built-in gate or an attribute (a plugin's gate;
    its reference may be registered later)."""
    return gate in GATES or gate.startswith("#")


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
    raise ValueError(f"unknown gate activation {gate!r} (a plugin's gate "
                     f"needs reference.register_gate)")


def causal_mask(sq, skv):
    """Bottom-right aligned: query i sees key j iff j <= i + (skv - sq)."""
    i = np.arange(sq)[:, None]
    j = np.arange(skv)[None, :]
    return j <= i + (skv - sq)


def gated_attention_reference(q, k, v, g, scale=None, causal=False,
                              gate="sigmoid", combine="mul"):
    """Returns the op's result in float64.

    q: B x Hq x Sq x D, k: B x Hkv x Skv x D, v: B x Hkv x Skv x Dv,
    g: B x Hg x Sq x Dg with Hg in {Hq, 1} and Dg in {Dv, 1} (ignored, and
    may be None, for gate="none").
    """
    q, k, v = (np.asarray(t, dtype=np.float64) for t in (q, k, v))
    _, hq, sq, d = q.shape
    hkv, skv = k.shape[1], k.shape[2]
    if hq % hkv:
        raise ValueError("Hq must be a multiple of Hkv")
    if scale is None:
        scale = 1.0 / np.sqrt(d)
    group = hq // hkv
    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)

    s = np.einsum("bhid,bhjd->bhij", q, k) * scale
    if causal:
        s = np.where(causal_mask(sq, skv), s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isneginf(m), 0.0, m)
    p = np.exp(s - m)
    denom = p.sum(axis=-1, keepdims=True)
    num = np.einsum("bhij,bhje->bhie", p, v)
    y = np.divide(num, denom, out=np.zeros_like(num), where=denom > 0)

    if gate == "none":
        return y
    a = activation(np.asarray(g, dtype=np.float64), gate)
    if combine == "mul":
        return y * a
    if combine == "add":
        return y + a
    raise ValueError(f"unknown combine {combine!r}")
