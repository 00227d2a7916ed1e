"""A CUDA device faked on a machine without one, for the torch op's CUDA
path: a stand-in for libcuda (every function returns CUDA_SUCCESS at once;
cuLaunchKernel's calls can be recorded) and torch.cuda's device queries
answering for a device of a chosen compute capability. CPU tensors then
stand for device memory by their addresses. Used by the tests of the op's
launches and kernel choice and by bench/torch_op_overhead.py."""

import contextlib
import ctypes
import types

import torch

from .. import cuda


class StandInLib:
    """libcuda's functions, returning CUDA_SUCCESS. cuMemAlloc hands out
    addresses 0x10000 apart; the current context is the driver's. With
    `record`, calls are kept in `calls` as (name, args), cuLaunchKernel's
    as (grid + block + shared memory, stream, parameter words as unsigned
    64-bit read at the call: a later launch may rewrite them)."""

    def __init__(self, record=False):
        self.record, self.calls, self.next = record, [], 0x10000

    def cuMemAlloc_v2(self, ptr, nbytes):
        ptr._obj.value = self.next   # (a ctypes.byref)
        self.next += 0x10000
        return 0

    def cuCtxGetCurrent(self, ptr):
        ptr._obj.value = 1
        return 0

    def cuLaunchKernel(self, function, *args):
        if self.record:
            words = [ctypes.cast(p, ctypes.POINTER(ctypes.c_uint64))
                     .contents.value for p in args[8]]
            self.calls.append(("cuLaunchKernel",
                               (args[:7], args[7].value, words)))
        return 0

    def __getattr__(self, name):
        def call(*args):
            if self.record:
                self.calls.append((name, args))
            return 0
        return call


def fake_device(capability=(9, 0), record=False):
    """Fakes device cuda:0 of `capability` for cuda.Driver (a StandInLib,
    `record` as there) and torch.cuda's queries, for the rest of the
    process; returns (the torch.device, a namespace whose `capability` a
    caller may change)."""
    from ..torch import _cuda

    class Driver(cuda.Driver):
        def __init__(self, device=0):
            self.lib = StandInLib(record)
            self.context = ctypes.c_void_p(1)

    state = types.SimpleNamespace(capability=capability)
    cuda.Driver = Driver
    torch.cuda.get_device_capability = lambda device=None: state.capability
    torch.cuda.get_device_name = lambda device=None: "stand-in"
    torch.cuda.get_device_properties = lambda device=None: (
        types.SimpleNamespace(multi_processor_count=132))
    torch.cuda.device = lambda device: contextlib.nullcontext()
    _cuda.current_stream = lambda device: 0x5000
    return torch.device("cuda", 0), state
