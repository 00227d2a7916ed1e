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
                         "alignment": bytes the aligned pointer needs}
  arguments              [{"name", "kind": "memref" | "index",
                         "element_type"?, "shape"?}] in parameter order
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
    if abi.get("memref") != _MEMREF_ABI or abi.get("index") != "i64":
        _fail(desc, f"field 'abi' {abi!r} is not the calling convention "
              f"this package passes ({_MEMREF_ABI}, i64)")
    for arg in desc["arguments"]:
        if not isinstance(arg, dict) or arg.get("kind") not in (
                "memref", "index") or not isinstance(arg.get("name"), str):
            _fail(desc, f"argument {arg!r} needs a name and a kind "
                  "(memref or index)")
    return desc


def grid(desc, b, sq, skv=0):
    """The grid of a launch on B = b, Sq = sq, Skv = skv, as (x, y, z)."""
    values = {"B": b, "Sq": sq, "Skv": skv, "Hq": desc["Hq"]}
    return tuple(-(-values[symbol] // divisor)
                 for symbol, divisor in desc["grid"])


def parameter_count(desc):
    """The number of PTX parameters of the kernel's entry."""
    return sum(len(desc["abi"]["memref"]) if a["kind"] == "memref" else 1
               for a in desc["arguments"])
