"""MLIR text of the paged op (gated_attention.paged_attention): the
function that the CPU path compiles and from which
`convert-gated-attention-to-nvgpu` makes the paged kernels."""

from .mlir import attention_attributes


def _types(cfg, page):
    """The paged function's operand types (q, kc, vc, table, lens, cu[, g])
    and its result type."""
    elem = cfg.dtype
    types = [f"tensor<?x{cfg.hq}x{cfg.d}x{elem}>",
             f"tensor<?x{page}x{cfg.hkv}x{cfg.d}x{elem}>",
             f"tensor<?x{page}x{cfg.hkv}x{cfg.dv}x{elem}>",
             "tensor<?x?xi32>", "tensor<?xi32>", "tensor<?xi32>"]
    if cfg.gate != "none":
        types.append(f"tensor<?x{cfg.hg}x{cfg.dg}x{elem}>")
    return types, f"tensor<?x{cfg.hq}x{cfg.dv}x{elem}>"


def _op_line(cfg, names, types, result):
    return (f"  %r = gated_attention.paged_attention {', '.join(names)} "
            f"{attention_attributes(cfg)}\n      : ({', '.join(types)}) -> "
            f"{result}\n")


def paged_ir(cfg, page, name="paged"):
    """func.func @name(q, kc, vc, table, lens, cu[, g]) -> result holding one
    paged op for the heads, head dims, page size and variant of `cfg` (a
    dense AttentionConfig); T, NB, B, MB dynamic."""
    types, result = _types(cfg, page)
    names = [f"%a{i}" for i in range(len(types))]
    args = ", ".join(f"{n}: {t}" for n, t in zip(names, types))
    return (f"func.func @{name}({args}) -> {result} attributes "
            f"{{llvm.emit_c_interface}} {{\n"
            + _op_line(cfg, names, types, result) +
            f"  return %r : {result}\n}}\n")


def paged_destination_ir(cfg, page, name="paged"):
    """func.func @name(q, kc, vc, table, lens, cu[, g], out) on contiguous
    buffers (other frameworks' tensors), the paged op of paged_ir computed
    into `out`: no result allocated by the callee, no copy."""
    types, result = _types(cfg, page)
    memrefs = [t.replace("tensor<", "memref<") for t in types + [result]]
    names = [f"%a{i}" for i in range(len(types))]
    args = ", ".join(f"{n}: {m}" for n, m in zip(names + ["%out"], memrefs))
    lines = [f"func.func @{name}({args}) attributes "
             f"{{llvm.emit_c_interface}} {{\n"]
    for n, m, t in zip(names, memrefs, types):
        lines.append(f"  {n}t = bufferization.to_tensor {n} restrict : {m} "
                     f"to {t}\n")
    lines.append(_op_line(cfg, [f"{n}t" for n in names], types, result))
    lines.append(f"  bufferization.materialize_in_destination %r in restrict "
                 f"writable %out : ({result}, {memrefs[-1]}) -> ()\n"
                 f"  return\n}}\n")
    return "".join(lines)
