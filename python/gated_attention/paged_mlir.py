"""MLIR text of the paged op (gated_attention.paged_attention): the
function that the CPU path compiles and from which
`convert-gated-attention-to-nvgpu` makes the paged kernels."""

from .mlir import attention_attributes, buffer_function


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


def paged_ir(cfg, page, name="paged"):
    """func.func @name(q, kc, vc, table, lens, cu[, g]) -> result holding one
    paged op for the heads, head dims, page size and variant of `cfg` (a
    dense AttentionConfig); T, NB, B, MB dynamic."""
    types, result = _types(cfg, page)
    names = [f"%a{i}" for i in range(len(types))]
    args = ", ".join(f"{n}: {t}" for n, t in zip(names, types))
    return (f"func.func @{name}({args}) -> {result} attributes "
            f"{{llvm.emit_c_interface}} {{\n"
            f"  %r = gated_attention.paged_attention {', '.join(names)} "
            f"{attention_attributes(cfg)}\n      : ({', '.join(types)}) -> "
            f"{result}\n"
            f"  return %r : {result}\n}}\n")


def paged_destination_ir(cfg, page, name="paged"):
    """func.func @name(q, kc, vc, table, lens, cu[, g], out) on contiguous
    buffers (other frameworks' tensors), the paged op of paged_ir computed
    into `out`: no result allocated by the callee, no copy."""
    types, result = _types(cfg, page)
    names = ["q", "kc", "vc", "table", "lens", "cu", "g"][:len(types)]
    ins = [(n, n) for n in names]
    return buffer_function(
        cfg, name, "gated_attention.paged_attention", ins, [("out", "out")],
        dict(zip(names, types), out=result),
        buffer_type=lambda t: t.replace("tensor<", "memref<", 1))
