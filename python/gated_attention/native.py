"""Compile MLIR to a host shared library and call it with numpy arrays.

The module is lowered with gated-attention-opt (by default
`--gated-attention-to-llvm`), translated to LLVM IR, compiled by LLVM 22's
`llc` for the host CPU and linked into a shared library; functions marked
`llvm.emit_c_interface` are then called through ctypes with MLIR memref
descriptors. Used by the benchmarks; stdlib + numpy only.
"""

import ctypes
import functools
import glob
import os
import platform
import re
import subprocess
import tempfile
import time

import numpy as np

from . import runner

_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]


def _cpuinfo_field(name):
    """The first value of `name` in /proc/cpuinfo, split into words; empty
    where unreadable."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].split() for line in f
                         if line.split(":", 1)[0].strip() == name), [])
    except OSError:
        return []


def cpu_flags():
    """This CPU's feature flags as the kernel names them (/proc/cpuinfo:
    avx2, avx512f, avx512_bf16, amx_bf16, ...); empty where unreadable.
    --gated-attention-to-llvm's matrix-units=host picks by the same
    features (LLVM's names)."""
    return frozenset(_cpuinfo_field("flags"))


def host_matrix_units():
    """What --gated-attention-to-llvm's matrix-units=host multiplies bf16
    tiles with on this CPU at its default vector width (Pipelines.cpp,
    resolvedMatrixUnits): on a CPU with AVX-512, AMX tiles where it has
    AMX-TILE and AMX-BF16 (Linux lists them once it enables their state),
    else AVX512-BF16 on an AMD CPU with it (LLVM's znver*, where vdpbf16ps
    issues as often as an FMA; Intel issues it half as often); else FMAs."""
    flags = cpu_flags()
    if "avx512f" not in flags:
        return "fma"
    if {"amx_tile", "amx_bf16"} <= flags:
        return "amx"
    amd = _cpuinfo_field("vendor_id") == ["AuthenticAMD"]
    return "avx512-bf16" if amd and "avx512_bf16" in flags else "fma"


# Compiled code that multiplies on AMX tiles (matrix-units=amx) holds this
# load-time constructor (gated-attention-amx-tiles), which asks Linux for the
# tile data state and exits the process where it is refused.
AMX_CONSTRUCTOR = b"__gated_attention_request_amx"

# Linux x86-64: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)
# (arch/x86/include/uapi/asm/prctl.h).
_SYS_ARCH_PRCTL, _ARCH_REQ_XCOMP_PERM, _XFEATURE_XTILEDATA = 158, 0x1023, 18
_amx_granted = False


def request_amx():
    """Asks Linux for the AMX tile data state, once per process (the
    permission covers all its threads); raises ToolError naming AMX where
    it is refused (a CPU or kernel without AMX), before the constructor of
    AMX code would exit the process."""
    global _amx_granted
    if _amx_granted:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    status = libc.syscall(ctypes.c_long(_SYS_ARCH_PRCTL),
                          ctypes.c_long(_ARCH_REQ_XCOMP_PERM),
                          ctypes.c_long(_XFEATURE_XTILEDATA))
    if status != 0:
        errno = ctypes.get_errno()
        raise runner.ToolError(
            f"AMX: this process may not use AMX tiles: the kernel refused "
            f"arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) "
            f"({os.strerror(errno)}; a CPU without AMX-TILE, or Linux before "
            f"5.16); the code was compiled with matrix-units=amx: compile it "
            f"with matrix-units=avx512-bf16 or fma")
    _amx_granted = True


def _load(path):
    """dlopen()s a compiled library, first requesting AMX for AMX code."""
    with open(path, "rb") as f:
        if AMX_CONSTRUCTOR in f.read():
            request_amx()
    return ctypes.CDLL(path)


@functools.cache
def memref_descriptor(rank):
    """ctypes struct of a ranked memref descriptor."""
    class Descriptor(ctypes.Structure):
        _fields_ = [("allocated", ctypes.c_void_p),
                    ("aligned", ctypes.c_void_p),
                    ("offset", ctypes.c_int64),
                    ("sizes", ctypes.c_int64 * rank),
                    ("strides", ctypes.c_int64 * rank)]
    return Descriptor


def _descriptor_of(array):
    """Descriptor viewing a C-contiguous numpy array (kept alive by caller)."""
    desc = memref_descriptor(array.ndim)()
    ptr = array.ctypes.data_as(ctypes.c_void_p)
    desc.allocated = desc.aligned = ptr
    desc.offset = 0
    item = array.itemsize
    for i, (n, s) in enumerate(zip(array.shape, array.strides)):
        desc.sizes[i] = n
        desc.strides[i] = s // item
    return desc


def _run(cmd, stdin=None):
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    if proc.returncode:
        raise runner.ToolError(f"{' '.join(cmd)} failed:\n{proc.stderr[-4000:]}")
    return proc.stdout


def _compiler_rt_builtins(llvm_lib):
    """LLVM's compiler-rt builtins archive for this machine, if installed."""
    found = sorted(glob.glob(os.path.join(
        llvm_lib, "clang", "*", "lib", "linux",
        f"libclang_rt.builtins-{platform.machine()}.a")))
    return found[-1:]


def target_cpu(pipeline):
    """llc's -mcpu for code lowered by `pipeline` (pass-pipeline arguments):
    the CPU its last `target-cpu=` option names, else this machine."""
    found = re.findall(r"(?:^|[\s{=])target-cpu=([^\s}]+)", " ".join(pipeline))
    cpu = found[-1] if found else "host"
    return "native" if cpu == "host" else cpu


class SharedLibrary:
    """A module compiled to a shared library in a temporary directory;
    `seconds` holds each stage's wall time (opt, translate, llc, link) and
    `ir_path` / `object_path` what the middle stages made (for
    bench/compile_time.py); `opt` overrides gated-attention-opt; llc's
    -mcpu is `cpu`, else the CPU the pipeline's `target-cpu` option names
    (this machine's without one)."""

    def __init__(self, mlir_text, pipeline=("--gated-attention-to-llvm",),
                 openmp=False, opt=None, cpu=None):
        self._dir = tempfile.TemporaryDirectory(prefix="gated-attention-")
        d = self._dir.name
        clock = [time.perf_counter()]
        llvm_dialect = runner.compile_module(mlir_text, list(pipeline),
                                             opt=opt)
        clock.append(time.perf_counter())
        # llc -mcpu=native cannot select tile instructions for a CPU
        # without AMX: say so first.
        if AMX_CONSTRUCTOR.decode() in llvm_dialect:
            request_amx()
        llvm_bin, llvm_lib = runner.llvm_dirs()
        ll = os.path.join(d, "module.ll")
        obj = os.path.join(d, "module.o")
        self.path = os.path.join(d, "module.so")
        self.ir_path, self.object_path = ll, obj
        with open(ll, "w") as f:
            f.write(_run([os.path.join(llvm_bin, "mlir-translate"),
                          "--mlir-to-llvmir"], llvm_dialect))
        clock.append(time.perf_counter())
        _run([os.path.join(llvm_bin, "llc"), "-O3",
              f"-mcpu={cpu or target_cpu(pipeline)}",
              "-relocation-model=pic", "-filetype=obj", ll, "-o", obj])
        clock.append(time.perf_counter())
        # The pipeline turns copies into loops, so no MLIR runtime library is
        # linked; only libomp for the parallel loop.
        libs = [f"-L{llvm_lib}", f"-Wl,-rpath,{llvm_lib}", "-lm"]
        if openmp:
            libs.insert(2, "-lomp")
        # LLVM lowers some conversions (f32 -> bf16 outside vector code) to
        # compiler-rt calls that GCC 12's libgcc lacks.
        libs += _compiler_rt_builtins(llvm_lib)
        _run(["gcc", "-shared", "-o", self.path, obj] + libs)
        clock.append(time.perf_counter())
        self.seconds = dict(zip(("opt", "translate", "llc", "link"),
                                (b - a for a, b in zip(clock, clock[1:]))))
        try:
            self.lib = _load(self.path)
        except OSError as e:
            raise runner.ToolError(f"the compiled module does not load: {e} "
                                   f"(a runtime function missing: install "
                                   f"libclang-rt-22-dev)") from None

    @classmethod
    def load(cls, path):
        """A library compiled earlier (e.g. by another process)."""
        self = cls.__new__(cls)
        self._dir = None
        self.path = path
        self.lib = _load(path)
        return self

    def call_into(self, name, args):
        """Calls `_mlir_ciface_<name>` on C-contiguous numpy arrays, the
        function writing its results into some of them (destination
        style: memref arguments, no returned buffer)."""
        if not all(a.flags.c_contiguous for a in args):
            raise ValueError("call_into takes C-contiguous arrays (the "
                             "callee writes into them)")
        descs = [_descriptor_of(a) for a in args]
        getattr(self.lib, f"_mlir_ciface_{name}")(
            *[ctypes.byref(x) for x in descs])

    def call(self, name, args, result_rank, result_dtype):
        """Calls `_mlir_ciface_<name>` on numpy arrays; returns the result
        (a fresh numpy array; the callee's buffer is freed)."""
        args = [np.ascontiguousarray(a) for a in args]
        descs = [_descriptor_of(a) for a in args]
        result = memref_descriptor(result_rank)()
        fn = getattr(self.lib, f"_mlir_ciface_{name}")
        fn(ctypes.byref(result), *[ctypes.byref(x) for x in descs])
        shape = tuple(result.sizes)
        dtype = np.dtype(result_dtype)
        count = int(np.prod(shape))
        buffer = (ctypes.c_char * (count * dtype.itemsize)).from_address(
            result.aligned + result.offset * dtype.itemsize)
        out = np.frombuffer(buffer, dtype=dtype, count=count).reshape(shape).copy()
        _libc.free(result.allocated)
        return out
