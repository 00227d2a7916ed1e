"""Host time of one call of the torch op on CUDA tensors, measured on a
machine without a GPU: the CUDA driver is a stand-in whose functions
return at once, the device a faked compute capability (9.0: the wgmma
kernel, or GATED_ATTENTION_CUDA_KERNEL=mma-sync), and CPU tensors take
the op's CUDA path (_op._launch_cuda with the faked device's
CudaKernel), so what is timed is the Python from gat.attention to
cuLaunchKernel: the signature's lookup (the dispatcher and the argument
checks on its first call only: _op.direct), the output's allocation, the
launch's parameters. The kernels are compiled for real
(or read from the disk cache).

    PYTHONPATH=python .venv/bin/python bench/torch_op_overhead.py [--calls N] [--profile]

prints microseconds per call (the best of 5 runs of N calls) for bhsd D
128 B 1 H 8 S 1024 (the shape of bench/gpu_torch_op.py's host-bound
figure), Qwen3-Next's bshd q | gate halves (S 128: the wgmma kernel copies
q, k and v, which on the CPU is memory time, not overhead), and a decode
step; --profile
adds cProfile's top functions of the first shape. What the stand-in does
not cost, a GPU machine adds: cuLaunchKernel itself (a few us) and
torch's CUDA allocator for the output.
"""

import argparse
import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python"))

import torch  # noqa: E402

import gated_attention.torch as gat  # noqa: E402
from gated_attention.testing.fake_cuda import fake_device  # noqa: E402
from gated_attention.torch import _args, _cuda, _op  # noqa: E402


def route_to_cuda():
    """CPU tensors through the op's CUDA path on a faked 9.0 device."""
    device, _ = fake_device((9, 0))
    kernels = {}

    def kernel_for(cfg, _, lse=False):
        key = _args.compile_key(cfg)
        if key not in kernels:
            kernels[key] = _cuda.CudaKernel(key, device)
        return kernels[key]
    _op.kernel_for = kernel_for

    # CPU tensors launch as if on the device.
    _op._launch_cpu = _op._launch_cuda


def shapes():
    """(name, call) of the timed calls."""
    bf16 = dict(dtype=torch.bfloat16)
    q, k, v, g = (torch.randn(1, 8, 1024, 128).to(**bf16) for _ in range(4))
    proj = torch.randn(1, 128, 16, 512).to(**bf16)
    kq = torch.randn(1, 128, 2, 256).to(**bf16)
    vq = torch.randn(1, 128, 2, 256).to(**bf16)
    q1 = torch.randn(8, 16, 1, 128).to(**bf16)
    k1 = torch.randn(8, 2, 4096, 128).to(**bf16)
    return [
        ("bhsd D128 B1 H8 S1024",
         lambda: gat.attention(q, k, v, g, causal=True)),
        ("qwen3-next bshd D256 B1 S128",
         lambda: gat.attention(proj[..., :256], kq, vq, proj[..., 256:],
                               causal=True, layout="bshd")),
        ("decode bhsd D128 B8 Hq16 Hkv2 Skv4096",
         lambda: gat.attention(q1, k1, k1, q1, causal=True)),
    ]


def per_call(fn, calls):
    fn()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--profile", action="store_true")
    args = p.parse_args()
    route_to_cuda()
    timed = shapes()
    for name, fn in timed:
        print(f"{name}: {per_call(fn, args.calls):.1f} us per call "
              f"({os.environ.get('GATED_ATTENTION_CUDA_KERNEL', 'auto')})")
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(args.calls):
            timed[0][1]()
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(20)
    return 0


if __name__ == "__main__":
    sys.exit(main())
