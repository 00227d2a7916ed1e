"""One launcher for every tensor-core kernel, driven by its description.

A kernel's launch description (gated_attention.launch documents the
schema) lists its parameters in order, each with its kind; this module
turns a description, the named buffers and the launch's sizes (and
strides) into what a launch is: the arguments in parameter order, the
grid, the block and the dynamic shared memory (`plan`, a `Launch`). A
backend carries it out:

- `gated_attention.cuda.Backend`: the CUDA driver (ctypes on libcuda),
  which expands each memref into the five parameters of the description's
  calling convention and encodes the TMA maps;
- `gated_attention.testing.emulate.Emulator`: the emulator, which runs
  the kernel's IR CTA by CTA on the CPU.

A backend is an object with `load(code, desc)` (the kernel's handle),
`address(buffer)` (a buffer's byte address, 0 where it has none; the
alignment checks read it) and `launch(handle, launch, stream)`; to run an
op on host arrays (`run`) also `upload(array, element_type)`,
`empty(elements, element_type)`, `read(buffer, elements, element_type)`,
`free(buffer)` and `synchronize()`.

Every kernel kind goes through the same few functions: `Kernel.launch`
launches one kernel, `launch_op` an op's kernels (the direct one, or
split-KV's split kernel then the merge), `run` an op on host arrays.
Sizes are keyword arguments: b, sq, skv (dense), t (query tokens; B x Sq
where not given), mb (pages per table row), splits, and sm_count (the
device's SMs: a persistent kernel's grid, launch.grid, is then at most
what the device holds at once; without it one CTA per tile).
"""

import dataclasses
import numbers

from . import launch

# The element types of the memref arguments, and their storage (numpy).
STORAGE = {"f16": "<u2", "bf16": "<u2", "f32": "<f4", "i32": "<i4"}
_DENSE = ("dense", "dense-split")
# The kernels compare rows with their bounds in 32 bits: a launch's row
# counts (query rows times the heads packed into a row, keys, a page
# table's capacity) stay below MAX_ROWS, as the compiler checks of static
# sizes (kMaxRows in lib/Conversion/GatedAttentionToNVGPU/KernelTiles.h).
MAX_ROWS = 2**30
# CUDA's grid limits (x, y, z); the tile scheduler of a persistent kernel
# numbers its tiles in 32 bits.
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_TILES = 2**31 - 1


@dataclasses.dataclass(frozen=True)
class Memref:
    """A memref argument: the backend's buffer of `elements` elements (the
    CUDA backend passes it as launch.py's five memref parameters)."""
    name: str
    buffer: object
    elements: int


@dataclasses.dataclass(frozen=True)
class Scalar:
    """An index or stride argument: one i64."""
    name: str
    value: int


@dataclasses.dataclass(frozen=True)
class TensorMap:
    """A TMA map argument over the tensor in `buffer`: dims innermost
    first, `box`, `swizzle`, as the description gives them."""
    name: str
    buffer: object
    element_type: str
    dims: tuple
    box: tuple
    swizzle: str


@dataclasses.dataclass(frozen=True)
class Launch:
    """One kernel launch: the description's arguments in parameter order,
    the grid and block (x, y, z) and the dynamic shared memory (bytes)."""
    desc: dict
    arguments: tuple
    grid: tuple
    block: tuple
    shared_memory: int


def sizes_of(desc, b=None, sq=None, skv=None, t=None, mb=None, splits=1,
             sm_count=None):
    """{symbol: value} of a launch of `desc` on the given sizes (T = B x Sq
    where not given), and "sm_count"; raises ValueError naming a size the
    kernel needs (an index argument, a grid symbol) that is not given."""
    if t is None and b is not None and sq is not None:
        t = b * sq
    values = {"B": b, "Sq": sq, "Skv": skv, "T": t, "MB": mb,
              "splits": splits, "sm_count": sm_count}
    needed = {a["name"] for a in desc["arguments"] if a["kind"] == "index"}
    needed |= {s for d in desc["grid"] for s in d[::2] if s in values}
    if desc["layout"] in _DENSE:
        needed |= {"B", "Sq", "Skv"}
    missing = sorted(n for n in needed if values[n] is None)
    if missing:
        raise ValueError(f"{desc['kernel']}: a {desc['layout']} launch needs "
                         f"{', '.join(missing)}")
    for name, value in values.items():
        if value is not None and (isinstance(value, bool) or not isinstance(
                value, numbers.Integral) or value < 0):
            raise ValueError(f"{desc['kernel']}: size {name} must be a "
                             f"non-negative int, got {value!r}")
    _check_rows(desc, values)
    return values


def _check_rows(desc, values):
    """Raises ValueError naming a row count of the launch `values` that
    the kernel's 32-bit rows cannot index (MAX_ROWS)."""
    group, page = desc["row_group"], desc["page_size"]
    counts = [("Sq", values["Sq"], group), ("Skv", values["Skv"], 1)]
    if page:
        counts += [("T", values["T"], group), ("MB", values["MB"], page)]
    for name, value, factor in counts:
        if value is not None and value * factor >= MAX_ROWS:
            rows = (f"{name} x {'P' if name == 'MB' else 'row_group'} = "
                    f"{value} x {factor}" if factor > 1 else f"{name}")
            raise ValueError(f"{desc['kernel']}: {rows} = {value * factor} "
                             f"rows; the kernels index rows in 32 bits and "
                             f"take fewer than 2^30")


def _check_grid(desc, tiles):
    """Raises ValueError for `tiles` (one CTA each, x y z) past CUDA's grid
    limits, or too many for a persistent kernel's scheduler."""
    for axis, size, limit in zip("xyz", tiles, MAX_GRID):
        if size > limit:
            raise ValueError(f"{desc['kernel']}: the grid's {axis} is {size} "
                             f"CTAs, more than CUDA's {limit}")
    x, y, z = tiles
    if desc.get("persistent") and x * y * z > MAX_TILES:
        raise ValueError(f"{desc['kernel']}: {x * y * z} tiles, more than "
                         f"the persistent kernel numbers (2^31 - 1)")


def _count(desc, shape, values):
    """The elements of a buffer of description shape `shape` ("T x Hq x
    Dv", "B + 1", ...) in a launch of `values`."""
    known = dict(values, Hq=desc["Hq"], Hkv=desc["Hkv"], Hg=desc["Hg"],
                 D=desc["D"], Dv=desc["Dv"], P=desc["page_size"])
    n = 1
    for factor in shape.split(" x "):
        n *= sum(int(term) if term.strip().isdigit() else known[term.strip()]
                 for term in factor.split("+"))
    return n


def extent(shape, strides):
    """Elements a [B, H, S, D] buffer laid out by `strides` spans."""
    if 0 in shape:
        return 0
    return 1 + sum((n - 1) * strides[d]
                   for n, d in zip(shape[:3], ("B", "H", "S"))) + shape[3] - 1


def plan(desc, buffers, strides=None, address=lambda buffer: 0, **sizes):
    """The Launch of `desc` on `buffers` ({name: (buffer, elements)} for
    its memref and tensor-map arguments) and `sizes` (sizes_of).
    `strides`: {name: {"B", "H", "S"}} (elements) of a dense kernel's
    operands that are not [B, H, S, D]-contiguous. `address(buffer)`: the
    byte address the alignment checks read. Raises ValueError for a layout
    or an address the kernel cannot take (launch.layouts; a packed
    operand's address not aligned to its row_alignment)."""
    values = sizes_of(desc, **sizes)
    kernel = desc["kernel"]
    layouts = {}
    if desc["layout"] in _DENSE:
        b, sq, skv = values["B"], values["Sq"], values["Skv"]
        layouts = launch.layouts(
            desc, b, sq, skv, strides or {},
            {n: address(buffers[n][0]) for n in launch.row_strides(desc)
             if n in buffers})
    elif strides:
        raise ValueError(f"{kernel}: a {desc['layout']} kernel takes packed "
                         f"operands, not strides ({', '.join(strides)})")
    arguments = []
    for arg in desc["arguments"]:
        name, kind = arg["name"], arg["kind"]
        if kind in ("memref", "tensor_map") and name not in buffers:
            raise ValueError(f"{kernel}: no buffer for argument {name!r}")
        if kind == "tensor_map":
            arguments.append(TensorMap(
                name, buffers[name][0], arg["element_type"],
                tuple(launch.map_dims(desc, arg, values["B"], values["Sq"],
                                      values["Skv"])),
                tuple(arg["box"]), arg["swizzle"]))
        elif kind == "memref":
            buffer, elements = buffers[name]
            if name not in layouts:
                align = arg.get("row_alignment", 4)
                if address(buffer) % align:
                    raise ValueError(
                        f"{kernel}: operand {name!r} needs its address "
                        f"aligned to {align} bytes, got "
                        f"{address(buffer):#x}")
            arguments.append(Memref(name, buffer, elements))
        elif kind == "stride":
            arguments.append(Scalar(name, layouts[arg["of"][0]][arg["dim"]]))
        else:
            arguments.append(Scalar(name, values[name]))
    sizes = (desc, values["B"] or 0, values["Sq"] or 0, values["Skv"] or 0,
             values["T"] or 0, values["splits"])
    _check_grid(desc, launch.grid(*sizes))
    grid = launch.grid(*sizes, values["sm_count"])
    return Launch(desc, tuple(arguments), grid, tuple(desc["block"]),
                  desc["dynamic_shared_memory"])


class Kernel:
    """A kernel loaded by `backend` from `code` (PTX for CUDA, the kernel
    op for the emulator) and launched as its description `desc` says."""

    def __init__(self, backend, code, desc):
        self.backend, self.desc = backend, launch.validate(desc)
        self.handle = backend.load(code, self.desc)

    def plan(self, buffers, strides=None, **sizes):
        """plan() of this kernel, with its backend's addresses."""
        return plan(self.desc, buffers, strides, self.backend.address,
                    **sizes)

    def launch(self, buffers, strides=None, stream=None, **sizes):
        """Launches the kernel (`buffers`, `strides` and `sizes` as for
        plan) on `stream` (a backend's; None: its default); nothing for an
        empty grid. Returns the Launch."""
        planned = self.plan(buffers, strides, **sizes)
        if 0 not in planned.grid:
            self.backend.launch(self.handle, planned, stream)
        return planned


def layouts(kernels, splits=1):
    """The layouts of `kernels` ({layout: Kernel}) an op's launch runs: the
    direct kernel ("dense" or "paged"), or with `splits` > 1 split-KV's
    split kernel and the merge."""
    family = "paged" if {"paged", "paged-split"} & set(kernels) else "dense"
    return (f"{family}-split", "split-merge") if splits > 1 else (family,)


def partials(kernels, splits, **sizes):
    """{name: (element type, elements)} of the scratch buffers (the f32
    partials) that an op's launch in `splits` parts needs besides its
    operands; none for the direct kernel."""
    if splits <= 1:
        return {}
    desc = kernels[layouts(kernels, splits)[0]].desc
    values = sizes_of(desc, splits=splits, **sizes)
    return {a["name"]: (a["element_type"], _count(desc, a["shape"], values))
            for a in desc["arguments"] if a["kind"] == "memref"
            and a["name"] in ("o_partial", "lse_partial")}


def launch_op(kernels, buffers, splits=1, strides=None, stream=None,
              **sizes):
    """Launches an op's kernels ({layout: Kernel}, layouts()) on `buffers`
    (its operands, and the partials with `splits` > 1): the direct kernel,
    or the split kernel then the merge (which reads packed partials and
    writes the packed output, so takes no strides)."""
    for layout in layouts(kernels, splits):
        kernels[layout].launch(
            buffers, None if layout == "split-merge" else strides, stream,
            splits=splits, **sizes)


def lse_elements(kernels, splits=1, **sizes):
    """The f32 elements of the log-sum-exp [B, Hq, Sq] that an op's launch
    writes (its direct kernel, or split-KV's merge, has an "lse"
    argument), or None where its kernels do not write one."""
    desc = kernels[layouts(kernels, splits)[-1]].desc
    arg = next((a for a in desc["arguments"] if a["name"] == "lse"), None)
    if arg is None:
        return None
    return _count(desc, arg["shape"], sizes_of(desc, splits=splits, **sizes))


def run(kernels, arrays, splits=1, strides=None, lse=False, **sizes):
    """Runs an op on host arrays through its kernels' backend and returns
    the output's storage (flat numpy), and with `lse` also its log-sum-exp
    (flat f32 [B, Hq, Sq]; the kernels must write one). `kernels`:
    {layout: Kernel}, or one Kernel; `arrays`: {name: flat numpy array of
    the storage of the argument's element type} (uint16 bits of f16 /
    bf16, int32 tables); an op without a gate reads none, and the output
    is passed in its place. `splits`, `strides`, `sizes` as for
    launch_op; "out" in `strides` lays the output out (the result is its
    storage)."""
    if isinstance(kernels, Kernel):
        kernels = {kernels.desc["layout"]: kernels}
    order = layouts(kernels, splits)
    first = kernels[order[0]]
    desc, backend = first.desc, first.backend
    types = {a["name"]: a["element_type"] for a in desc["arguments"]
             if a["kind"] in ("memref", "tensor_map")}
    unknown = sorted(set(arrays) - set(types))
    if unknown:
        raise ValueError(f"{desc['kernel']}: no buffer argument named "
                         f"{', '.join(unknown)}")
    values = sizes_of(desc, splits=splits, **sizes)
    out_type = types["out"]
    out_shape = next(a.get("shape") for a in desc["arguments"]
                     if a["name"] == "out")
    if desc["layout"] in _DENSE:
        b, sq, skv = values["B"], values["Sq"], values["Skv"]
        lay = launch.layouts(desc, b, sq, skv, strides or {})
        n = extent(launch.shape_of(desc, "out", b, sq, skv), lay["out"])
    else:
        n = _count(desc, out_shape, values)
    buffers, owned = {}, []
    try:
        for name, data in arrays.items():
            buffers[name] = (backend.upload(data, types[name]), data.size)
            owned.append(buffers[name][0])
        buffers["out"] = (backend.empty(n, out_type), n)
        owned.append(buffers["out"][0])
        for name, (element_type, count) in partials(kernels, splits,
                                                    **sizes).items():
            buffers[name] = (backend.empty(count, element_type), count)
            owned.append(buffers[name][0])
        buffers.setdefault("gate", buffers["out"])
        n_lse = lse_elements(kernels, splits, **sizes)
        if lse and n_lse is None:
            raise ValueError(f"{desc['kernel']}: the kernels do not write "
                             "the log-sum-exp (compile them with lse)")
        if n_lse is not None:
            buffers["lse"] = (backend.empty(n_lse, "f32"), n_lse)
            owned.append(buffers["lse"][0])
        launch_op(kernels, buffers, splits, strides, **sizes)
        backend.synchronize()
        out = backend.read(buffers["out"][0], n, out_type)
        if lse:
            return out, backend.read(buffers["lse"][0], n_lse, "f32")
        return out
    finally:
        for buffer in owned:
            backend.free(buffer)


BACKWARD_LAYOUTS = ("backward-preprocess", "backward-kv", "backward-q")


def backward_buffers(kernels, **sizes):
    """{name: (element type, elements)} of every buffer the backward's
    kernels ({layout: Kernel} of BACKWARD_LAYOUTS) take in a launch of
    `sizes` (b, sq, skv): inputs, gradients and the scratch D ("delta")
    and dY ("do"); raises ValueError naming a missing kernel."""
    missing = [n for n in BACKWARD_LAYOUTS if n not in kernels]
    if missing:
        raise ValueError(f"backward launch: no {', '.join(missing)} kernel")
    values = sizes_of(kernels[BACKWARD_LAYOUTS[0]].desc, **sizes)
    found = {}
    for kernel in kernels.values():
        for a in kernel.desc["arguments"]:
            # (The sm_90a kernels read K and V through tensor maps.)
            if a["kind"] in ("memref", "tensor_map"):
                found[a["name"]] = (a["element_type"],
                                    _count(kernel.desc, a["shape"], values))
    return found


def launch_backward(kernels, buffers, stream=None, **sizes):
    """Launches the backward's three kernels in order on `buffers` ({name:
    (buffer, elements)}: q, k, v, out, dout, lse, the gradients and the
    scratch "delta", and for a gated op gate and "do"; without a gate dY is
    dOut, which stands in for the unread gate, dY and dG); returns the
    Launches."""
    if not kernels[BACKWARD_LAYOUTS[0]].desc["gated"]:
        buffers = dict(buffers)
        for name in ("do", "gate", "dg"):
            buffers[name] = buffers["dout"]
    return [kernels[layout].launch(buffers, stream=stream, **sizes)
            for layout in BACKWARD_LAYOUTS]


def run_backward(kernels, arrays, **sizes):
    """Runs a gated_attention.attention_backward on host arrays through its
    three kernels ({layout: Kernel} of BACKWARD_LAYOUTS, launched in that
    order) and returns {"dq", "dk", "dv"[, "dg"]: storage (flat numpy)}.
    `arrays`: the storage of q, k, v, out, dout, lse (f32) and, for a gated
    op, gate; `sizes`: b, sq, skv. Scratch buffers (D, and dY = dOut *
    act(G) of a gated op) are allocated here; without a gate dY is dOut."""
    found = backward_buffers(kernels, **sizes)
    first = kernels[BACKWARD_LAYOUTS[0]]
    backend = first.backend
    gated = first.desc["gated"]
    needed = {"q", "k", "v", "out", "dout", "lse"} | ({"gate"} if gated
                                                      else set())
    if set(arrays) != needed:
        raise ValueError(f"backward launch: expected arrays "
                         f"{sorted(needed)}, got {sorted(arrays)}")
    outputs = ["dq", "dk", "dv"] + (["dg"] if gated else [])
    buffers, owned = {}, []
    try:
        for name, data in arrays.items():
            buffers[name] = (backend.upload(data, found[name][0]), data.size)
            owned.append(buffers[name][0])
        for name in outputs + ["delta"] + (["do"] if gated else []):
            element_type, count = found[name]
            buffers[name] = (backend.empty(count, element_type), count)
            owned.append(buffers[name][0])
        launch_backward(kernels, buffers, **sizes)
        backend.synchronize()
        return {name: backend.read(buffers[name][0], found[name][1],
                                   found[name][0]) for name in outputs}
    finally:
        for buffer in owned:
            backend.free(buffer)
