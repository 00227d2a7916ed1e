# REQUIRES: torch
# RUN: %PYTHON %s
"""The torch op's CUDA launches made once per call signature, without a
GPU (cuda.Backend on a recording stand-in for libcuda, a faked compute
capability 9.0 device, CPU tensors' addresses): a second call of one
signature plans nothing and launches with its own buffers' addresses in
the parameters the first call built (memref words, sizes, strides, grid);
another shape, layout or alignment is another signature (the oldest of
too many goes); the wgmma
kernel's TMA maps are encoded once per buffer address; a decode step's
split-KV partials come per call. The op's own signature cache still
refuses what _args.check refuses (another dtype, a gate of another shape,
a bad layout) after a good call."""

import os

import torch

from gated_attention import config
from gated_attention.testing.fake_cuda import fake_device
from gated_attention.torch import _args, _cuda, _op

os.environ.pop("GATED_ATTENTION_CUDA_KERNEL", None)
device, _ = fake_device((9, 0), record=True)


def launches(lib):
    """The cuLaunchKernel calls recorded since the last time."""
    found = [args for name, args in lib.calls if name == "cuLaunchKernel"]
    lib.calls.clear()
    return found


def memref_words(desc, name, x):
    """The five words of memref argument `name` on tensor `x`."""
    words = {"allocated": x.data_ptr(), "aligned": x.data_ptr(),
             "offset": 0, "size": x.numel(), "stride": 1}
    return [words[w] for w in desc["abi"]["memref"]]


def bf16(*shape):
    return torch.randn(*shape).to(torch.bfloat16)


def kernel_of(spec):
    """The CudaKernel of `spec` on the faked device and its (cleared)
    recording libcuda."""
    cfg = _args.compile_key(config.parse_cases(spec)[0])
    kernel = _cuda.CudaKernel(cfg, device)
    kernel._backend.driver.lib.calls.clear()
    return kernel, kernel._backend.driver.lib


# 1. The mma.sync kernel (D = 96 does not fit wgmma): the second call's
# launch is the first's with the new addresses.
kernel, lib = kernel_of("dtype=bf16,d=96,dv=96,hq=4,hkv=2,causal=1")
assert kernel._target == ("sm_90", "mma-sync")
first = [bf16(2, h, 40, 96) for h in (4, 2, 2, 4, 4)]
kernel(*first)
second = [bf16(2, h, 40, 96) for h in (4, 2, 2, 4, 4)]
kernel(*second)
assert len(kernel._calls) == 1
(dims1, stream1, words1), (dims2, stream2, words2) = launches(lib)
assert dims1 == dims2 and stream1 == stream2 == 0x5000
desc = kernel._desc
at = 0
for a in desc["arguments"]:
    n = len(desc["abi"]["memref"]) if a["kind"] == "memref" else 1
    got1, got2 = words1[at:at + n], words2[at:at + n]
    if a["kind"] == "memref":
        index = ("q", "k", "v", "gate", "out").index(a["name"])
        assert got1 == memref_words(desc, a["name"], first[index]), a
        assert got2 == memref_words(desc, a["name"], second[index]), a
    else:
        assert got1 == got2, a   # sizes and strides: the signature's
    at += n
assert at == len(words1)
assert dims1[:3] == (-(-40 // desc["rows_per_block"]), 4, 2), dims1
# Another length, layout (bshd: strided views) or alignment: another
# signature.
kernel(*[bf16(2, h, 41, 96) for h in (4, 2, 2, 4, 4)])
kernel(*[bf16(2, 40, h, 96).transpose(1, 2) for h in (4, 2, 2, 4, 4)])
shifted = bf16(2 * 4 * 40 * 96 + 1)[1:].view(2, 4, 40, 96)
kernel(shifted, *second[1:])
assert len(kernel._calls) == 4, len(kernel._calls)
assert len(launches(lib)) == 3
# Past _MAX_SIGNATURES the oldest signature goes (and is planned again).
_cuda._MAX_SIGNATURES = 4
oldest = next(iter(kernel._calls))
kernel(*[bf16(2, h, 42, 96) for h in (4, 2, 2, 4, 4)])
assert len(kernel._calls) == 4 and oldest not in kernel._calls
launches(lib)
kernel(*first)
(_, _, words), = launches(lib)
assert words[:5] == memref_words(desc, "q", first[0])
_cuda._MAX_SIGNATURES = 256
print("PASS mma.sync launches prepared once per signature")

# 2. The wgmma kernel: TMA maps encoded once per (operand, address).
kernel, lib = kernel_of("dtype=bf16,d=64,dv=64,hq=4,hkv=2,causal=1")
assert kernel._target == ("sm_90a", "wgmma")
tensors = [bf16(1, h, 200, 64) for h in (4, 2, 2, 4, 4)]


def encodes():
    return sum(name == "cuTensorMapEncodeTiled" for name, _ in lib.calls)


kernel(*tensors)
assert encodes() == 3
launches(lib)
kernel(*tensors)
assert encodes() == 0 and len(launches(lib)) == 1
tensors[0] = bf16(1, 4, 200, 64)
kernel(*tensors)
assert encodes() == 1   # q's new address
print("PASS wgmma TMA maps once per address")

# 3. A decode step: split-KV (split kernel then merge), its partials per
# call at the merge's addresses.
q1, k1 = bf16(1, 4, 1, 64), bf16(1, 2, 4096, 64)
lib.calls.clear()
kernel(q1, k1, k1, q1, torch.empty_like(q1))
kernel(q1, k1, k1, q1, torch.empty_like(q1))
found = launches(lib)
assert len(found) == 4 and found[0][0] == found[2][0], [f[0] for f in found]
print("PASS decode step's split-KV launches")

# 4. The op's signature cache: what _args.check refuses stays refused.
kernels = {}
_op.kernel_for = lambda cfg, _, lse=False: kernels.setdefault(
    _args.compile_key(cfg), _cuda.CudaKernel(_args.compile_key(cfg), device))
_op._launch_cpu = _op._launch_cuda   # CPU tensors launch as on the device
q, k = bf16(1, 4, 32, 64), bf16(1, 2, 32, 64)
out, _ = _op._forward(q, k, k, q, True, None, "sigmoid", "mul", "bhsd",
                      False)
assert out.shape == q.shape and len(_op._calls) == 1
_op._forward(bf16(1, 4, 32, 64), k, k, None, True, None, "sigmoid",
             "mul", "bhsd", False)
assert len(_op._calls) == 2
for args, words in (
        ((q, k.half(), k, q, True, None, "sigmoid", "mul", "bhsd"),
         "all tensors must have one dtype"),
        ((q, k, k, bf16(1, 4, 31, 64), True, None, "sigmoid", "mul",
          "bhsd"), "layout='bhsd'"),
        ((q, k, k, q, True, None, "sigmoid", "mul", "hsbd"),
         "unknown layout 'hsbd'")):
    try:
        _op._forward(*args, False)
        raise AssertionError(f"no error: {words}")
    except ValueError as e:
        assert words in str(e), e
assert len(_op._calls) == 2
print("PASS the op's signature cache keeps its checks")
