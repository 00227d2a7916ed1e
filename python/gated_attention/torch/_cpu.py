"""The op's CPU kernel, called on torch tensors' memory in place.

One function per configuration (B, Sq, Skv and every stride are run-time
values), compiled by --gated-attention-to-llvm from
mlir.destination_function: it reads q, k, v, g through their strides and
computes the result in the output tensor, so a call copies nothing. The only
requirement is a contiguous innermost dim (FlashAttention's too); a tensor
without one is copied first (`.contiguous()`: one pass over it). With
`lse`, the function also writes the op's log-sum-exp into a [B, Hq, Sq]
tensor (the training path's forward, which autograd saves it from).
"""

import ctypes
import functools

from .. import kernel_cache, mlir


@functools.cache
def descriptor_type(rank):
    """The memref descriptor of `rank` (allocated, aligned, offset, sizes,
    strides), the C interface's argument."""
    return type(f"_Descriptor{rank}", (ctypes.Structure,), {"_fields_": [
        ("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
        ("offset", ctypes.c_int64), ("sizes", ctypes.c_int64 * rank),
        ("strides", ctypes.c_int64 * rank)]})


# The tensors' descriptor ([B, H, S, D]).
_Descriptor = descriptor_type(4)


def innermost_contiguous(x):
    """`x`, or a contiguous copy if its innermost dim is strided."""
    return x if x.shape[-1] == 1 or x.stride(-1) == 1 else x.contiguous()


def _descriptor(x):
    d = descriptor_type(x.dim())()
    d.allocated = d.aligned = x.data_ptr()
    d.offset = 0
    for i, (n, s) in enumerate(zip(x.shape, x.stride())):
        d.sizes[i] = n
        # A dim of size 1 is never stepped over: its stride is free (torch
        # leaves any value there), and the type's static 1 is what it means.
        d.strides[i] = 1 if n == 1 else s
    return d


class CpuKernel:
    """The configuration `cfg`'s function (with `lse`, the one that also
    writes the log-sum-exp), loaded from the disk cache or compiled into
    it by `pipeline` (the benchmarks pass options)."""

    def __init__(self, cfg, lse=False, pipeline=("--gated-attention-to-llvm",)):
        text = "module {\n" + mlir.destination_function(
            cfg, "attention", lse=lse) + "}\n"
        what = " with lse" if lse else ""
        # (Keeps the library, and its directory when not cached, alive.)
        self._built = kernel_cache.cpu_library(
            text, f"{kernel_cache.variant(cfg)}{what} for the CPU", pipeline)
        self.path = self._built.path
        self._lib = self._built.lib
        self._fn = self._lib._mlir_ciface_attention
        self._fn.restype = None
        self._fn.argtypes = [ctypes.POINTER(_Descriptor)] * (
            len(cfg.operands) + 1) + (
            [ctypes.POINTER(descriptor_type(3))] if lse else [])

    def __call__(self, *tensors):
        """tensors: [B, H, S, D] views of q, k, v[, g] and the output (whose
        innermost dims are contiguous)[, and the [B, Hq, Sq] lse]."""
        descs = [_descriptor(x) for x in tensors]
        self._fn(*[ctypes.byref(d) for d in descs])
