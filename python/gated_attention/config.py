"""One configuration of gated_attention.attention: shapes, variant, type."""

import dataclasses
import hashlib
import itertools
import math
import numbers
import re

import numpy as np

from . import dtypes, kernel_cache, reference, runner


def check_choice(what, value, valid):
    """`value` if it is one of `valid`, else a ValueError listing them."""
    if not isinstance(value, str) or value not in valid:
        raise ValueError(f"unknown {what} {value!r}; valid: "
                         f"{', '.join(valid)}")
    return value


def check_gate(gate):
    """`gate` if it is a built-in gate, else the text of a gate attribute
    (see gate_attribute; the built-in `#gated_attention.gate<silu>` is
    "silu"); a ValueError for anything else."""
    if isinstance(gate, str) and gate in reference.GATES:
        return gate
    builtin = _BUILTIN_GATE.fullmatch(gate_attribute(gate))
    return builtin.group(1) if builtin else gate


_BUILTIN_GATE = re.compile(r"#gated_attention\.gate<(\w+)>")
# The probe gate_attribute has the tool parse: the text is the value of an
# attribute alias (exactly one attribute, or a parse error) given to a
# module attribute (printed back on the first line) and to an op's `gate`
# (whose verifier takes only gate attributes).
_PROBE_ALIAS = "#gated_attention_probe_gate"
_PROBE = """
module attributes {{gated_attention.probe = {alias}}} {{
  func.func @probe(%x: tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32> {{
    %r = gated_attention.attention %x, %x, %x, %x {{gate = {alias}}}
        : (tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>,
           tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32>
    return %r : tensor<1x1x1x1xf32>
  }}
}}
""".format(alias=_PROBE_ALIAS)
_PROBE_LINE = re.compile(r"module attributes \{gated_attention\.probe = "
                         r"(.+)\} \{")
# The tool's verdict on attribute texts: (text, tool, plugins) -> the
# attribute as the tool prints it, or the ValueError's message.
_GATE_ATTRIBUTES = {}


def _unknown_gate(gate, why=""):
    return ValueError(
        f"unknown gate {gate!r}{why}; valid: {', '.join(reference.GATES)}, "
        f"or a gate attribute: #gated_attention.gate<...> or a loaded "
        f"plugin's ('#dialect.name', see load_plugin and register_gate)")


def gate_attribute(gate):
    """The MLIR attribute of `gate` (a built-in gate other than "none", or
    an attribute's text), as the op's IR is written with it. An attribute's
    text is parsed by gated-attention-opt (with the loaded plugins), once
    per text: it must be exactly one attribute that the op takes as its
    gate (#gated_attention.gate<...>, or one a loaded plugin defines), and
    the tool's printing of it is returned; anything else (more attributes,
    other IR, a typo, a plugin not loaded) is a ValueError naming `gate`.
    The verdict is kept in the disk cache (kernel_cache), for other
    processes and for machines without the tool that run kernels compiled
    elsewhere (as the kernels are, it is taken there as it is, and where
    there is a tool only if that tool, with the same plugins, made it);
    ToolError when there is neither the tool nor a verdict."""
    if isinstance(gate, str) and gate in reference.GATES and gate != "none":
        return f"#gated_attention.gate<{gate}>"
    if not isinstance(gate, str) or not gate.startswith("#"):
        raise _unknown_gate(gate)
    opt = runner.opt_path()
    key = (gate, opt, tuple(runner.PLUGINS))
    if key not in _GATE_ATTRIBUTES:
        _GATE_ATTRIBUTES[key] = _parse_gate(gate)
    verdict = _GATE_ATTRIBUTES[key]
    if isinstance(verdict, ValueError):
        raise verdict
    return verdict


def _parse_gate(gate):
    """gate_attribute's verdict on attribute text `gate`: the attribute as
    the tool prints it, or the ValueError to raise."""
    if "\n" in gate or "\r" in gate:
        return _unknown_gate(gate, ": not one gate attribute (a line "
                             "break)")
    name = "gate-" + hashlib.sha256(gate.encode()).hexdigest()[:24]
    tool = kernel_cache.tool_identity()   # None: no tool here
    kept = kernel_cache.load_record(name) or {}
    if kept.get("gate") == gate and isinstance(kept.get("attribute"), str) \
            and "\n" not in kept["attribute"] and (
                tool is None or kept.get("tool") == tool):
        return kept["attribute"]
    if tool is None:
        raise runner.ToolError(
            f"gate={gate!r}: checking a gate attribute needs "
            f"gated-attention-opt (not found at {runner.opt_path()}: build "
            f"the project, or set GATED_ATTENTION_OPT), or the cache of a "
            f"machine that has it (GATED_ATTENTION_CACHE_DIR)")
    try:
        printed = runner.compile_module(f"{_PROBE_ALIAS} = {gate}{_PROBE}",
                                        ["--mlir-print-local-scope"])
    except runner.ToolError as e:
        errors = [line.split("error: ", 1)[1]
                  for line in str(e).splitlines() if "error: " in line]
        return _unknown_gate(gate, f": not one gate attribute "
                             f"(gated-attention-opt: "
                             f"{errors[0] if errors else str(e)[-300:]})")
    # One top-level module (other IR would have put it in an implicit one)
    # whose attribute is the alias's one value.
    found = _PROBE_LINE.fullmatch(printed.splitlines()[0]) if printed \
        else None
    if found is None:
        return _unknown_gate(gate, ": not one gate attribute (IR follows "
                             "it)")
    kernel_cache.save_record(name, {"gate": gate, "attribute": found.group(1),
                                    "tool": tool})
    return found.group(1)


def check_int(name, value, minimum):
    """`value` as an int if it is an integer (not a bool) >= minimum."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, not {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, not {value}")
    return int(value)


def check_bool(name, value):
    """`value` as a bool if it is one (or the integer 0 or 1)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral) and value in (0, 1):
        return bool(value)
    raise ValueError(f"{name} must be True or False, not {value!r}")


# The verifier's bounds on static sizes: a head dim is a tile dimension of
# every lowering; 2^48 elements leave room for byte and stride products in
# 64 bits.
MAX_HEAD_DIM = 4096
MAX_ELEMENTS = 2**48


def check_scale(scale):
    """None (1/sqrt(D)) or `scale` as a float: a real number (not a bool),
    positive and finite, and non-zero as an f32 (the attribute's type)."""
    if scale is None:
        return None
    if isinstance(scale, (bool, np.bool_)) or not isinstance(
            scale, numbers.Real):
        raise ValueError(f"scale must be a real number or None, "
                         f"not {scale!r}")
    value = float(scale)
    if not math.isfinite(value) or abs(value) > dtypes.LARGEST["f32"]:
        raise ValueError(f"scale must be finite in f32 (at most "
                         f"{dtypes.LARGEST['f32']:.7g}), not {scale!r}")
    if value <= 0 or np.float32(value) == 0:
        raise ValueError(f"scale must be positive (and non-zero in f32), "
                         f"not {scale!r}")
    return value


@dataclasses.dataclass(frozen=True)
class AttentionConfig:
    b: int = 1
    hq: int = 4
    hkv: int = 2
    sq: int = 16
    skv: int = 16
    d: int = 16
    dv: int = 16
    gate: str = "sigmoid"
    combine: str = "mul"
    causal: bool = False
    # Gate layout: per-head ("per_head", Hg = Hq) or "shared" (Hg = 1);
    # "elementwise" (Dg = Dv) or "headwise" (Dg = 1).
    gate_heads: str = "per_head"
    gate_width: str = "elementwise"
    dtype: str = "f32"
    scale: float = None
    # Dimensions passed as `?`: any of "b", "sq", "skv".
    dynamic: tuple = ()

    def __post_init__(self):
        # Every field is checked here, so that a bad value is a ValueError
        # that names it (and lists the valid values), never a tool error.
        for name in ("b", "hq", "hkv", "sq", "skv", "d", "dv"):
            # Heads and head dims of 0 make an op the verifier rejects; the
            # batch and sequence lengths may be 0 (empty rows give 0 /
            # act(G)).
            minimum = 0 if name in ("b", "sq", "skv") else 1
            self._set(name, check_int(name, getattr(self, name), minimum))
        if self.hq % self.hkv:
            raise ValueError(f"hq={self.hq} is not a multiple of hkv={self.hkv}")
        self._set("gate", check_gate(self.gate))
        check_choice("combine", self.combine, reference.COMBINES)
        if self.gate == "none" and self.combine != "mul":
            raise ValueError(f"combine={self.combine!r} needs a gate; "
                             f"gate='none' has none")
        check_choice("gate_heads", self.gate_heads, ("per_head", "shared"))
        check_choice("gate_width", self.gate_width,
                     ("elementwise", "headwise"))
        dtypes.check_dtype(self.dtype)
        self._set("causal", check_bool("causal", self.causal))
        self._set("scale", check_scale(self.scale))
        if isinstance(self.dynamic, str) or not isinstance(
                self.dynamic, (tuple, list)):
            raise ValueError(f"dynamic must be a tuple of 'b', 'sq', 'skv', "
                             f"not {self.dynamic!r}")
        bad = [d for d in self.dynamic if d not in ("b", "sq", "skv")]
        if bad:
            raise ValueError(f"only b, sq, skv may be dynamic, not {bad}")
        self._set("dynamic", tuple(self.dynamic))
        for name in ("d", "dv"):
            if getattr(self, name) > MAX_HEAD_DIM:
                raise ValueError(f"{name} must be at most {MAX_HEAD_DIM}, "
                                 f"not {getattr(self, name)}")
        for name, shape in self.shapes().items():
            if math.prod(shape) > MAX_ELEMENTS:
                raise ValueError(f"{name} of shape {list(shape)} has more "
                                 f"than 2^48 elements")

    def check_static_sizes(self):
        """Raises ValueError if the op's IR (static sizes: those not in
        `dynamic`) has a score matrix B x Hq x Sq x Skv of more than 2^48
        elements, which the verifier rejects (dynamic sizes are not
        bounded: the tiled lowerings never materialize the scores)."""
        sizes = [n for name, n in (("b", self.b), ("hq", self.hq),
                                   ("sq", self.sq), ("skv", self.skv))
                 if name not in self.dynamic]
        if 0 not in sizes and math.prod(sizes) > MAX_ELEMENTS:
            raise ValueError(f"the score matrix B x Hq x Sq x Skv of "
                             f"{self.describe()} has more than 2^48 "
                             f"elements; make B, Sq or Skv dynamic")

    def _set(self, name, value):
        object.__setattr__(self, name, value)

    # Shapes (static) and types (with `?` for the dynamic dims).
    @property
    def hg(self):
        return self.hq if self.gate_heads == "per_head" else 1

    @property
    def dg(self):
        return self.dv if self.gate_width == "elementwise" else 1

    def shapes(self):
        """Static shapes of query, key, value, gate and result."""
        b, hq, hkv, sq, skv = self.b, self.hq, self.hkv, self.sq, self.skv
        return {
            "query": (b, hq, sq, self.d),
            "key": (b, hkv, skv, self.d),
            "value": (b, hkv, skv, self.dv),
            "gate": (b, self.hg, sq, self.dg),
            "result": (b, hq, sq, self.dv),
        }

    @property
    def operands(self):
        """The op's operands: query, key, value and, if gated, gate."""
        names = ("query", "key", "value", "gate")
        return names if self.gate != "none" else names[:3]

    def types(self, static=False):
        """MLIR tensor types of query, key, value, gate and result."""
        out = {}
        for name, shape in self.shapes().items():
            seq = "skv" if name in ("key", "value") else "sq"
            symbols = ("b", None, seq, None)
            parts = ["?" if not static and sym in self.dynamic else str(size)
                     for sym, size in zip(symbols, shape)]
            out[name] = "tensor<" + "x".join(parts) + "x" + self.dtype + ">"
        return out

    def flops(self):
        """4 * B * Hq * Sq * Skv * D, the usual attention count."""
        return 4 * self.b * self.hq * self.sq * self.skv * self.d

    def describe(self):
        fields = [f"b={self.b}", f"hq={self.hq}", f"hkv={self.hkv}",
                  f"sq={self.sq}", f"skv={self.skv}", f"d={self.d}",
                  f"dv={self.dv}", f"gate={self.gate}",
                  f"combine={self.combine}", f"causal={int(self.causal)}",
                  f"gh={self.gate_heads}", f"gw={self.gate_width}",
                  f"dtype={self.dtype}"]
        if self.scale is not None:
            fields.append(f"scale={self.scale!r}")
        if self.dynamic:
            fields.append("dyn=" + "+".join(self.dynamic))
        return ",".join(fields)

    # Inputs and the reference result.
    def inputs(self, seed):
        """Deterministic random inputs, rounded to the element type (float64)."""
        rng = np.random.default_rng(seed)
        shapes = self.shapes()
        spread = {"query": 1.0, "key": 1.0, "value": 1.0, "gate": 2.0}
        return {name: dtypes.round_to(rng.standard_normal(shapes[name]) * s,
                                      self.dtype)
                for name, s in spread.items()}

    def reference(self, inputs):
        return reference.gated_attention_reference(
            inputs["query"], inputs["key"], inputs["value"], inputs["gate"],
            scale=self.scale, causal=self.causal, gate=self.gate,
            combine=self.combine)


_KEYS = {
    "b": int, "hq": int, "hkv": int, "sq": int, "skv": int, "d": int,
    "dv": int, "gate": str, "combine": str,
    "causal": lambda s: check_bool("causal", int(s)),
    "gh": str, "gw": str, "dtype": str, "scale": float,
    "dyn": lambda s: tuple(p for p in s.split("+") if p),
}
_FIELD = {"gh": "gate_heads", "gw": "gate_width", "dyn": "dynamic"}


def parse_cases(spec):
    """Expands 'key=v1|v2,key=v,...' into the cross product of configs."""
    keys, choices = [], []
    for item in filter(None, (p.strip() for p in spec.split(","))):
        key, sep, values = item.partition("=")
        if not sep or key not in _KEYS:
            raise ValueError(f"bad case item {item!r}; keys: {sorted(_KEYS)}")
        keys.append(_FIELD.get(key, key))
        try:
            choices.append([_KEYS[key](v) for v in values.split("|")])
        except ValueError as e:
            raise ValueError(f"bad case item {item!r}: {e}") from None
    return [AttentionConfig(**dict(zip(keys, combo)))
            for combo in itertools.product(*choices)]


def random_config(rng):
    """A random valid configuration covering the whole design space."""
    hkv = int(rng.choice([1, 2, 3]))
    group = int(rng.choice([1, 2, 4, 8]))
    causal = bool(rng.integers(2))
    sq = int(rng.integers(1, 40))
    skv = int(rng.integers(1, 40))
    dyn = tuple(d for d in ("b", "sq", "skv") if rng.integers(2))
    # Drawn in the order they always were, so that a seed keeps giving the
    # same configurations.
    b = int(rng.integers(1, 3))
    d = int(rng.choice([8, 16, 32, 40]))
    dv = int(rng.choice([8, 16, 24]))
    gate = str(rng.choice(reference.GATES))
    combine = str(rng.choice(reference.COMBINES))
    return AttentionConfig(
        b=b, hq=hkv * group, hkv=hkv, sq=sq, skv=skv, d=d, dv=dv, gate=gate,
        # Without a gate there is nothing to combine.
        combine="mul" if gate == "none" else combine, causal=causal,
        gate_heads=str(rng.choice(["per_head", "shared"])),
        gate_width=str(rng.choice(["elementwise", "headwise"])),
        # (The GPU-capable types: f64 is the CPU reference lowering's.)
        dtype=str(rng.choice(dtypes.DTYPES[:3])),
        scale=None if rng.integers(2) else float(rng.uniform(0.05, 0.5)),
        dynamic=dyn)
