"""MLIR text for attention ops and runnable test modules.

A test module holds one function per case (the op alone, with the case's
types) and a `main` that materializes the inputs as dense constants (raw hex,
so f16/bf16 values are exact), calls each case and prints its result with
`printMemrefF32`, as upstream integration tests do.
"""

import collections.abc

import numpy as np

from . import config, dtypes, reference

OPERANDS = ("query", "key", "value", "gate")


def f32_literal(value):
    """`value` as an exact MLIR f32 literal: the hexadecimal bit pattern of
    its f32 rounding (`0x3E000000` is 0.125), which the parser takes as is;
    a decimal (`1e-05`, `1e+16`, an int) may not parse or may round twice."""
    bits = np.array([value], dtype=np.float32).view(np.uint32)[0]
    return f"0x{int(bits):08X}"


ROW_STRIDE_OPERANDS = ("q", "k", "v", "gate", "out")


def attention_attributes(cfg, row_strides=None):
    """The op's attribute dictionary; `row_strides` ({name: elements} for
    some of ROW_STRIDE_OPERANDS, the rest row-major) becomes
    gated_attention.row_strides, the layout of the buffers a kernel
    launched outside MLIR is given. Every attribute is written from a
    checked value (the gate from the tool's parse of it: see
    config.gate_attribute), never from text as given."""
    attrs = []
    if config.check_bool("causal", cfg.causal):
        attrs.append("causal")
    gated = cfg.gate != "none"
    combine = config.check_choice("combine", cfg.combine, reference.COMBINES)
    if combine != "mul" and gated:
        attrs.append(f"combine = #gated_attention.combine<{combine}>")
    if gated and cfg.gate != "sigmoid":   # sigmoid: the default
        attrs.append(f"gate = {config.gate_attribute(cfg.gate)}")
    scale = config.check_scale(cfg.scale)
    if scale is not None:
        attrs.append(f"scale = {f32_literal(scale)} : f32")
    if row_strides:
        if not isinstance(row_strides, collections.abc.Mapping):
            raise ValueError(f"row_strides must be a dict {{operand: "
                             f"elements}}, not {row_strides!r}")
        unknown = [n for n in row_strides if n not in ROW_STRIDE_OPERANDS]
        if unknown:
            raise ValueError(f"row_strides: unknown operands {unknown};"
                             f" expected some of {ROW_STRIDE_OPERANDS}")
        widths = {"q": cfg.d, "k": cfg.d, "v": cfg.dv,
                  "gate": cfg.dg if gated else 1, "out": cfg.dv}
        values = []
        for n in ROW_STRIDE_OPERANDS:
            # Rows never overlap, and sizes stay within 2^48 (the verifier's
            # rules, checked here to name the argument).
            stride = config.check_int(f"row_strides[{n!r}]",
                                      row_strides.get(n, widths[n]),
                                      widths[n])
            if stride > config.MAX_ELEMENTS:
                raise ValueError(f"row_strides[{n!r}] must be at most 2^48, "
                                 f"not {stride}")
            values.append(str(stride))
        attrs.append(f"gated_attention.row_strides = array<i64: "
                     f"{', '.join(values)}>")
    return "{" + ", ".join(attrs) + "}" if attrs else ""


def attention_function(cfg, name, c_interface=False, row_strides=None,
                       lse=False):
    """func.func @name(q, k, v, g) -> result holding one attention op;
    `c_interface` adds `llvm.emit_c_interface` for calls from C / ctypes;
    `row_strides` as for attention_attributes; with `lse` the op (and the
    function) also returns its log-sum-exp (f32 [B, Hq, Sq])."""
    cfg.check_static_sizes()
    t = cfg.types()
    args = ", ".join(f"%{o[0]}: {t[o]}" for o in cfg.operands)
    in_types = ", ".join(t[o] for o in cfg.operands)
    operands = ", ".join(f"%{o[0]}" for o in cfg.operands)
    attrs = attention_attributes(cfg, row_strides)
    fattrs = " attributes {llvm.emit_c_interface}" if c_interface else ""
    results = [t["result"]] + ([lse_type(cfg)] if lse else [])
    types = ", ".join(results)
    if lse:
        types = f"({types})"
    values = ", ".join(f"%r#{i}" for i in range(len(results))) if lse \
        else "%r"
    count = f":{len(results)}" if lse else ""
    return (
        f"func.func @{name}({args}) -> {types}{fattrs} {{\n"
        f"  %r{count} = gated_attention.attention {operands} {attrs}\n"
        f"      : ({in_types}) -> {types}\n"
        f"  return {values} : {', '.join(results)}\n"
        f"}}\n")


def strided_type(tensor_type):
    """The memref type viewing any buffer of `tensor_type`'s shape whose
    innermost dim is contiguous: `memref<...,  strided<[?, ?, ?, 1],
    offset: ?>>` (strides in elements, passed at run time)."""
    body = tensor_type[len("tensor<"):-1]
    rank = body.count("x")
    strides = ", ".join(["?"] * (rank - 1) + ["1"])
    return f"memref<{body}, strided<[{strides}], offset: ?>>"


def lse_type(cfg):
    """The MLIR type of the op's log-sum-exp result: [B, Hq, Sq] in the
    accumulator type (f32; f64 for f64), as dynamic as the result."""
    dims = cfg.types()["result"][len("tensor<"):-1].split("x")[:3]
    return ("tensor<" + "x".join(dims) + "x" + dtypes.ACCUMULATOR[cfg.dtype]
            + ">")


def buffer_function(cfg, name, op, ins, outs, types, lse=None,
                     buffer_type=strided_type):
    """func.func @name(ins...[, lse], outs...) on buffers of `buffer_type`
    (by default strided: any strides but a contiguous innermost dim): `op`
    (`gated_attention.attention`, `attention_backward` or `paged_attention`,
    with the attributes of `cfg`) on the tensors of
    `ins` (and the backward's `lse(...)` operand), each of its results
    computed in the matching buffer of `outs` (no result-sized buffer, no
    copy); C interface. `ins`, `outs` and `lse` are (name, key of `types`)
    pairs."""
    read = ins + ([lse] if lse else [])
    args = ", ".join(f"%{n}: {buffer_type(types[k])}" for n, k in read + outs)
    lines = [f"func.func @{name}({args}) attributes "
             f"{{llvm.emit_c_interface}} {{\n"]
    for n, k in read:
        lines.append(f"  %{n}t = bufferization.to_tensor %{n} restrict : "
                     f"{buffer_type(types[k])} to {types[k]}\n")
    operands = ", ".join(f"%{n}t" for n, _ in ins)
    if lse:
        operands += f" lse(%{lse[0]}t)"
    in_types = ", ".join(types[k] for _, k in read)
    out_types = ", ".join(types[k] for _, k in outs)
    lines.append(f"  %r:{len(outs)} = {op} {operands} "
                 f"{attention_attributes(cfg)}\n"
                 f"      : ({in_types}) -> ({out_types})\n")
    for i, (n, k) in enumerate(outs):
        lines.append(f"  bufferization.materialize_in_destination %r#{i} in "
                     f"restrict writable %{n} : ({types[k]}, "
                     f"{buffer_type(types[k])}) -> ()\n")
    lines.append("  return\n}\n")
    return "".join(lines)


def destination_function(cfg, name, lse=False):
    """func.func @name(q, k, v[, g], out[, lse]) on strided buffers (views
    of other frameworks' tensors), computing the op into `out`, and with
    `lse` its log-sum-exp (lse_type: f32 [B, Hq, Sq], f64 for f64) into
    `lse`; C interface. With
    --gated-attention-to-llvm the result is computed in `out`."""
    cfg.check_static_sizes()
    t = dict(cfg.types())
    t["lse"] = lse_type(cfg)
    outs = [("o", "result")] + ([("l", "lse")] if lse else [])
    ins = [(o[0], o) for o in cfg.operands]
    return buffer_function(cfg, name, "gated_attention.attention", ins, outs,
                            t)


def backward_function(cfg, name, lse=False):
    """func.func @name(q, k, v, out, dout[, g][, lse], dq, dk, dv[, dg]) on
    strided buffers (a contiguous innermost dim), computing the gradients
    of the op of `cfg` into the last ones; C interface. With `lse` the op
    reads the forward's log-sum-exp (lse_type) rather than recomputing
    it."""
    cfg.check_static_sizes()
    gated = cfg.gate != "none"
    types = dict(cfg.types())
    types["lse"] = lse_type(cfg)
    ins = [("q", "query"), ("k", "key"), ("v", "value"), ("o", "result"),
           ("do", "result")] + ([("g", "gate")] if gated else [])
    outs = [("dq", "query"), ("dk", "key"), ("dv", "value")] + (
        [("dg", "gate")] if gated else [])
    return buffer_function(cfg, name, "gated_attention.attention_backward",
                            ins, outs, types,
                            lse=("l", "lse") if lse else None)


def backward_kernel_function(cfg, name, static=False):
    """func.func @name(q, k, v, out, dout[, g], lse) -> (dq, dk, dv[, dg]):
    one gated_attention.attention_backward reading the forward's f32
    log-sum-exp, on tensors (B, Sq, Skv dynamic as `cfg` says unless
    `static`): what --gated-attention-to-ptx lowers to the backward's
    kernels."""
    cfg.check_static_sizes()
    t = cfg.types(static=static)
    b, sq = cfg.b, cfg.sq
    lse = "tensor<{}x{}x{}xf32>".format(
        "?" if not static and "b" in cfg.dynamic else b, cfg.hq,
        "?" if not static and "sq" in cfg.dynamic else sq)
    gated = cfg.gate != "none"
    ins = [("q", t["query"]), ("k", t["key"]), ("v", t["value"]),
           ("o", t["result"]), ("do", t["result"])] + (
        [("g", t["gate"])] if gated else []) + [("lse", lse)]
    outs = [t["query"], t["key"], t["value"]] + ([t["gate"]] if gated
                                                 else [])
    args = ", ".join(f"%{n}: {ty}" for n, ty in ins)
    operands = ", ".join(f"%{n}" for n, _ in ins[:-1])
    in_types = ", ".join(ty for _, ty in ins)
    results = ", ".join(outs)
    return (f"func.func @{name}({args}) -> ({results}) {{\n"
            f"  %r:{len(outs)} = gated_attention.attention_backward "
            f"{operands} lse(%lse) {attention_attributes(cfg)}\n"
            f"      : ({in_types}) -> ({results})\n"
            f"  return {', '.join(f'%r#{i}' for i in range(len(outs)))} : "
            f"{results}\n}}\n")


def dense_constant(ssa, values, dtype, type_str):
    data = dtypes.to_bytes(values, dtype).hex().upper()
    return f'  {ssa} = arith.constant dense<"0x{data}"> : {type_str}\n'


def _to_f32(type_str):
    return type_str.rsplit("x", 1)[0] + "xf32>"


def call_and_print(index, func, arg_types, result_type, static_types,
                   inputs, dtype):
    """main body lines: constants, casts to the function's types, the call,
    an extension to f32 and the print."""
    if dtype == "f64":
        raise ValueError("f64 results cannot be printed by printMemrefF32 "
                         "without rounding them to f32: read them from "
                         "memory (ga.attention(..., dtype='f64'))")
    lines = []
    args = []
    for n, (name, values) in enumerate(inputs.items()):
        cst = f"%c{index}_{n}"
        lines.append(dense_constant(cst, values, dtype, static_types[n]))
        if static_types[n] != arg_types[n]:
            lines.append(f"  {cst}d = tensor.cast {cst} : {static_types[n]} "
                         f"to {arg_types[n]}\n")
            cst += "d"
        args.append(cst)
    res = f"%r{index}"
    lines.append(f"  {res} = func.call @{func}({', '.join(args)}) : "
                 f"({', '.join(arg_types)}) -> {result_type}\n")
    printed, printed_type = res, result_type
    if dtype != "f32":
        printed_type = _to_f32(result_type)
        lines.append(f"  {res}f = arith.extf {res} : {result_type} to "
                     f"{printed_type}\n")
        printed = res + "f"
    lines.append(f"  {res}u = tensor.cast {printed} : {printed_type} to "
                 f"tensor<*xf32>\n")
    lines.append(f"  func.call @printMemrefF32({res}u) : (tensor<*xf32>) -> ()\n")
    return "".join(lines)


def test_module(cases):
    """cases: list of (cfg, inputs). Returns the module text."""
    funcs, body = [], []
    for i, (cfg, inputs) in enumerate(cases):
        name = f"case{i}"
        funcs.append(attention_function(cfg, name))
        t, st = cfg.types(), cfg.types(static=True)
        body.append(call_and_print(
            i, name, [t[o] for o in cfg.operands], t["result"],
            [st[o] for o in cfg.operands], {o: inputs[o] for o in cfg.operands},
            cfg.dtype))
    return wrap_main(funcs, body)


def wrap_main(funcs, body):
    return ("func.func private @printMemrefF32(tensor<*xf32>)\n\n"
            + "\n".join(funcs)
            + "\nfunc.func @main() {\n" + "".join(body) + "  return\n}\n")
