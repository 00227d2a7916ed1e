"""Run the PTX of `--gated-attention-to-ptx` on an NVIDIA GPU.

Talks to the CUDA driver API (libcuda.so.1) through ctypes, so it needs no
Python package beyond numpy: it loads a PTX file (the driver JIT-compiles it
for the device), reads the kernel's launch description (the JSON file that
``python3 -m gated_attention.ptx`` writes next to it) and launches it.
The driver's primary context is used, the one torch and cupy use too, so
device pointers from either can be passed to :meth:`Kernel.launch`.

    python3 -m gated_attention.cuda --case 'dtype=bf16,d=128,sq=300,skv=300,causal=0|1'

compiles each case with gated-attention-opt, runs it on the GPU and compares
with the float64 reference (what the `REQUIRES: cuda-gpu` tests run).
"""

import argparse
import ctypes
import dataclasses
import hashlib
import json
import os
import sys

import numpy as np

from . import accuracy, config, dtypes, launch, mlir, ptx as ptx_tools, runner

CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
# cuTensorMapEncodeTiled's enums (cuda.h): data types, 128-byte swizzle; 0
# is "none" for interleave and L2 promotion and zero-fill for out of bounds.
CU_TENSOR_MAP_DATA_TYPE = {"f16": 6, "bf16": 9}
CU_TENSOR_MAP_SWIZZLE = {"128B": 3}
TENSOR_MAP_BYTES = 128


class CudaError(RuntimeError):
    pass


class Driver:
    """The CUDA driver API on device 0, in its primary context."""

    def __init__(self, device=0):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise CudaError(f"no CUDA driver: {e}") from None
        self._check(self.lib.cuInit(0), "cuInit")
        self.device = ctypes.c_int()
        self._check(self.lib.cuDeviceGet(ctypes.byref(self.device), device),
                    "cuDeviceGet")
        self.context = ctypes.c_void_p()
        self._check(self.lib.cuDevicePrimaryCtxRetain(
            ctypes.byref(self.context), self.device), "cuDevicePrimaryCtxRetain")
        self._check(self.lib.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")

    def _check(self, status, what):
        if status:
            name = ctypes.c_char_p()
            self.lib.cuGetErrorName(status, ctypes.byref(name))
            raise CudaError(f"{what} failed: "
                            f"{(name.value or b'?').decode()} ({status})")

    def name(self):
        buf = ctypes.create_string_buffer(256)
        self._check(self.lib.cuDeviceGetName(buf, 256, self.device),
                    "cuDeviceGetName")
        return buf.value.decode()

    def sm_count(self):
        """The device's streaming multiprocessors."""
        n = ctypes.c_int()
        self._check(self.lib.cuDeviceGetAttribute(
            ctypes.byref(n), CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            self.device), "cuDeviceGetAttribute")
        return n.value

    def alloc(self, nbytes):
        ptr = ctypes.c_uint64()
        self._check(self.lib.cuMemAlloc_v2(ctypes.byref(ptr), max(nbytes, 1)),
                    "cuMemAlloc")
        return ptr.value

    def free(self, ptr):
        self._check(self.lib.cuMemFree_v2(ctypes.c_uint64(ptr)), "cuMemFree")

    def upload(self, ptr, data):
        self._check(self.lib.cuMemcpyHtoD_v2(ctypes.c_uint64(ptr), data,
                                             len(data)), "cuMemcpyHtoD")

    def download(self, ptr, nbytes):
        buf = ctypes.create_string_buffer(nbytes)
        self._check(self.lib.cuMemcpyDtoH_v2(buf, ctypes.c_uint64(ptr),
                                             nbytes), "cuMemcpyDtoH")
        return buf.raw

    def synchronize(self):
        self._check(self.lib.cuCtxSynchronize(), "cuCtxSynchronize")

    def tensor_map(self, ptr, element_type, dims, box, swizzle):
        """A TMA map (CUtensorMap) of the row-major tensor at device address
        `ptr` with `dims` (innermost first) of 16-bit `element_type`, tiled
        in `box`es, copied to device memory: returns its device address."""
        # 128 opaque bytes that must be 64-byte aligned.
        raw = ctypes.create_string_buffer(TENSOR_MAP_BYTES + 64)
        address = (ctypes.addressof(raw) + 63) // 64 * 64
        rank = len(dims)
        size = 2
        strides, stride = [], size
        for d in dims[:-1]:
            stride *= d
            strides.append(stride)
        u64s, u32s = ctypes.c_uint64 * rank, ctypes.c_uint32 * rank
        self._check(self.lib.cuTensorMapEncodeTiled(
            ctypes.c_void_p(address),
            CU_TENSOR_MAP_DATA_TYPE[element_type], rank,
            ctypes.c_void_p(ptr), u64s(*dims),
            (ctypes.c_uint64 * (rank - 1))(*strides), u32s(*box),
            u32s(*([1] * rank)), 0, CU_TENSOR_MAP_SWIZZLE[swizzle], 0, 0),
            "cuTensorMapEncodeTiled")
        device = self.alloc(TENSOR_MAP_BYTES)
        self.upload(device, ctypes.string_at(address, TENSOR_MAP_BYTES))
        return device


class Kernel:
    """One kernel of a PTX module, launched as its description says."""

    def __init__(self, driver, ptx_text, desc):
        self.driver, self.desc = driver, launch.validate(desc)
        # TMA maps in device memory, by (argument, buffer, dims): a map holds
        # only those, so one made for an earlier launch stays valid.
        self.maps = {}
        self.module = ctypes.c_void_p()
        # cuModuleLoadData JIT-compiles PTX for the current device.
        driver._check(driver.lib.cuModuleLoadData(
            ctypes.byref(self.module), ptx_text.encode() + b"\0"),
            "cuModuleLoadData")
        self.function = ctypes.c_void_p()
        driver._check(driver.lib.cuModuleGetFunction(
            ctypes.byref(self.function), self.module,
            desc["kernel"].encode()), "cuModuleGetFunction")
        # Above 48 KiB, dynamic shared memory must be opted into.
        driver._check(driver.lib.cuFuncSetAttribute(
            self.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            desc["dynamic_shared_memory"]), "cuFuncSetAttribute")

    @classmethod
    def from_files(cls, driver, ptx_path, json_path):
        with open(ptx_path) as f:
            text = f.read()
        with open(json_path) as f:
            desc = json.load(f)
        return cls(driver, text, desc)

    def grid(self, b, sq):
        """Grid dims from the description: (ceildiv(Sq, rows), Hq, B)."""
        return launch.grid(self.desc, b, sq)

    def launch(self, buffers, b, sq, skv, stream=None, strides=None,
               splits=1):
        """`buffers`: name -> (device pointer, number of elements), for the
        description's memref and tensor-map arguments; Sq and Skv are the
        index ones (and `splits`, T = B x Sq for a dense-split kernel, whose
        o_partial and lse_partial are in `buffers`). `strides`: name ->
        {"B", "H", "S"} strides in elements of the buffers that are not
        [B, H, S, D]-contiguous (a tensor map operand must be)."""
        layouts = launch.layouts(self.desc, b, sq, skv, strides or {},
                                 {n: ptr for n, (ptr, _) in buffers.items()})
        values = []
        for arg in self.desc["arguments"]:
            if arg["kind"] == "tensor_map":
                ptr, _ = buffers[arg["name"]]
                dims = launch.map_dims(self.desc, arg, b, sq, skv)
                key = (arg["name"], ptr, tuple(dims))
                if key not in self.maps:
                    self.maps[key] = self.driver.tensor_map(
                        ptr, arg["element_type"], dims, arg["box"],
                        arg["swizzle"])
                values.append(ctypes.c_uint64(self.maps[key]))
            elif arg["kind"] == "memref":
                ptr, n = buffers[arg["name"]]
                # The description's abi: (allocated, aligned, offset, size,
                # stride), which validate() checked.
                values += [ctypes.c_uint64(ptr), ctypes.c_uint64(ptr),
                           ctypes.c_int64(0), ctypes.c_int64(n),
                           ctypes.c_int64(1)]
            elif arg["kind"] == "stride":
                values.append(
                    ctypes.c_int64(layouts[arg["of"][0]][arg["dim"]]))
            else:
                values.append(ctypes.c_int64(
                    {"Sq": sq, "Skv": skv, "splits": splits,
                     "T": b * sq}[arg["name"]]))
        self._launch(values, launch.grid(self.desc, b, sq, skv,
                                         splits=splits), stream)

    def launch_paged(self, buffers, b, mb, t, splits=1, stream=None):
        """A launch of one of a paged op's kernels (layout paged,
        paged-split or split-merge): `buffers` name -> (device pointer,
        number of elements) for the memref arguments its description lists
        (q, k, v, gate, out: [T, H, D] and [NB, P, Hkv, D], packed; the
        int32 block_table [B, MB], seq_lens and cu_seqlens_q; the f32
        o_partial and lse_partial of `splits` key splits); the grid covers T
        query tokens of B sequences. Nothing is read back: lengths stay on
        the device (no synchronization, so the launch can be captured in a
        CUDA graph)."""
        if self.desc["layout"] not in ("paged", "paged-split",
                                       "split-merge"):
            raise ValueError(f"{self.desc['kernel']} is not a paged kernel")
        index = {"B": b, "MB": mb, "T": t, "splits": splits}
        values = []
        for arg in self.desc["arguments"]:
            if arg["kind"] == "memref":
                ptr, n = buffers[arg["name"]]
                align = arg.get("row_alignment", 4)
                if ptr % align:
                    raise ValueError(f"{self.desc['kernel']}: operand "
                                     f"{arg['name']!r} needs its address "
                                     f"aligned to {align} bytes, got "
                                     f"{ptr:#x}")
                values += [ctypes.c_uint64(ptr), ctypes.c_uint64(ptr),
                           ctypes.c_int64(0), ctypes.c_int64(n),
                           ctypes.c_int64(1)]
            else:
                values.append(ctypes.c_int64(index[arg["name"]]))
        self._launch(values, launch.grid(self.desc, b, t=t, splits=splits),
                     stream)

    def _launch(self, values, grid, stream):
        params = (ctypes.c_void_p * len(values))(
            *[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
        gx, gy, gz = grid
        if gx * gy * gz == 0:
            return
        bx, by, bz = self.desc["block"]
        self.driver._check(self.driver.lib.cuLaunchKernel(
            self.function, gx, gy, gz, bx, by, bz,
            self.desc["dynamic_shared_memory"], ctypes.c_void_p(stream),
            params, None), "cuLaunchKernel")


def run(driver, kernel, cfg, inputs):
    """Runs `kernel` on `inputs` (float64 arrays, representable in
    cfg.dtype); returns the result as float64."""
    size = 4 if cfg.dtype == "f32" else 2
    names = {"query": "q", "key": "k", "value": "v", "gate": "gate"}
    buffers, ptrs = {}, []
    try:
        for operand, arg in names.items():
            data = dtypes.to_bytes(inputs[operand], cfg.dtype)
            ptr = driver.alloc(len(data))
            ptrs.append(ptr)
            driver.upload(ptr, data)
            buffers[arg] = (ptr, inputs[operand].size)
        shape = cfg.shapes()["result"]
        n = int(np.prod(shape))
        out = driver.alloc(n * size)
        ptrs.append(out)
        buffers["out"] = (out, n)
        kernel.launch(buffers, cfg.b, cfg.sq, cfg.skv)
        driver.synchronize()
        return dtypes.from_bytes(driver.download(out, n * size), cfg.dtype,
                                 shape)
    finally:
        for ptr in ptrs:
            driver.free(ptr)


def run_decode(driver, kernels, cfg, inputs, splits):
    """Runs a dense decode step (cfg.sq == 1) by split-KV: the dense-split
    kernel of `kernels` ({layout: Kernel}) on `splits` parts of the keys,
    then the merge; `inputs` as for run. Returns the result as float64."""
    size = 2
    names = {"query": "q", "key": "k", "value": "v", "gate": "gate"}
    buffers, ptrs = {}, []

    def alloc(nbytes):
        ptr = driver.alloc(max(nbytes, 16))
        ptrs.append(ptr)
        return ptr
    try:
        for operand, arg in names.items():
            data = dtypes.to_bytes(inputs[operand], cfg.dtype)
            ptr = alloc(len(data))
            driver.upload(ptr, data)
            buffers[arg] = (ptr, inputs[operand].size)
        shape = cfg.shapes()["result"]
        n = int(np.prod(shape))
        buffers["out"] = (alloc(n * size), n)
        rows = splits * cfg.b * cfg.hq
        buffers["o_partial"] = (alloc(4 * rows * cfg.dv), rows * cfg.dv)
        buffers["lse_partial"] = (alloc(4 * rows), rows)
        kernels["dense-split"].launch(buffers, cfg.b, cfg.sq, cfg.skv,
                                      splits=splits)
        kernels["split-merge"].launch_paged(buffers, cfg.b, 0, cfg.b, splits)
        driver.synchronize()
        return dtypes.from_bytes(driver.download(buffers["out"][0], n * size),
                                 cfg.dtype, shape)
    finally:
        for ptr in ptrs:
            driver.free(ptr)


def run_paged(driver, kernels, arrays, dtype, splits=1):
    """Runs a paged op's `kernels` ({layout: Kernel}) on numpy `arrays` (q,
    key_cache, value_cache, g or None, representable in `dtype`;
    block_table, seq_lens, cu_seqlens_q as ints): the direct kernel, or with
    `splits` > 1 the split kernel and the merge. Returns the [T, Hq, Dv]
    result as float64."""
    table = np.ascontiguousarray(arrays["block_table"], np.int32)
    t, hq = arrays["q"].shape[:2]
    dv = arrays["value_cache"].shape[3]
    size = 2
    data = {"q": dtypes.to_bytes(arrays["q"], dtype),
            "k": dtypes.to_bytes(arrays["key_cache"], dtype),
            "v": dtypes.to_bytes(arrays["value_cache"], dtype),
            "block_table": table.tobytes(),
            "seq_lens": np.ascontiguousarray(arrays["seq_lens"],
                                             np.int32).tobytes(),
            "cu_seqlens_q": np.ascontiguousarray(arrays["cu_seqlens_q"],
                                                 np.int32).tobytes()}
    if arrays.get("g") is not None:
        data["gate"] = dtypes.to_bytes(arrays["g"], dtype)
    buffers, ptrs = {}, []
    try:
        for name, raw in data.items():
            ptr = driver.alloc(max(len(raw), 16))
            ptrs.append(ptr)
            if raw:
                driver.upload(ptr, raw)
            width = 4 if name in ("block_table", "seq_lens",
                                  "cu_seqlens_q") else size
            buffers[name] = (ptr, len(raw) // width)
        n = t * hq * dv
        out = driver.alloc(max(n * size, 16))
        ptrs.append(out)
        buffers["out"] = (out, n)
        if splits > 1:
            for name, count in (("o_partial", splits * n),
                                ("lse_partial", splits * t * hq)):
                ptr = driver.alloc(max(4 * count, 16))
                ptrs.append(ptr)
                buffers[name] = (ptr, count)
        # A kernel without a gate still takes a (never read) gate buffer.
        buffers.setdefault("gate", buffers["out"])
        b, mb = table.shape
        for layout in (("paged-split", "split-merge") if splits > 1
                       else ("paged",)):
            kernels[layout].launch_paged(buffers, b, mb, t, splits)
        driver.synchronize()
        return dtypes.from_bytes(driver.download(out, n * size), dtype,
                                 (t, hq, dv))
    finally:
        for ptr in ptrs:
            driver.free(ptr)


# Bumped when the cache's file layout changes: old entries are then ignored.
_CACHE_FORMAT = 3


def _read_cache(stem, tool):
    """(name, PTX, description) of a complete, intact cache entry, else
    None. Writers put <stem>.ptx in place before <stem>.json, each by an
    atomic rename, so an entry exists once its .json does; the .json holds
    the PTX's hash, so a .ptx replaced by another writer (or a different
    tool) since is a miss, not a wrong kernel. It also names the tool that
    compiled it: where there is a tool (`tool`, kernel_cache.tool_identity)
    and it is another one (rebuilt since), the entry is stale: a miss; a
    machine without the tool takes it."""
    try:
        with open(stem + ".json") as f:
            entry = json.load(f)
        with open(stem + ".ptx") as f:
            ptx = f.read()
    except (OSError, ValueError):
        return None   # absent, being replaced, or from a broken writer
    if not isinstance(entry, dict) or entry.get("format") != _CACHE_FORMAT:
        return None
    if hashlib.sha256(ptx.encode()).hexdigest() != entry.get("ptx_sha256"):
        return None
    if tool is not None and entry.get("tool") != tool:
        return None   # compiled by the tool before a rebuild
    try:
        desc = launch.validate(entry.get("description"))
    except launch.LaunchDescriptionError:
        return None   # written by another version of the package
    if f".entry {desc['kernel']}(" not in ptx:
        return None
    if ptx_tools.unresolved_functions(ptx):
        return None   # stored by an older version without the check
    return desc["kernel"], ptx, desc


def _write_cache(stem, ptx, desc, tool):
    os.makedirs(os.path.dirname(stem), exist_ok=True)
    ptx_tools.write_atomically(stem + ".ptx", ptx)
    entry = {"format": _CACHE_FORMAT, "kernel": desc["kernel"], "tool": tool,
             "ptx_sha256": hashlib.sha256(ptx.encode()).hexdigest(),
             "description": desc}
    # The entry last: its presence marks a complete entry.
    ptx_tools.write_atomically(stem + ".json", json.dumps(entry))


def compile_kernel(cfg, opt=None, chip="sm_90", kernel="auto", warps=0,
                   cache=None, row_strides=None):
    """(kernel name, PTX text, launch description) of the tensor-core kernel
    that --gated-attention-to-ptx makes for `cfg` (with the plugins of
    runner.load_plugin; `opt` overrides the tool; `kernel` is the
    pipeline's kernel option: auto, mma-sync, or wgmma with chip sm_90a;
    `warps` its warps option, 0 for the default; `row_strides` the
    elements between rows of the buffers it will be given, {name: n} for
    some of q, k, v, gate, out: mlir.attention_attributes). Raises ValueError when
    the tensor-core kernel does not take `cfg` and ptx.MissingLibdeviceError
    when its PTX calls libdevice functions that were not linked.

    Kernels are kept in kernel_cache's directory (GATED_ATTENTION_CACHE_DIR,
    else the user's cache directory) by a hash of the op's MLIR and the
    chip, and read back instead of compiled: compile on one machine, run on
    another that has no MLIR. Any number of processes may share the
    directory: entries are written by atomic renames and checked when read,
    and a reader never sees a partial one. `cache` (a directory; "" for
    none) overrides it; kernel_cache's log line reports every compile."""
    from . import kernel_cache
    from .compiler import CHIPS, tensor_core_unsupported
    config.check_choice("chip", chip, CHIPS)
    config.check_choice("kernel", kernel, ("auto", "mma-sync", "wgmma"))
    if isinstance(warps, bool) or not isinstance(warps, int) or warps < 0:
        raise ValueError(f"warps must be a non-negative int (0: the "
                         f"default), got {warps!r}")
    text = mlir.attention_function(cfg, "case", row_strides=row_strides)
    rows = "" if not row_strides else " rows " + ",".join(
        f"{n}={s}" for n, s in sorted(row_strides.items()))
    return _compile_cached(
        text, f"{kernel_cache.variant(cfg)}{rows}", chip, kernel, warps,
        cache, opt, lambda: tensor_core_unsupported(cfg), cfg.describe())[0]


def compile_decode_kernels(cfg, opt=None, chip="sm_90", warps=0,
                           cache=None, row_strides=None, kernel="auto"):
    """{layout: (kernel name, PTX text, launch description)} of the dense
    op's kernels for a decode step of `cfg` (Sq = 1) at every B and Skv:
    "dense", and split-KV's "dense-split" and "split-merge"; `row_strides`
    as for compile_kernel. `kernel` as for compile_kernel: with "wgmma"
    (chip sm_90a) the direct kernel is the warp-specialized one, split-KV's
    stay mma.sync. Cached as compile_kernel."""
    from . import kernel_cache
    from .compiler import CHIPS, tensor_core_unsupported
    config.check_choice("chip", chip, CHIPS)
    config.check_choice("kernel", kernel, ("auto", "mma-sync", "wgmma"))
    cfg = dataclasses.replace(cfg, b=1, sq=1, skv=1, dynamic=("b", "skv"))
    text = mlir.attention_function(cfg, "case", row_strides=row_strides)
    rows = "" if not row_strides else " rows " + ",".join(
        f"{n}={s}" for n, s in sorted(row_strides.items()))
    layouts = ("dense", "dense-split", "split-merge")
    kernels = _compile_cached(
        text, f"{kernel_cache.variant(cfg)}{rows}", chip, kernel, warps,
        cache, opt, lambda: tensor_core_unsupported(cfg), cfg.describe(),
        layouts)
    return dict(zip(layouts, kernels))


def compile_paged_kernel(cfg, page, opt=None, chip="sm_90", warps=0,
                         cache=None, kernel="auto"):
    """{layout: (kernel name, PTX text, launch description)} of the paged
    op's kernels (paged: the direct one; paged-split and split-merge:
    split-KV's) for the heads, head dims and variant of `cfg` (a dense
    AttentionConfig) and pages of `page` tokens:
    gated_attention.paged_attention on the GPU, one compile for every batch,
    length and table. `kernel` as for compile_kernel: with "wgmma" (chip
    sm_90a) the direct kernel is the warp-specialized one, split-KV's stay
    mma.sync. Cached as compile_kernel."""
    from . import kernel_cache, paged
    from .compiler import CHIPS, tensor_core_unsupported
    config.check_choice("chip", chip, CHIPS)
    config.check_choice("kernel", kernel, ("auto", "mma-sync", "wgmma"))
    text = paged.paged_ir(cfg, page)
    layouts = ("paged", "paged-split", "split-merge")
    kernels = _compile_cached(
        text, f"paged P={page} {kernel_cache.variant(cfg)}", chip, kernel,
        warps, cache, opt, lambda: tensor_core_unsupported(cfg),
        f"paged P={page} {cfg.describe()}", layouts)
    return dict(zip(layouts, kernels))


def _compile_cached(text, label, chip, kernel, warps, cache, opt,
                    unsupported, what, layouts=("dense",)):
    """[(name, PTX, description)] of the tensor-core kernels of `layouts`
    (one each) that --gated-attention-to-ptx makes of MLIR `text`, through
    the disk cache (compile_kernel)."""
    from . import kernel_cache
    if cache is None:
        cache = kernel_cache.directory()
    if cache:
        key = hashlib.sha256(
            f"{_CACHE_FORMAT}\n{chip}\n{kernel}\n{warps}\n{text}".encode()
        ).hexdigest()[:20]
        stems = [os.path.join(cache, key if layout == "dense"
                              else f"{key}-{layout}") for layout in layouts]
        # (`opt` is the tool a miss compiles with; entries are checked
        # against the default one, which the key's users compile with.)
        tool = kernel_cache.tool_identity()
        entries = [_read_cache(stem, tool) for stem in stems]
        if all(entries):
            return entries
    with kernel_cache.compile_logged(f"{label} for {chip}", cache or None):
        lowered = runner.compile_module(
            text, [f"--gated-attention-to-ptx=chip={chip} kernel={kernel} "
                   f"warps={warps}"], opt=opt)
    found = {}
    for entry in ptx_tools.tensor_core_kernels(lowered):
        found.setdefault(entry[2]["layout"], []).append(entry)
    if any(len(found.get(layout, ())) != 1 for layout in layouts):
        reason = unsupported() or (
            f"the tool made {sum(map(len, found.values()))} tensor-core "
            f"kernels of layouts {sorted(found)}")
        raise ValueError(f"{what}: no tensor-core kernel: {reason}")
    kernels = [found[layout][0] for layout in layouts]
    for name, ptx, _ in kernels:
        ptx_tools.check_resolved(name, ptx)
    if cache:
        for stem, (_, ptx, desc) in zip(stems, kernels):
            _write_cache(stem, ptx, desc, tool)
    return kernels


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--case", action="append", default=[],
                   help="configuration spec as for gated_attention.testing.check")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--chip", default="sm_90")
    p.add_argument("--kernel", default="auto",
                   help="auto, mma-sync, or wgmma (with --chip sm_90a)")
    p.add_argument("--opt", help="gated-attention-opt to use")
    args = p.parse_args(argv)
    try:
        cfgs = [c for spec in args.case for c in config.parse_cases(spec)]
    except ValueError as e:
        p.error(str(e))
    if not cfgs:
        p.error("no cases")
    driver = Driver()
    failures = 0
    # Configs differing in gate/combine/scale get kernels of their own:
    # compile each alone so that its kernel is unambiguous.
    for i, cfg in enumerate(cfgs):
        name, ptx, desc = compile_kernel(cfg, args.opt, args.chip,
                                         args.kernel)
        kernel = Kernel(driver, ptx, desc)
        inputs = cfg.inputs(seed=args.seed * 1000 + i)
        out = run(driver, kernel, cfg, inputs)
        result = accuracy.compare(cfg, out, cfg.reference(inputs), inputs)
        failures += not result.ok
        print(f"{'PASS' if result.ok else 'FAIL'} {cfg.describe()} "
              f"[{name}] {accuracy.describe(result)}", flush=True)
    print(f"{len(cfgs) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
