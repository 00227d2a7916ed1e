"""MLIR text of the paged op (gated_attention.paged_attention): the
function that the CPU path compiles and from which
`convert-gated-attention-to-nvgpu` makes the paged kernels."""

from .mlir import attention_attributes


def paged_ir(cfg, page, name="paged"):
    """func.func @name(q, kc, vc, table, lens, cu[, g]) -> result holding one
    paged op for the heads, head dims, page size and variant of `cfg` (a
    dense AttentionConfig); T, NB, B, MB dynamic."""
    elem = cfg.dtype
    types = [f"tensor<?x{cfg.hq}x{cfg.d}x{elem}>",
             f"tensor<?x{page}x{cfg.hkv}x{cfg.d}x{elem}>",
             f"tensor<?x{page}x{cfg.hkv}x{cfg.dv}x{elem}>",
             "tensor<?x?xi32>", "tensor<?xi32>", "tensor<?xi32>"]
    if cfg.gate != "none":
        types.append(f"tensor<?x{cfg.hg}x{cfg.dg}x{elem}>")
    result = f"tensor<?x{cfg.hq}x{cfg.dv}x{elem}>"
    names = [f"%a{i}" for i in range(len(types))]
    attrs = attention_attributes(cfg)
    args = ", ".join(f"{n}: {t}" for n, t in zip(names, types))
    return (f"func.func @{name}({args}) -> {result} attributes "
            f"{{llvm.emit_c_interface}} {{\n"
            f"  %r = gated_attention.paged_attention {', '.join(names)} "
            f"{attrs}\n      : ({', '.join(types)}) -> {result}\n"
            f"  return %r : {result}\n}}\n")
