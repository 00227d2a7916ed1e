"""Launch descriptions of the tensor-core kernels: the schema and its reader.

`convert-gated-attention-to-nvgpu` describes each kernel it emits with one
JSON object (the `gated_attention.kernels` attribute of the module;
`python3 -m gated_attention.ptx` writes it beside the PTX as
<kernel>.json). Everything outside MLIR that launches or checks a kernel
(the CUDA runner, the emulator, `gated_attention.ptx --check`) reads it
through `validate`, so a description of another version is an error that
names the field, not a wrong launch. Version 1:

  schema, version        "gated-attention.launch", 1
  kernel, module         the PTX entry and its binary
  element_type           "f16" or "bf16"
  Hq, Hkv, Hg, D, Dv     head counts and head dims
  gate_width             Dv (elementwise gate) or 1 (headwise)
  causal, gated          booleans
  rows_per_block         query rows per CTA
  key_block              keys per K/V tile
  grid                   three [symbol, divisor] pairs, x y z: each grid
                         dimension is ceildiv(symbol, divisor); the symbols
                         are B, Sq, Skv (the launch's) and Hq
  block                  threads per CTA, [x, y, z]
  dynamic_shared_memory  bytes
  abi                    {"memref": the kernel parameters of one memref
                         argument, in order ("allocated", "aligned",
                         "offset", "size", "stride"), "index": "i64",
                         "tensor_map": "pointer" (one parameter: the
                         address of the map in device memory),
                         "alignment": bytes the aligned pointer needs}
  arguments              [{"name", "kind": "memref" | "index" |
                         "tensor_map", "element_type"?, "shape"?}] in
                         parameter order. A tensor_map argument (the sm_90a
                         kernel's Q, K and V) also has "dims": the tensor's
                         three dims innermost first, each a symbol or a
                         product "B*Hq" of symbols (D, Dv, Sq, Skv, B, Hq,
                         Hkv); "box": the TMA box, innermost first;
                         "swizzle": "128B"; "oob_fill": "zero".
"""

SCHEMA = "gated-attention.launch"
VERSION = 1

_MEMREF_ABI = ["allocated", "aligned", "offset", "size", "stride"]
_FIELDS = {
    "kernel": str, "module": str, "element_type": str, "Hq": int, "Hkv": int,
    "Hg": int, "D": int, "Dv": int, "gate_width": int, "causal": bool,
    "gated": bool, "rows_per_block": int, "key_block": int, "grid": list,
    "block": list, "dynamic_shared_memory": int, "abi": dict,
    "arguments": list,
}
_SYMBOLS = ("B", "Sq", "Skv", "Hq")
_MAP_SYMBOLS = ("B", "Sq", "Skv", "Hq", "Hkv", "D", "Dv")


class LaunchDescriptionError(ValueError):
    """A launch description this version of the package cannot use."""


def _fail(desc, message):
    name = desc.get("kernel", "?") if isinstance(desc, dict) else "?"
    raise LaunchDescriptionError(f"launch description of {name}: {message}")


def validate(desc):
    """Returns `desc` if it is a version-1 description; raises
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
    grid = desc["grid"]
    if len(grid) != 3 or not all(
            isinstance(d, list) and len(d) == 2 and d[0] in _SYMBOLS
            and isinstance(d[1], int) and d[1] >= 1 for d in grid):
        _fail(desc, f"field 'grid' must be three [symbol, divisor] pairs "
              f"with symbols in {_SYMBOLS}, got {grid!r}")
    if len(desc["block"]) != 3 or not all(
            isinstance(n, int) and n >= 1 for n in desc["block"]):
        _fail(desc, f"field 'block' must be three positive ints, got "
              f"{desc['block']!r}")
    abi = desc["abi"]
    if (abi.get("memref") != _MEMREF_ABI or abi.get("index") != "i64"
            or abi.get("tensor_map") != "pointer"):
        _fail(desc, f"field 'abi' {abi!r} is not the calling convention "
              f"this package passes ({_MEMREF_ABI}, i64, pointer)")
    for arg in desc["arguments"]:
        if not isinstance(arg, dict) or arg.get("kind") not in (
                "memref", "index", "tensor_map") or not isinstance(
                    arg.get("name"), str):
            _fail(desc, f"argument {arg!r} needs a name and a kind "
                  "(memref, index or tensor_map)")
        if arg["kind"] == "tensor_map":
            _check_map(desc, arg)
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


def grid(desc, b, sq, skv=0):
    """The grid of a launch on B = b, Sq = sq, Skv = skv, as (x, y, z)."""
    values = {"B": b, "Sq": sq, "Skv": skv, "Hq": desc["Hq"]}
    return tuple(-(-values[symbol] // divisor)
                 for symbol, divisor in desc["grid"])


def parameter_count(desc):
    """The number of PTX parameters of the kernel's entry."""
    return sum(len(desc["abi"]["memref"]) if a["kind"] == "memref" else 1
               for a in desc["arguments"])


def uses_tensor_maps(desc):
    """Whether the kernel is the sm_90a one (its operands are TMA maps)."""
    return any(a["kind"] == "tensor_map" for a in desc["arguments"])
