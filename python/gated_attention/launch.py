"""Launch descriptions of the tensor-core kernels: the schema and its reader.

`convert-gated-attention-to-nvgpu` describes each kernel it emits with one
JSON object (the `gated_attention.kernels` attribute of the module;
`python3 -m gated_attention.ptx` writes it beside the PTX as
<kernel>.json). Everything outside MLIR that launches or checks a kernel
(gated_attention.launcher, which launches every kernel on the CUDA driver
or the emulator, and `gated_attention.ptx --check`) reads it through
`validate`, so a description of another version is an error that names the
field, not a wrong launch; the launcher builds a launch's parameters from
"arguments" with this module's readers (grid, map_dims, layouts). Version 4 (version 1 had no strides:
every buffer was [B, H, S, D]-contiguous; version 2 no paged kernels;
version 3 no "instructions", every sm_90a kernel took TMA maps):

  schema, version        "gated-attention.launch", 4
  layout                 "dense" (the [B, H, S, D] kernels), "paged" (the
                         paged_attention kernel: packed [T, H, D] queries,
                         gate and output, [NB, P, Hkv, D] caches),
                         "paged-split" (its split-KV form: each CTA of grid
                         z = splits takes a part of the keys and writes f32
                         partials o_partial [splits, T, Hq, Dv] and
                         lse_partial [splits, T, Hq]; "split_rule" says how
                         the MLIR host code picks splits), "dense-split"
                         (the dense kernel's split-KV form for a decode
                         step, Sq = 1: grid x = splits, the same partials
                         with T = B) or "split-merge" (combines the partials
                         and applies the gate: packed [T, H, W] gate and
                         output); the backward's three kernels, launched in
                         this order on [B, H, S, W]-contiguous buffers:
                         "backward-preprocess" (simt: D into the f32 "delta"
                         [B, Hq, Sq], dY = dOut * act(G) into "do", the
                         gate's gradient into "dg"), "backward-kv" (dK, dV)
                         and "backward-q" (dQ), both reading the forward's
                         f32 log-sum-exp "lse" [B, Hq, Sq]
  page_size              P of a paged kernel and of its merge (0 for a
                         dense one and its merge)
  kernel, module         the PTX entry and its binary
  instructions           "mma.sync" (the sm_80 kernel), "wgmma" (the
                         warp-specialized sm_90a kernel: a producer
                         warpgroup, mbarriers, setmaxnreg; the dense one
                         reads TMA maps, the paged one copies rows by
                         cp.async) or "simt" (the split-KV merge)
  element_type           "f16" or "bf16"
  Hq, Hkv, Hg, D, Dv     head counts and head dims
  gate_width             Dv (elementwise gate) or 1 (headwise)
  causal, gated          booleans
  rows_per_block         query rows per CTA
  row_group              the query heads packed into a CTA's rows (paged
                         kernels and a dense decode step's mma.sync ones:
                         row p is query p / row_group of head p % row_group
                         of the CTA's first; 1 otherwise)
  key_block              keys per K/V tile
  grid                   three [symbol, divisor] pairs (or [symbol, divisor,
                         addend]), x y z: each grid dimension is
                         ceildiv(symbol, divisor) (+ addend); the symbols
                         are B, Sq, Skv, T (the launch's), Hq and one.
                         One CTA per tile
  persistent,            (optional; the dense "wgmma" kernel's) true: the
  ctas_per_sm            kernel loops over its tiles, CTA c of n (linear
                         over the grid) computing tiles c, c + n, ... of
                         the x y z tiles of "grid", longest first, so it
                         takes any grid; a launcher that knows the device's
                         SM count launches min(tiles, SMs x ctas_per_sm)
                         CTAs along x (grid()), one that does not (or
                         ignores these fields) one CTA per tile. Added
                         without a version bump: no existing field changed
                         its meaning, and "grid" still gives a right
                         launch to a reader that ignores them (the
                         kernel's index argument B is listed in
                         "arguments" like any other: a reader that does
                         not know it stops at validate, naming it)
  block                  threads per CTA, [x, y, z]
  dynamic_shared_memory  bytes
  abi                    {"memref": the kernel parameters of one memref
                         argument, in order ("allocated", "aligned",
                         "offset", "size", "stride"), "index": "i64",
                         "tensor_map": "pointer" (one parameter: the
                         address of the map in device memory),
                         "alignment": bytes the aligned pointer needs}
  arguments              [{"name", "kind": "memref" | "index" | "stride" |
                         "tensor_map", "element_type"?, "shape"?}] in
                         parameter order. An index argument is Sq or Skv
                         (dense; and B for the persistent one, which
                         counts its tiles) or B or MB (paged, whose
                         block_table,
                         seq_lens and cu_seqlens_q are i32 memrefs), and
                         splits and T for the split and merge kernels.
                         A "dense" kernel (or "split-merge") of an op
                         that returns its log-sum-exp has an f32 memref
                         "lse" after "out", [B, Hq, Sq] (the merge's
                         [T, Hq]), contiguous, that it writes L into
                         (natural log, +inf for a row without keys);
                         other kernels have none.
                         A stride argument (one i64) has "of", the memref
                         arguments it lays out (several share it: K and V
                         when D = Dv), and "dim", "B" or "H"; such a memref
                         has "row_stride" (the kernel is compiled for it)
                         and "row_alignment", the bytes that its pointer and
                         every row start must be aligned to: element
                         [b, h, s, d] of the buffer is at b * B + h * H +
                         s * row_stride + d. A tensor_map argument (the sm_90a
                         forward's Q, K and V, the sm_90a backward's K and
                         V) also has "dims": the tensor's
                         three dims innermost first, each a symbol or a
                         product "B*Hq" of symbols (D, Dv, Sq, Skv, B, Hq,
                         Hkv); "box": the TMA box, innermost first;
                         "swizzle": "128B"; "oob_fill": "zero".
"""

SCHEMA = "gated-attention.launch"
VERSION = 4

_MEMREF_ABI = ["allocated", "aligned", "offset", "size", "stride"]
_FIELDS = {
    "kernel": str, "module": str, "element_type": str, "Hq": int, "Hkv": int,
    "Hg": int, "D": int, "Dv": int, "gate_width": int, "causal": bool,
    "gated": bool, "rows_per_block": int, "key_block": int, "grid": list,
    "block": list, "dynamic_shared_memory": int, "abi": dict,
    "arguments": list, "layout": str, "page_size": int, "row_group": int,
    "instructions": str,
}
_INSTRUCTIONS = ("mma.sync", "wgmma", "simt")
_SYMBOLS = ("B", "Sq", "Skv", "T", "Hq", "one", "splits")
_INDEX_ARGUMENTS = {"dense": ("Sq", "Skv", "B"), "paged": ("B", "MB"),
                    "paged-split": ("B", "MB", "splits", "T"),
                    "dense-split": ("Sq", "Skv", "splits", "T"),
                    "split-merge": ("T", "splits"),
                    "backward-preprocess": ("Sq",),
                    "backward-kv": ("Sq", "Skv"),
                    "backward-q": ("Sq", "Skv")}
_SIMT_LAYOUTS = ("split-merge", "backward-preprocess")
_DIMS = ("B", "H")
_MAP_SYMBOLS = ("B", "Sq", "Skv", "Hq", "Hkv", "D", "Dv")


class LaunchDescriptionError(ValueError):
    """A launch description this version of the package cannot use."""


def _fail(desc, message):
    name = desc.get("kernel", "?") if isinstance(desc, dict) else "?"
    raise LaunchDescriptionError(f"launch description of {name}: {message}")


def validate(desc):
    """Returns `desc` if it is a version-3 description; raises
    LaunchDescriptionError naming the first field that is not."""
    if not isinstance(desc, dict):
        _fail(desc, f"expected a JSON object, got {type(desc).__name__}")
    if desc.get("schema") != SCHEMA or desc.get("version") != VERSION:
        _fail(desc, f"schema {desc.get('schema')!r} version "
              f"{desc.get('version')!r}; this package reads {SCHEMA!r} "
              f"version {VERSION} (recompile the kernel with this "
              "package's gated-attention-opt)")
    for field, kind in _FIELDS.items():
        value = desc.get(field)
        # bool is an int in Python: keep the two apart.
        if not isinstance(value, kind) or (kind is int and
                                           isinstance(value, bool)):
            _fail(desc, f"field {field!r} must be {kind.__name__}, got "
                  f"{value!r}")
    if desc["instructions"] not in _INSTRUCTIONS or (
            (desc["instructions"] == "simt") != (desc["layout"] in
                                                 _SIMT_LAYOUTS)):
        _fail(desc, f"field 'instructions' must be one of {_INSTRUCTIONS} "
              f"('simt' for the {' and '.join(_SIMT_LAYOUTS)} kernels only), "
              f"got {desc['instructions']!r}")
    if desc["layout"] not in _INDEX_ARGUMENTS:
        _fail(desc, f"field 'layout' must be one of "
              f"{tuple(_INDEX_ARGUMENTS)}, got {desc['layout']!r}")
    paged = desc["layout"] in ("paged", "paged-split")
    page = desc["page_size"]
    if page < 0 or page % 16 or (paged and page == 0) or (
            desc["layout"] in ("dense", "dense-split") and page):
        _fail(desc, f"field 'page_size' {page!r} must be a positive "
              "multiple of 16 for a paged kernel, 0 for a dense one")
    grid = desc["grid"]
    if len(grid) != 3 or not all(
            isinstance(d, list) and len(d) in (2, 3) and d[0] in _SYMBOLS
            and isinstance(d[1], int) and d[1] >= 1
            and (len(d) == 2 or d[2] in _SYMBOLS) for d in grid):
        _fail(desc, f"field 'grid' must be three [symbol, divisor(, "
              f"addend)] lists with symbols in {_SYMBOLS}, got {grid!r}")
    if "persistent" in desc and (
            desc["persistent"] is not True or not isinstance(
                desc.get("ctas_per_sm"), int) or isinstance(
                    desc["ctas_per_sm"], bool) or desc["ctas_per_sm"] < 1):
        _fail(desc, "field 'persistent' must be true and come with a "
              f"positive int 'ctas_per_sm', got {desc['persistent']!r} and "
              f"{desc.get('ctas_per_sm')!r}")
    if len(desc["block"]) != 3 or not all(
            isinstance(n, int) and n >= 1 for n in desc["block"]):
        _fail(desc, f"field 'block' must be three positive ints, got "
              f"{desc['block']!r}")
    abi = desc["abi"]
    if (abi.get("memref") != _MEMREF_ABI or abi.get("index") != "i64"
            or abi.get("tensor_map") != "pointer"):
        _fail(desc, f"field 'abi' {abi!r} is not the calling convention "
              f"this package passes ({_MEMREF_ABI}, i64, pointer)")
    memrefs = set()
    for arg in desc["arguments"]:
        if not isinstance(arg, dict) or arg.get("kind") not in (
                "memref", "index", "stride", "tensor_map") or not isinstance(
                    arg.get("name"), str):
            _fail(desc, f"argument {arg!r} needs a name and a kind "
                  "(memref, index, stride or tensor_map)")
        if arg["kind"] == "tensor_map":
            _check_map(desc, arg)
        elif arg["kind"] == "memref":
            memrefs.add(arg["name"])
        elif arg["kind"] == "index" and \
                arg["name"] not in _INDEX_ARGUMENTS[desc["layout"]]:
            _fail(desc, f"index argument {arg['name']!r}: expected one of "
                  f"{_INDEX_ARGUMENTS[desc['layout']]}")
        elif arg["kind"] == "stride":
            of = arg.get("of")
            if not isinstance(of, list) or not of or any(
                    n not in memrefs for n in of) or arg.get("dim") not in _DIMS:
                _fail(desc, f"stride argument {arg!r}: 'of' must list memref "
                      f"arguments before it and 'dim' be one of {_DIMS}")
            for n in of:
                m = next(a for a in desc["arguments"] if a["name"] == n)
                stride = m.get("row_stride")
                if not isinstance(stride, int) or isinstance(stride, bool) \
                        or stride < 1:
                    _fail(desc, f"memref {n!r} has strides but no positive "
                          f"int 'row_stride', got {stride!r}")
    return desc


def _check_map(desc, arg):
    dims, box = arg.get("dims"), arg.get("box")
    if not isinstance(dims, list) or len(dims) != 3 or not all(
            isinstance(d, str) and d and
            all(f in _MAP_SYMBOLS for f in d.split("*")) for d in dims):
        _fail(desc, f"tensor map {arg['name']!r}: 'dims' must be three "
              f"products of {_MAP_SYMBOLS}, got {dims!r}")
    if not isinstance(box, list) or len(box) != 3 or not all(
            isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 256
            for n in box):
        _fail(desc, f"tensor map {arg['name']!r}: 'box' must be three ints "
              f"in [1, 256], got {box!r}")
    if arg.get("element_type") not in ("f16", "bf16"):
        _fail(desc, f"tensor map {arg['name']!r}: element_type "
              f"{arg.get('element_type')!r}; expected f16 or bf16")
    if arg.get("swizzle") != "128B" or arg.get("oob_fill") != "zero":
        _fail(desc, f"tensor map {arg['name']!r}: swizzle "
              f"{arg.get('swizzle')!r} and oob_fill {arg.get('oob_fill')!r}; "
              "this package knows 128B and zero")


def map_dims(desc, arg, b, sq, skv):
    """The dims (innermost first) of tensor-map argument `arg` for a launch
    on B = b, Sq = sq, Skv = skv."""
    values = {"B": b, "Sq": sq, "Skv": skv, "Hq": desc["Hq"],
              "Hkv": desc["Hkv"], "D": desc["D"], "Dv": desc["Dv"]}
    out = []
    for d in arg["dims"]:
        n = 1
        for f in d.split("*"):
            n *= values[f]
        out.append(n)
    return out


def grid(desc, b, sq=0, skv=0, t=0, splits=1, sm_count=None):
    """The grid of a launch on B = b, Sq = sq, Skv = skv (dense) or T = t
    query tokens in `splits` key splits (paged), as (x, y, z): one CTA per
    tile, or for a persistent kernel on a device of `sm_count` SMs, min(its
    tiles, sm_count x ctas_per_sm) CTAs along x, each looping over its
    share of the tiles."""
    values = {"B": b, "Sq": sq, "Skv": skv, "T": t, "Hq": desc["Hq"],
              "one": 1, "splits": splits}
    tiles = tuple(-(-values[d[0]] // d[1]) + (values[d[2]] if len(d) > 2
                                               else 0)
                  for d in desc["grid"])
    if not desc.get("persistent") or not sm_count:
        return tiles
    x, y, z = tiles
    return (min(x * y * z, sm_count * desc["ctas_per_sm"]), 1, 1)


def split_count(split_desc, ctas, capacity, sm_count=None):
    """The key splits of a split-KV launch whose tiles are `ctas` CTAs over
    sequences of at most `capacity` keys, by the split kernel's
    "split_rule" (what the MLIR host code does), with a target of two CTAs
    per SM when `sm_count` is given; 1 means the direct kernel."""
    rule = split_desc["split_rule"]
    target = 2 * sm_count if sm_count else rule["target_ctas"]
    fitting = -(-capacity // rule["min_keys_per_split"])
    wanted = -(-target // max(ctas, 1))
    return max(min(wanted, fitting, rule["max_splits"]), 1)


def decode_split_count(split_desc, b, skv, sm_count=None):
    """The key splits of a dense decode step (Sq = 1) of `b` sequences over
    `skv` keys: split_count over one split's CTAs (B x Hq / the heads that a
    CTA of the split kernel packs, from its grid)."""
    _, heads, batches = grid(split_desc, b, 1, skv)
    return split_count(split_desc, heads * batches, skv, sm_count)


def contiguous_strides(shape):
    """{"B", "H", "S"} strides (elements) of a [B, H, S, D]-contiguous
    buffer of `shape`."""
    _, h, s, d = shape
    return {"B": h * s * d, "H": s * d, "S": d}


def shape_of(desc, name, b, sq, skv):
    """The [B, H, S, D] shape of memref argument `name` in a launch."""
    hq, hkv, dv = desc["Hq"], desc["Hkv"], desc["Dv"]
    return {"q": (b, hq, sq, desc["D"]), "k": (b, hkv, skv, desc["D"]),
            "v": (b, hkv, skv, dv),
            "gate": (b, desc["Hg"], sq, desc["gate_width"]),
            "out": (b, hq, sq, dv)}[name]


def row_strides(desc):
    """{name: row stride} of the memref arguments laid out by strides."""
    return {a["name"]: a["row_stride"] for a in desc["arguments"]
            if a["kind"] == "memref" and "row_stride" in a}


def default_strides(desc, name, b, sq, skv):
    """The strides of operand `name` that a launch assumes when given none:
    [B, H, S, D] with the kernel's row stride (row-major when that is the
    row's width)."""
    _, h, s, d = shape_of(desc, name, b, sq, skv)
    row = row_strides(desc).get(name, d)
    return {"B": h * s * row, "H": s * row, "S": row}


def layouts(desc, b, sq, skv, strides, pointers=None):
    """{name: {"B", "H", "S"}} of every strided memref argument of a
    launch: those given in `strides`, else default_strides. Raises
    ValueError for strides the kernel cannot take: another row stride than
    it was compiled for, a tensor-map operand (read through a map of the
    [B, H, S, D] layout) not so laid out, operands that share their
    strides given different ones, or (check_layout) rows and `pointers`
    ({name: address}; 0 where not given) not aligned as the kernel needs."""
    rows = row_strides(desc)
    kernel = desc["kernel"]
    for name, given in strides.items():
        if name not in rows:
            contiguous = contiguous_strides(shape_of(desc, name, b, sq, skv))
            if given != contiguous:
                raise ValueError(f"{kernel}: operand {name!r} must be "
                                 f"[B, H, S, D]-contiguous {contiguous}, got "
                                 f"strides {given}")
        elif given["S"] != rows[name]:
            raise ValueError(f"{kernel}: operand {name!r} has rows "
                             f"{given['S']} elements apart; the kernel was "
                             f"compiled for {rows[name]} (compile one with "
                             f"row_strides)")
    out = {name: dict(strides.get(name) or
                      default_strides(desc, name, b, sq, skv))
           for name in rows}
    for arg in desc["arguments"]:
        if arg["kind"] == "stride" and len({out[n][arg["dim"]]
                                            for n in arg["of"]}) > 1:
            raise ValueError(
                f"{kernel}: operands {' and '.join(arg['of'])} share their "
                f"{arg['dim']} stride in this kernel, got "
                + ", ".join(f"{n}: {out[n][arg['dim']]}" for n in arg["of"]))
    for name, layout in out.items():
        check_layout(desc, name, (pointers or {}).get(name, 0), layout)
    return out


def check_layout(desc, name, ptr, strides, element_bytes=2):
    """Raises ValueError when a buffer at address `ptr` laid out by
    `strides` ({"B", "H", "S"}, elements) breaks the kernel's alignment of
    memref argument `name`."""
    arg = next((a for a in desc["arguments"] if a["name"] == name), None)
    align = arg.get("row_alignment", 1) if arg else 1
    bad = [f"{d} = {strides[d]}" for d in ("B", "H", "S")
           if (strides[d] * element_bytes) % align]
    if ptr % align or bad:
        raise ValueError(
            f"{desc['kernel']}: operand {name!r} needs its address and row "
            f"starts aligned to {align} bytes; got address {ptr:#x}"
            + (f", strides {', '.join(bad)} elements" if bad else ""))


def parameter_count(desc):
    """The number of PTX parameters of the kernel's entry."""
    return sum(len(desc["abi"]["memref"]) if a["kind"] == "memref" else 1
               for a in desc["arguments"])


def is_warp_specialized(desc):
    """Whether the kernel is the sm_90a one (a producer warpgroup feeding
    wgmma consumers through mbarriers)."""
    return desc["instructions"] == "wgmma"


def uses_tensor_maps(desc):
    """Whether the kernel reads operands through TMA maps (the dense sm_90a
    kernel, the sm_90a backward's dK/dV and dQ kernels)."""
    return any(a["kind"] == "tensor_map" for a in desc["arguments"])
