# REQUIRES: torch
# RUN: %PYTHON %s %gated_attention_src_root
# bench/gpu_backward.py's per-kernel columns without a GPU: kernel_times
# wraps the three launches of the op's backward (launcher.launch_backward,
# as gated_attention.torch._cuda_backward calls it) with CUDA events and
# attributes each interval to its kernel, the mean over the timed steps
# after an untimed one; here the events read a clock that each fake
# kernel's launch advances by a known time, and the original launch is
# restored afterwards (also when a step raises).
import os
import sys

import torch

sys.path.insert(0, os.path.join(sys.argv[1], "bench"))
import gpu_backward  # noqa: E402

from gated_attention import launcher  # noqa: E402

clock = [0.0]


class Event:
    """torch.cuda.Event on the fake clock (ms)."""

    def __init__(self, enable_timing=False):
        assert enable_timing
        self.t = None

    def record(self, stream=None):
        self.t = clock[0]

    def elapsed_time(self, end):
        return end.t - self.t


class Kernel:
    """A launcher.Kernel whose launch takes `ms` on the fake clock (and
    one more ms in a step after the first: the untimed one is left out)."""

    def __init__(self, ms):
        self.ms, self.desc, self.calls = ms, {"gated": True}, 0

    def launch(self, buffers, stream=None, **sizes):
        self.calls += 1
        clock[0] += self.ms + (self.calls > 1)
        return "planned"


KERNELS = dict(zip(launcher.BACKWARD_LAYOUTS, (Kernel(1), Kernel(4),
                                               Kernel(9))))


class Op(torch.autograd.Function):
    """An op whose backward launches the three kernels as the CUDA one."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        planned = launcher.launch_backward(KERNELS, {}, stream=7, b=1)
        assert planned == ["planned"] * 3
        return grad * 2


def op(x, layout):
    return Op.apply(x)


torch.cuda.Event = Event
torch.cuda.synchronize = lambda: None
original = launcher.launch_backward
x = torch.ones(3, requires_grad=True)
times = gpu_backward.kernel_times(op, (x,), [x], torch.ones(3), "bhsd",
                                  reps=4)
assert times == {"backward-preprocess": 2.0, "backward-kv": 5.0,
                 "backward-q": 10.0}, times
assert all(k.calls == 5 for k in KERNELS.values())
assert launcher.launch_backward is original
assert torch.equal(x.grad, torch.full((3,), 2.0))


def failing(x, layout):
    raise RuntimeError("launch failed")


try:
    gpu_backward.kernel_times(failing, (x,), [x], torch.ones(3), "bhsd")
    raise AssertionError("no error")
except RuntimeError:
    pass
assert launcher.launch_backward is original
# An op whose backward launches nothing (no CUDA kernels): no figures.
assert gpu_backward.kernel_times(lambda x, layout: x * 3, (x,), [x],
                                 torch.ones(3), "bhsd") == {}
print("ok")
