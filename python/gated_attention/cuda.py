"""Run the PTX of `--gated-attention-to-ptx` on an NVIDIA GPU.

Talks to the CUDA driver API (libcuda.so.1) through ctypes, so it needs no
Python package beyond numpy: it loads a PTX file (the driver JIT-compiles it
for the device), reads the kernel's launch description (the JSON file that
``python3 -m gated_attention.ptx`` writes next to it) and launches it:
`Backend` is gated_attention.launcher's backend for the driver. The
driver's primary context is used, the one torch and cupy use too, so
device pointers from either can be passed to a launch.

    python3 -m gated_attention.cuda --case 'dtype=bf16,d=128,sq=300,skv=300,causal=0|1'

compiles each case with gated-attention-opt, runs it on the GPU and compares
with the float64 reference (what the `REQUIRES: cuda-gpu` tests run); with
--lse the op also returns its log-sum-exp, compared with its own bound.
"""

import argparse
import ctypes
import dataclasses
import hashlib
import json
import os
import sys
import threading

import numpy as np

from . import (accuracy, config, dtypes, kernel_cache, launch, launcher,
               mlir, paged_mlir, ptx as ptx_tools, runner)
from .ptx import CHIPS, tensor_core_unsupported

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


# TMA maps a loaded kernel keeps (128 bytes of device memory each).
_MAX_MAPS = 4096


class _Loaded:
    """A kernel loaded into the driver's context: its module, its function
    and the TMA maps made for its launches, by (argument, buffer, dims): a
    map holds only those, so one made for an earlier launch stays valid."""

    def __init__(self, module, function):
        self.module, self.function, self.maps = module, function, {}


class PreparedLaunch:
    """A launcher.Launch's kernel parameters as ctypes values, made once
    and launched on any buffers of the same sizes: a call rewrites only
    the buffers' addresses (and the TMA maps', made once per address).
    A memref is the five parameters of the description's abi (allocated,
    aligned, offset, size, stride; validate() checked the order), an index
    or stride one i64, a tensor map the device address of its
    CUtensorMap. What a per-call launch spends in Python is building
    these: the torch op keeps one per call signature."""

    def __init__(self, backend, kernel, planned):
        self._backend, self._kernel = backend, kernel
        values, self._pointers, self._maps = [], [], []
        for arg in planned.arguments:
            if isinstance(arg, launcher.TensorMap):
                slot = ctypes.c_uint64(0)
                self._maps.append((arg, slot))
                values.append(slot)
            elif isinstance(arg, launcher.Memref):
                words = {"allocated": ctypes.c_uint64(0),
                         "aligned": ctypes.c_uint64(0),
                         "offset": ctypes.c_int64(0),
                         "size": ctypes.c_int64(arg.elements),
                         "stride": ctypes.c_int64(1)}
                self._pointers.append(
                    (arg.name, words["allocated"], words["aligned"]))
                values += [words[w] for w in planned.desc["abi"]["memref"]]
            else:
                values.append(ctypes.c_int64(arg.value))
        self._values = values   # (what _params points into)
        self._params = (ctypes.c_void_p * len(values))(
            *[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p)
              for v in values])
        self._dims = planned.grid + planned.block + (planned.shared_memory,)
        # Threads share a prepared launch: fill and launch as one.
        self._lock = threading.Lock()

    def __call__(self, addresses, stream=None):
        """Launches on `addresses` ({argument name: device address}) on
        `stream` (a CUstream handle; None: the default stream)."""
        driver = self._backend.driver
        with self._lock:
            for name, allocated, aligned in self._pointers:
                allocated.value = aligned.value = addresses[name]
            for arg, slot in self._maps:
                slot.value = self._backend._map(self._kernel, arg,
                                                addresses[arg.name])
            driver._check(driver.lib.cuLaunchKernel(
                self._kernel.function, *self._dims, ctypes.c_void_p(stream),
                self._params, None), "cuLaunchKernel")


class Backend:
    """gated_attention.launcher's CUDA backend: kernels loaded from PTX
    into `driver`'s context, launched on a CUDA stream (a CUstream handle;
    None: the default stream), buffers in device memory (device addresses).
    A launch reads nothing back (no synchronization: it can be captured in
    a CUDA graph)."""

    def __init__(self, driver):
        self.driver = driver

    def kernel(self, ptx_text, desc):
        """The launcher.Kernel of entry desc["kernel"] of `ptx_text`."""
        return launcher.Kernel(self, ptx_text, desc)

    def kernel_from_files(self, ptx_path, json_path):
        """kernel() of a PTX file and its description (the JSON file that
        ``python3 -m gated_attention.ptx`` writes)."""
        with open(ptx_path) as f:
            text = f.read()
        with open(json_path) as f:
            desc = json.load(f)
        return self.kernel(text, desc)

    def load(self, ptx_text, desc):
        driver = self.driver
        module = ctypes.c_void_p()
        # cuModuleLoadData JIT-compiles PTX for the current device.
        driver._check(driver.lib.cuModuleLoadData(
            ctypes.byref(module), ptx_text.encode() + b"\0"),
            "cuModuleLoadData")
        function = ctypes.c_void_p()
        driver._check(driver.lib.cuModuleGetFunction(
            ctypes.byref(function), module, desc["kernel"].encode()),
            "cuModuleGetFunction")
        # Above 48 KiB, dynamic shared memory must be opted into.
        driver._check(driver.lib.cuFuncSetAttribute(
            function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            desc["dynamic_shared_memory"]), "cuFuncSetAttribute")
        return _Loaded(module, function)

    def address(self, buffer):
        return int(buffer)

    def _map(self, kernel, arg, address):
        """The device address of the TMA map of tensor-map argument `arg`
        over the buffer at `address`: made once per (argument, address,
        dims) and kept with the kernel (a new one copies 128 bytes to the
        device synchronously). Past _MAX_MAPS of a kernel they are freed,
        once the device has finished the launches that read them."""
        if 0 in arg.dims:
            # An empty tensor (Skv = 0: the dQ kernel writes zeros), whose
            # boxes are never read; cuTensorMapEncodeTiled rejects it.
            return 0
        key = (arg.name, address, arg.dims)
        found = kernel.maps.get(key)
        if found is None:
            if len(kernel.maps) >= _MAX_MAPS:
                self.driver.synchronize()
                for device in kernel.maps.values():
                    self.driver.free(device)
                kernel.maps.clear()
            found = kernel.maps[key] = self.driver.tensor_map(
                address, arg.element_type, list(arg.dims), list(arg.box),
                arg.swizzle)
        return found

    def launch(self, kernel, planned, stream=None):
        """cuLaunchKernel of a launcher.Launch (see PreparedLaunch)."""
        self.prepare(kernel, planned)(
            {a.name: a.buffer for a in planned.arguments
             if isinstance(a, (launcher.Memref, launcher.TensorMap))},
            stream)

    def prepare(self, kernel, planned):
        """The PreparedLaunch of `planned` (a launcher.Launch of `kernel`,
        this backend's loaded kernel)."""
        return PreparedLaunch(self, kernel, planned)

    def is_current(self):
        """Whether the driver's context is this thread's current one (what
        a launch needs)."""
        current = ctypes.c_void_p()
        self.driver._check(self.driver.lib.cuCtxGetCurrent(
            ctypes.byref(current)), "cuCtxGetCurrent")
        return current.value == self.driver.context.value

    # Memory, for launcher.run on host arrays.
    def upload(self, array, element_type):
        raw = np.ascontiguousarray(array, launcher.STORAGE[element_type])
        ptr = self.driver.alloc(max(raw.nbytes, 16))
        if raw.nbytes:
            self.driver.upload(ptr, raw.tobytes())
        return ptr

    def empty(self, elements, element_type):
        size = np.dtype(launcher.STORAGE[element_type]).itemsize
        return self.driver.alloc(max(elements * size, 16))

    def read(self, buffer, elements, element_type):
        dtype = np.dtype(launcher.STORAGE[element_type])
        return np.frombuffer(self.driver.download(
            buffer, elements * dtype.itemsize), dtype).copy()

    def free(self, buffer):
        self.driver.free(buffer)

    def synchronize(self):
        self.driver.synchronize()


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
                   cache=None, row_strides=None, lse=False, persistent=False):
    """(kernel name, PTX text, launch description) of the tensor-core kernel
    that --gated-attention-to-ptx makes for `cfg` (with the plugins of
    runner.load_plugin; `opt` overrides the tool; `kernel` is the
    pipeline's kernel option: auto, mma-sync, or wgmma with chip sm_90a;
    `warps` its warps option, 0 for the default; `row_strides` the
    elements between rows of the buffers it will be given, {name: n} for
    some of q, k, v, gate, out: mlir.attention_attributes; `lse`: the
    kernel of the op that returns its log-sum-exp too, which takes an f32
    "lse" [B, Hq, Sq] argument after "out"; `persistent`: the pipeline's
    persistent option, the wgmma kernel looping over its tiles, whose
    description then says "persistent" and whose launch.grid takes the
    device's SM count). Raises ValueError when
    the tensor-core kernel does not take `cfg` and ptx.MissingLibdeviceError
    when its PTX calls libdevice functions that were not linked.

    Kernels are kept in kernel_cache's directory (GATED_ATTENTION_CACHE_DIR,
    else the user's cache directory) by a hash of the op's MLIR and the
    chip, and read back instead of compiled: compile on one machine, run on
    another that has no MLIR. Any number of processes may share the
    directory: entries are written by atomic renames and checked when read,
    and a reader never sees a partial one. `cache` (a directory; "" for
    none) overrides it; kernel_cache's log line reports every compile."""
    config.check_choice("chip", chip, CHIPS)
    config.check_choice("kernel", kernel, ("auto", "mma-sync", "wgmma"))
    if isinstance(warps, bool) or not isinstance(warps, int) or warps < 0:
        raise ValueError(f"warps must be a non-negative int (0: the "
                         f"default), got {warps!r}")
    _check_persistent(persistent, chip, kernel)
    text = mlir.attention_function(cfg, "case", row_strides=row_strides,
                                   lse=lse)
    rows = _rows_label(row_strides, lse)
    return _compile_cached(
        text, f"{kernel_cache.variant(cfg)}{rows}"
        f"{' persistent' if persistent else ''}", chip, kernel, warps,
        cache, opt, lambda: tensor_core_unsupported(cfg), cfg.describe(),
        persistent=persistent)[0]


def _check_persistent(persistent, chip, kernel):
    """ValueError unless `persistent` is a bool the kernel can honour: only
    the sm_90a wgmma kernel loops over its tiles."""
    if not isinstance(persistent, bool):
        raise ValueError(f"persistent must be True or False, got "
                         f"{persistent!r}")
    if persistent and (chip != "sm_90a" or kernel == "mma-sync"):
        raise ValueError(f"persistent=True needs the wgmma kernel (chip "
                         f"sm_90a, kernel auto or wgmma), got chip {chip} "
                         f"and kernel {kernel}")


def _rows_label(row_strides, lse):
    """What the compile log adds to a kernel's variant for `row_strides`
    and `lse`."""
    rows = "" if not row_strides else " rows " + ",".join(
        f"{n}={s}" for n, s in sorted(row_strides.items()))
    return rows + (" lse" if lse else "")


def compile_decode_kernels(cfg, opt=None, chip="sm_90", warps=0,
                           cache=None, row_strides=None, kernel="auto",
                           lse=False):
    """{layout: (kernel name, PTX text, launch description)} of the dense
    op's kernels for a decode step of `cfg` (Sq = 1) at every B and Skv:
    "dense", and split-KV's "dense-split" and "split-merge"; `row_strides`
    and `lse` as for compile_kernel (with `lse` the direct kernel and the
    merge write it). `kernel` as for compile_kernel: with "wgmma"
    (chip sm_90a) the direct kernel is the warp-specialized one, split-KV's
    stay mma.sync. Cached as compile_kernel."""
    config.check_choice("chip", chip, CHIPS)
    config.check_choice("kernel", kernel, ("auto", "mma-sync", "wgmma"))
    cfg = dataclasses.replace(cfg, b=1, sq=1, skv=1, dynamic=("b", "skv"))
    text = mlir.attention_function(cfg, "case", row_strides=row_strides,
                                   lse=lse)
    rows = _rows_label(row_strides, lse)
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
    config.check_choice("chip", chip, CHIPS)
    config.check_choice("kernel", kernel, ("auto", "mma-sync", "wgmma"))
    text = paged_mlir.paged_ir(cfg, page)
    layouts = ("paged", "paged-split", "split-merge")
    kernels = _compile_cached(
        text, f"paged P={page} {kernel_cache.variant(cfg)}", chip, kernel,
        warps, cache, opt, lambda: tensor_core_unsupported(cfg),
        f"paged P={page} {cfg.describe()}", layouts)
    return dict(zip(layouts, kernels))


def compile_backward_kernels(cfg, opt=None, chip="sm_90", cache=None,
                             kernel="auto"):
    """{layout: (kernel name, PTX text, launch description)} of the
    backward's three kernels (launcher.BACKWARD_LAYOUTS) for the heads,
    head dims and variant of `cfg`, at every B, Sq and Skv: a
    gated_attention.attention_backward reading the forward's log-sum-exp.
    `kernel` as for compile_kernel: with "wgmma" (chip sm_90a) the dK/dV
    and dQ kernels ("backward-kv", "backward-q") are the warp-specialized
    wgmma ones where the head dims fit them (docs/Backward.md); otherwise
    they are mma.sync's. Raises ValueError with the tool's reason for a
    configuration the kernels do not take. Cached as compile_kernel."""
    config.check_choice("chip", chip, CHIPS)
    config.check_choice("kernel", kernel, ("auto", "mma-sync", "wgmma"))
    cfg = dataclasses.replace(cfg, b=1, sq=1, skv=1,
                              dynamic=("b", "sq", "skv"))
    text = mlir.backward_kernel_function(cfg, "case")
    try:
        kernels = _compile_cached(
            text, f"backward {kernel_cache.variant(cfg)}", chip, kernel, 0,
            cache, opt, lambda: "", f"backward {cfg.describe()}",
            launcher.BACKWARD_LAYOUTS)
    except runner.ToolError as e:
        # The tool's diagnostic says which rule the configuration breaks.
        reasons = [line.split("error: ", 1)[1] for line in str(e).splitlines()
                   if "error: " in line]
        raise ValueError(f"backward {cfg.describe()}: "
                         f"{reasons[0] if reasons else e}") from None
    return dict(zip(launcher.BACKWARD_LAYOUTS, kernels))


def _compile_cached(text, label, chip, kernel, warps, cache, opt,
                    unsupported, what, layouts=("dense",), persistent=False):
    """[(name, PTX, description)] of the tensor-core kernels of `layouts`
    (one each) that --gated-attention-to-ptx makes of MLIR `text`, through
    the disk cache (compile_kernel)."""
    pipeline = (f"--gated-attention-to-ptx=chip={chip} kernel={kernel} "
                f"warps={warps}" + (" persistent=1" if persistent else ""))
    if cache is None:
        cache = kernel_cache.directory()
    if cache:
        # Keyed by the whole pipeline: kernels of other options never
        # share an entry.
        key = hashlib.sha256(
            f"{_CACHE_FORMAT}\n{pipeline}\n{text}".encode()
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
        lowered = runner.compile_module(text, [pipeline], opt=opt)
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
    p.add_argument("--lse", action="store_true",
                   help="the op returns its log-sum-exp too: check both")
    args = p.parse_args(argv)
    try:
        cfgs = [c for spec in args.case for c in config.parse_cases(spec)]
    except ValueError as e:
        p.error(str(e))
    if not cfgs:
        p.error("no cases")
    backend = Backend(Driver())
    failures = 0
    # Configs differing in gate/combine/scale get kernels of their own:
    # compile each alone so that its kernel is unambiguous.
    for i, cfg in enumerate(cfgs):
        name, ptx, desc = compile_kernel(cfg, args.opt, args.chip,
                                         args.kernel, lse=args.lse)
        inputs = cfg.inputs(seed=args.seed * 1000 + i)
        arrays = {arg: dtypes.to_bits(inputs[op], cfg.dtype).ravel()
                  for op, arg in (("query", "q"), ("key", "k"),
                                  ("value", "v"), ("gate", "gate"))}
        bits = launcher.run(backend.kernel(ptx, desc), arrays, lse=args.lse,
                            b=cfg.b, sq=cfg.sq, skv=cfg.skv)
        line = ""
        if args.lse:
            bits, lse = bits
            lse_result = accuracy.compare_lse(
                cfg, lse.reshape(cfg.b, cfg.hq, cfg.sq), inputs,
                log2_domain=True)
            line = f" lse {accuracy.describe(lse_result)}"
        out = dtypes.from_bits(bits, cfg.dtype).astype(np.float64).reshape(
            cfg.shapes()["result"])
        result = accuracy.compare(cfg, out, cfg.reference(inputs), inputs,
                                  kernel=desc)
        ok = result.ok and (not args.lse or lse_result.ok)
        failures += not ok
        print(f"{'PASS' if ok else 'FAIL'} {cfg.describe()} "
              f"[{name}] {accuracy.describe(result)}{line}", flush=True)
    print(f"{len(cfgs) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
