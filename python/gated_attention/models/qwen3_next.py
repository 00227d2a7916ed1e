"""The full-attention block of Qwen3-Next as an MLIR graph, and its reference.

    python3 -m gated_attention.models.qwen3_next --batch 1 --seq 8 --emit block.mlir
    python3 -m gated_attention.models.qwen3_next --batch 1 --seq 8 --check

The block (hidden 2048, 16 query heads over 2 KV heads, head dim 256):
q_proj 2048 -> 16 * 2 * 256, laid out per head as [query(256) | gate(256)];
k_proj, v_proj 2048 -> 2 * 256; RMSNorm of q and k over the head dim with a
zero-centred weight, x * rsqrt(mean(x^2) + eps) * (1 + w); rotary embedding
on the first 64 of the 256 dims (rotate-half form, cos/sin tables given per
position); gated attention (causal, elementwise sigmoid gate, GQA); o_proj
4096 -> 2048. Everything but the attention is upstream linalg / tensor /
arith / math on tensors, as a frontend would write it; weights, norms and
rotary tables are function arguments.

--check compiles the graph with --gated-attention-to-llvm into a shared
library, runs it on random inputs and compares with the float64 numpy
reference (f32 tolerance 2e-4: the projections sum 2048 products in f32).
"""

import argparse
import sys

import numpy as np

HIDDEN, HQ, HKV, D, ROTARY, EPS = 2048, 16, 2, 256, 64, 1e-6
# Gate positions of the paper: G1 after attention (the op's gate, Qwen3-Next's
# choice), G2 on the values, G3 on the keys, G4 on the queries, G5 after the
# output projection; each an elementwise sigmoid(x W_g) of its own width.
POSITIONS = ("G1", "G2", "G3", "G4", "G5")
GATE_WIDTH = {"G2": HKV * D, "G3": HKV * D, "G4": HQ * D, "G5": HIDDEN}


def args(position="G1"):
    """The function's arguments, in order."""
    names = ["x", "wq", "wk", "wv", "q_norm", "k_norm", "cos", "sin", "wo"]
    if position != "G1":
        names.append("wg")
    return tuple(names)


ARGS = args()


def shapes(b, s, position="G1"):
    q_width = HQ * 2 * D if position == "G1" else HQ * D
    out = {"x": (b, s, HIDDEN), "wq": (HIDDEN, q_width),
           "wk": (HIDDEN, HKV * D), "wv": (HIDDEN, HKV * D),
           "q_norm": (D,), "k_norm": (D,), "cos": (s, ROTARY),
           "sin": (s, ROTARY), "wo": (HQ * D, HIDDEN)}
    if position != "G1":
        out["wg"] = (HIDDEN, GATE_WIDTH[position])
    return out


def _t(shape, dtype):
    return "tensor<" + "x".join(str(n) for n in shape) + f"x{dtype}>"


class _Builder:
    """Straight-line MLIR text with fresh SSA names."""

    def __init__(self, dtype):
        self.dtype, self.lines, self.n = dtype, [], 0

    def fresh(self):
        self.n += 1
        return f"%v{self.n}"

    def emit(self, text):
        name = self.fresh()
        self.lines.append(f"  {name} = {text}")
        return name

    def empty(self, shape):
        return self.emit(f"tensor.empty() : {_t(shape, self.dtype)}")

    def zeros(self, shape):
        e = self.empty(shape)
        return self.emit(f"linalg.fill ins(%zero : {self.dtype}) outs({e} : "
                         f"{_t(shape, self.dtype)}) -> {_t(shape, self.dtype)}")

    def matmul(self, a, b, m, k, n):
        t = self.dtype
        out = self.zeros((m, n))
        return self.emit(f"linalg.matmul ins({a}, {b} : {_t((m, k), t)}, "
                         f"{_t((k, n), t)}) outs({out} : {_t((m, n), t)}) -> "
                         f"{_t((m, n), t)}")

    def transpose(self, x, shape, perm):
        out_shape = [shape[p] for p in perm]
        out = self.empty(out_shape)
        return self.emit(
            f"linalg.transpose ins({x} : {_t(shape, self.dtype)}) outs({out} : "
            f"{_t(out_shape, self.dtype)}) permutation = "
            f"[{', '.join(map(str, perm))}]"), out_shape

    def rms_norm(self, x, shape, weight):
        """x * rsqrt(mean(x^2) + eps) * (1 + w) over the last dim."""
        t = self.dtype
        b, h, s, d = shape
        ss = self.zeros((b, h, s))
        ss = self.emit(
            "linalg.generic {indexing_maps = [affine_map<(b, h, s, d) -> (b, h, s, d)>, "
            "affine_map<(b, h, s, d) -> (b, h, s)>], iterator_types = "
            '["parallel", "parallel", "parallel", "reduction"]} '
            f"ins({x} : {_t(shape, t)}) outs({ss} : {_t((b, h, s), t)}) {{\n"
            f"  ^bb0(%a: {t}, %acc: {t}):\n"
            f"    %sq = arith.mulf %a, %a : {t}\n"
            f"    %sum = arith.addf %acc, %sq : {t}\n"
            f"    linalg.yield %sum : {t}\n"
            f"  }} -> {_t((b, h, s), t)}")
        out = self.empty(shape)
        return self.emit(
            "linalg.generic {indexing_maps = [affine_map<(b, h, s, d) -> (b, h, s, d)>, "
            "affine_map<(b, h, s, d) -> (b, h, s)>, affine_map<(b, h, s, d) -> (d)>, "
            "affine_map<(b, h, s, d) -> (b, h, s, d)>], iterator_types = "
            '["parallel", "parallel", "parallel", "parallel"]} '
            f"ins({x}, {ss}, {weight} : {_t(shape, t)}, {_t((b, h, s), t)}, "
            f"{_t((d,), t)}) outs({out} : {_t(shape, t)}) {{\n"
            f"  ^bb0(%a: {t}, %s: {t}, %w: {t}, %o: {t}):\n"
            f"    %mean = arith.divf %s, %dim : {t}\n"
            f"    %var = arith.addf %mean, %eps : {t}\n"
            f"    %inv = math.rsqrt %var : {t}\n"
            f"    %y = arith.mulf %a, %inv : {t}\n"
            f"    %w1 = arith.addf %w, %one : {t}\n"
            f"    %z = arith.mulf %y, %w1 : {t}\n"
            f"    linalg.yield %z : {t}\n"
            f"  }} -> {_t(shape, t)}")

    def binary(self, a, b, shape, body):
        """Elementwise generic of `a` and `b` (block arguments %a, %c);
        `body` are scalar ops (`{t}` the element type) defining %r."""
        t = self.dtype
        out = self.empty(shape)
        rank = len(shape)
        dims = ", ".join(f"d{i}" for i in range(rank))
        ident = f"affine_map<({dims}) -> ({dims})>"
        iters = ", ".join(['"parallel"'] * rank)
        lines = "".join(f"    {line.format(t=t)}\n" for line in body)
        return self.emit(
            f"linalg.generic {{indexing_maps = [{ident}, {ident}, {ident}], "
            f"iterator_types = [{iters}]}} "
            f"ins({a}, {b} : {_t(shape, t)}, {_t(shape, t)}) outs({out} : "
            f"{_t(shape, t)}) {{\n"
            f"  ^bb0(%a: {t}, %c: {t}, %o: {t}):\n{lines}"
            f"    linalg.yield %r : {t}\n"
            f"  }} -> {_t(shape, t)}")

    def sigmoid_gate(self, x, g, shape):
        """x * sigmoid(g), elementwise, as a frontend spells it."""
        return self.binary(x, g, shape, [
            "%n = arith.negf %c : {t}", "%e = math.exp %n : {t}",
            "%den = arith.addf %one, %e : {t}",
            "%sg = arith.divf %one, %den : {t}", "%r = arith.mulf %a, %sg : {t}"])

    def rotary(self, x, shape, cos, sin):
        """Rotate-half rotary embedding of the first ROTARY dims."""
        t = self.dtype
        b, h, s, d = shape
        half = ROTARY // 2
        hs = (b, h, s, half)

        def slice4(v, off):
            return self.emit(
                f"tensor.extract_slice {v}[0, 0, 0, {off}] [{b}, {h}, {s}, {half}] "
                f"[1, 1, 1, 1] : {_t(shape, t)} to {_t(hs, t)}")

        def slice2(v, off):
            return self.emit(
                f"tensor.extract_slice {v}[0, {off}] [{s}, {half}] [1, 1] : "
                f"{_t((s, ROTARY), t)} to {_t((s, half), t)}")

        x1, x2 = slice4(x, 0), slice4(x, half)
        c1, c2 = slice2(cos, 0), slice2(cos, half)
        s1, s2 = slice2(sin, 0), slice2(sin, half)

        def combine(a, bb, c, sn, op):
            out = self.empty(hs)
            return self.emit(
                "linalg.generic {indexing_maps = [affine_map<(b, h, s, d) -> (b, h, s, d)>, "
                "affine_map<(b, h, s, d) -> (b, h, s, d)>, affine_map<(b, h, s, d) -> (s, d)>, "
                "affine_map<(b, h, s, d) -> (s, d)>, affine_map<(b, h, s, d) -> (b, h, s, d)>], "
                'iterator_types = ["parallel", "parallel", "parallel", "parallel"]} '
                f"ins({a}, {bb}, {c}, {sn} : {_t(hs, t)}, {_t(hs, t)}, "
                f"{_t((s, half), t)}, {_t((s, half), t)}) outs({out} : {_t(hs, t)}) {{\n"
                f"  ^bb0(%p: {t}, %q: {t}, %c: {t}, %sn: {t}, %o: {t}):\n"
                f"    %pc = arith.mulf %p, %c : {t}\n"
                f"    %qs = arith.mulf %q, %sn : {t}\n"
                f"    %r = arith.{op} %pc, %qs : {t}\n"
                f"    linalg.yield %r : {t}\n"
                f"  }} -> {_t(hs, t)}")

        # First half: x1 cos - x2 sin; second half: x2 cos + x1 sin.
        r1 = combine(x1, x2, c1, s1, "subf")
        r2 = combine(x2, x1, c2, s2, "addf")
        y = self.emit(f"tensor.insert_slice {r1} into {x}[0, 0, 0, 0] "
                      f"[{b}, {h}, {s}, {half}] [1, 1, 1, 1] : {_t(hs, t)} into "
                      f"{_t(shape, t)}")
        return self.emit(f"tensor.insert_slice {r2} into {y}[0, 0, 0, {half}] "
                         f"[{b}, {h}, {s}, {half}] [1, 1, 1, 1] : {_t(hs, t)} into "
                         f"{_t(shape, t)}")


def attention_block(b, s, dtype="f32", name="qwen3_next_attention",
                    position="G1"):
    """MLIR text of the block as one func.func (with a C interface), gated
    at `position` (one of POSITIONS)."""
    if position not in POSITIONS:
        raise ValueError(f"unknown gate position {position!r}")
    t = dtype
    n = b * s
    sh = shapes(b, s, position)
    bld = _Builder(t)
    x2 = bld.emit(f"tensor.collapse_shape %x [[0, 1], [2]] : "
                  f"{_t(sh['x'], t)} into {_t((n, HIDDEN), t)}")
    qg = bld.matmul(x2, "%wq", n, HIDDEN, sh["wq"][1])
    k = bld.matmul(x2, "%wk", n, HIDDEN, HKV * D)
    v = bld.matmul(x2, "%wv", n, HIDDEN, HKV * D)
    if position != "G1":
        # The gate of G2-G5, sigmoid(x W_g), applied where it belongs.
        gw = bld.matmul(x2, "%wg", n, HIDDEN, GATE_WIDTH[position])
        target = {"G2": "v", "G3": "k", "G4": "q"}.get(position)
        width = GATE_WIDTH[position]
        if target == "v":
            v = bld.sigmoid_gate(v, gw, (n, width))
        elif target == "k":
            k = bld.sigmoid_gate(k, gw, (n, width))
        elif target == "q":
            qg = bld.sigmoid_gate(qg, gw, (n, width))

    def heads(val, h):
        e = bld.emit(f"tensor.expand_shape {val} [[0, 1], [2, 3]] output_shape "
                     f"[{b}, {s}, {h}, {D}] : {_t((n, h * D), t)} into "
                     f"{_t((b, s, h, D), t)}")
        return bld.transpose(e, (b, s, h, D), (0, 2, 1, 3))[0]

    if position == "G1":
        # Per head [query | gate]: split, then [B, S, H, D] -> [B, H, S, D].
        qg4 = bld.emit(
            f"tensor.expand_shape {qg} [[0, 1], [2, 3, 4]] output_shape "
            f"[{b}, {s}, {HQ}, 2, {D}] : {_t((n, HQ * 2 * D), t)} into "
            f"{_t((b, s, HQ, 2, D), t)}")

        def part(i):
            return bld.emit(f"tensor.extract_slice {qg4}[0, 0, 0, {i}, 0] "
                            f"[{b}, {s}, {HQ}, 1, {D}] [1, 1, 1, 1, 1] : "
                            f"{_t((b, s, HQ, 2, D), t)} to "
                            f"{_t((b, s, HQ, D), t)}")

        q, _ = bld.transpose(part(0), (b, s, HQ, D), (0, 2, 1, 3))
        g, _ = bld.transpose(part(1), (b, s, HQ, D), (0, 2, 1, 3))
    else:
        q, g = heads(qg, HQ), None
    k, v = heads(k, HKV), heads(v, HKV)

    q = bld.rotary(bld.rms_norm(q, (b, HQ, s, D), "%q_norm"), (b, HQ, s, D),
                   "%cos", "%sin")
    k = bld.rotary(bld.rms_norm(k, (b, HKV, s, D), "%k_norm"), (b, HKV, s, D),
                   "%cos", "%sin")
    qt, kt = _t((b, HQ, s, D), t), _t((b, HKV, s, D), t)
    if g is not None:
        attn = bld.emit(f"gated_attention.attention {q}, {k}, {v}, {g} "
                        f"{{causal}}\n      : ({qt}, {kt}, {kt}, {qt}) -> {qt}")
    else:
        attn = bld.emit(f"gated_attention.attention {q}, {k}, {v} {{causal}}\n"
                        f"      : ({qt}, {kt}, {kt}) -> {qt}")
    o, _ = bld.transpose(attn, (b, HQ, s, D), (0, 2, 1, 3))
    o2 = bld.emit(f"tensor.collapse_shape {o} [[0, 1], [2, 3]] : "
                  f"{_t((b, s, HQ, D), t)} into {_t((n, HQ * D), t)}")
    y = bld.matmul(o2, "%wo", n, HQ * D, HIDDEN)
    if position == "G5":
        y = bld.sigmoid_gate(y, gw, (n, HIDDEN))
    y3 = bld.emit(f"tensor.expand_shape {y} [[0, 1], [2]] output_shape "
                  f"[{b}, {s}, {HIDDEN}] : {_t((n, HIDDEN), t)} into "
                  f"{_t((b, s, HIDDEN), t)}")
    params = ", ".join(f"%{a}: {_t(sh[a], t)}" for a in args(position))
    head = [f"func.func @{name}({params}) -> {_t(sh['x'], t)} "
            "attributes {llvm.emit_c_interface} {",
            f"  %zero = arith.constant 0.0 : {t}",
            f"  %one = arith.constant 1.0 : {t}",
            f"  %dim = arith.constant {float(D)} : {t}",
            f"  %eps = arith.constant {EPS:.6e} : {t}"]
    return "\n".join(head + bld.lines +
                     [f"  return {y3} : {_t(sh['x'], t)}", "}", ""])


def stand_in_block(b, s, dtype="f32", name="stand_in", ffn=4096):
    """A stand-in for the linear-attention layers of the model (which this
    project does not compile): RMSNorm-free SwiGLU MLP x + W2 (silu(x W1) *
    (x W3)), as a func of the same hidden size."""
    t = dtype
    n = b * s
    bld = _Builder(t)
    x2 = bld.emit(f"tensor.collapse_shape %x [[0, 1], [2]] : "
                  f"{_t((b, s, HIDDEN), t)} into {_t((n, HIDDEN), t)}")
    h1 = bld.matmul(x2, "%w1", n, HIDDEN, ffn)
    h3 = bld.matmul(x2, "%w3", n, HIDDEN, ffn)
    # silu(h1) * h3, then the residual x + W2(...).
    h = bld.binary(h1, h3, (n, ffn), [
        "%na = arith.negf %a : {t}", "%ea = math.exp %na : {t}",
        "%den = arith.addf %one, %ea : {t}", "%sa = arith.divf %a, %den : {t}",
        "%r = arith.mulf %sa, %c : {t}"])
    y = bld.matmul(h, "%w2", n, ffn, HIDDEN)
    r = bld.binary(x2, y, (n, HIDDEN), ["%r = arith.addf %a, %c : {t}"])
    y3 = bld.emit(f"tensor.expand_shape {r} [[0, 1], [2]] output_shape "
                  f"[{b}, {s}, {HIDDEN}] : {_t((n, HIDDEN), t)} into "
                  f"{_t((b, s, HIDDEN), t)}")
    params = (f"%x: {_t((b, s, HIDDEN), t)}, %w1: {_t((HIDDEN, ffn), t)}, "
              f"%w3: {_t((HIDDEN, ffn), t)}, %w2: {_t((ffn, HIDDEN), t)}")
    head = [f"func.func private @{name}({params}) -> {_t((b, s, HIDDEN), t)} {{",
            f"  %zero = arith.constant 0.0 : {t}",
            f"  %one = arith.constant 1.0 : {t}"]
    return "\n".join(head + bld.lines +
                      [f"  return {y3} : {_t((b, s, HIDDEN), t)}", "}", ""])


def model(layers, b=1, s=64, dtype="bf16"):
    """A Qwen3-Next-like stack: `layers` layers, every 4th the gated
    attention block, the others the stand-in block, each layer with weights
    of its own (function arguments), chained through the hidden state. The
    layers are inlined into @model, as a frontend exports a whole graph."""
    t = dtype
    x = _t((b, s, HIDDEN), t)
    att_args = args("G1")[1:]
    att_shapes = shapes(b, s)
    ffn = 4096
    mlp_shapes = {"w1": (HIDDEN, ffn), "w3": (HIDDEN, ffn), "w2": (ffn, HIDDEN)}
    params, body = [f"%x: {x}"], []
    h = "%x"
    for layer in range(layers):
        if layer % 4 == 3:
            names = [f"%l{layer}_{a}" for a in att_args]
            params += [f"{n}: {_t(att_shapes[a], t)}"
                       for n, a in zip(names, att_args)]
            types = ", ".join(_t(att_shapes[a], t) for a in args("G1"))
            body.append(f"  %h{layer} = func.call @qwen3_next_attention({h}, "
                        f"{', '.join(names)}) : ({types}) -> {x}")
        else:
            names = [f"%l{layer}_{w}" for w in ("w1", "w3", "w2")]
            params += [f"{n}: {_t(mlp_shapes[w], t)}"
                       for n, w in zip(names, ("w1", "w3", "w2"))]
            types = ", ".join([x] + [_t(mlp_shapes[w], t)
                                     for w in ("w1", "w3", "w2")])
            body.append(f"  %h{layer} = func.call @stand_in({h}, "
                        f"{', '.join(names)}) : ({types}) -> {x}")
        h = f"%h{layer}"
    attention = attention_block(b, s, dtype).replace(
        "func.func @qwen3_next_attention", "func.func private @qwen3_next_attention"
    ).replace(" attributes {llvm.emit_c_interface}", "")
    return (attention + "\n" + stand_in_block(b, s, dtype, ffn=ffn) + "\n"
            + f"func.func @model({', '.join(params)}) -> {x} {{\n"
            + "\n".join(body) + f"\n  return {h} : {x}\n}}\n")


# --- reference ---------------------------------------------------------------

def _rms_norm(x, w):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * (1 + w)


def _rotary(x, cos, sin):
    half = ROTARY // 2
    x = x.copy()
    x1, x2 = x[..., :half].copy(), x[..., half:ROTARY].copy()
    x[..., :half] = x1 * cos[:, :half] - x2 * sin[:, :half]
    x[..., half:ROTARY] = x2 * cos[:, half:] + x1 * sin[:, half:]
    return x


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def reference(x, wq, wk, wv, q_norm, k_norm, cos, sin, wo, wg=None,
              position="G1"):
    """float64 numpy reference of the block."""
    from ..reference import gated_attention_reference
    b, s, _ = x.shape
    x2 = x.reshape(b * s, HIDDEN)
    q, k, v = x2 @ wq, x2 @ wk, x2 @ wv
    gate = _sigmoid(x2 @ wg) if position != "G1" else None
    if position == "G2":
        v = v * gate
    elif position == "G3":
        k = k * gate
    elif position == "G4":
        q = q * gate
    if position == "G1":
        qg = q.reshape(b, s, HQ, 2, D)
        q = qg[:, :, :, 0].transpose(0, 2, 1, 3)
        g = qg[:, :, :, 1].transpose(0, 2, 1, 3)
    else:
        q = q.reshape(b, s, HQ, D).transpose(0, 2, 1, 3)
        g = None
    k = k.reshape(b, s, HKV, D).transpose(0, 2, 1, 3)
    v = v.reshape(b, s, HKV, D).transpose(0, 2, 1, 3)
    q = _rotary(_rms_norm(q, q_norm), cos, sin)
    k = _rotary(_rms_norm(k, k_norm), cos, sin)
    o = gated_attention_reference(q, k, v, g, causal=True,
                                  gate="sigmoid" if g is not None else "none")
    y = o.transpose(0, 2, 1, 3).reshape(b * s, HQ * D) @ wo
    if position == "G5":
        y = y * gate
    return y.reshape(b, s, HIDDEN)


def random_inputs(b, s, seed=0, position="G1"):
    """Inputs at the scale of a trained model (unit-variance projections)."""
    rng = np.random.default_rng(seed)
    sh = shapes(b, s, position)
    out = {"x": rng.standard_normal(sh["x"])}
    for w in ("wq", "wk", "wv"):
        out[w] = rng.standard_normal(sh[w]) / np.sqrt(HIDDEN)
    out["wo"] = rng.standard_normal(sh["wo"]) / np.sqrt(HQ * D)
    out["q_norm"] = rng.standard_normal(D) * 0.1
    out["k_norm"] = rng.standard_normal(D) * 0.1
    pos = np.arange(s)[:, None]
    freq = 10000.0 ** (-np.arange(ROTARY // 2) / (ROTARY // 2))
    angles = np.concatenate([pos * freq, pos * freq], axis=1)
    out["cos"], out["sin"] = np.cos(angles), np.sin(angles)
    if position != "G1":
        out["wg"] = rng.standard_normal(sh["wg"]) / np.sqrt(HIDDEN)
    return {k: v.astype(np.float32).astype(np.float64) for k, v in out.items()}


class Block:
    """The block compiled for this CPU (f32): call it with the inputs of
    random_inputs / shapes (keyword arguments named as args()); the result
    [B, S, 2048] comes back as float64."""

    def __init__(self, b, s, position="G1"):
        from .. import compiler
        self.b, self.s, self.position = b, s, position
        self.ir = attention_block(b, s, position=position)
        self.lib = compiler.compile_cpu(self.ir)

    @property
    def args(self):
        return args(self.position)

    def __call__(self, **inputs):
        missing = set(self.args) - set(inputs)
        if missing:
            raise ValueError(f"missing inputs {sorted(missing)}")
        out = self.lib.call("qwen3_next_attention",
                            [np.asarray(inputs[a], np.float32)
                             for a in self.args], 3, np.float32)
        return out.astype(np.float64)

    def random_inputs(self, seed=0):
        return random_inputs(self.b, self.s, seed, self.position)

    def reference(self, **inputs):
        return reference(*(inputs[a] for a in self.args),
                         position=self.position)


def check(b, s, seed=0, position="G1"):
    """(ok, max abs error) of the CPU-compiled block against the reference."""
    block = Block(b, s, position)
    inputs = block.random_inputs(seed)
    ref = block.reference(**inputs)
    err = np.abs(block(**inputs) - ref)
    ok = bool(np.all(err <= 2e-4 + 2e-4 * np.abs(ref)))
    return ok, float(err.max())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seq", type=int, default=8)
    p.add_argument("--dtype", default="f32", choices=("f32", "f16", "bf16"))
    p.add_argument("--gate-position", default="G1", choices=POSITIONS,
                   help="where the sigmoid gate sits (paper's G1-G5)")
    p.add_argument("--emit", metavar="FILE", help="write the graph to FILE "
                   "('-' for stdout)")
    p.add_argument("--check", action="store_true")
    args = p.parse_args(argv)
    if args.emit:
        text = attention_block(args.batch, args.seq, args.dtype,
                               position=args.gate_position)
        if args.emit == "-":
            sys.stdout.write(text)
        else:
            with open(args.emit, "w") as f:
                f.write(text)
    if args.check:
        ok, err = check(args.batch, args.seq, position=args.gate_position)
        print(f"{'PASS' if ok else 'FAIL'} qwen3_next_attention b={args.batch} "
              f"s={args.seq} gate={args.gate_position} max_abs_err={err:.3g}")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
