"""What a CPU user would run instead of gated-attention, timed in child
processes pinned like ours (same cores, same thread count):

- torch: `F.scaled_dot_product_attention(q, k, v, is_causal=..., enable_gqa=
  True) * torch.sigmoid(g)`, torch's own CPU flash-attention kernel and a
  separate gate (what a model runs on the CPU today);
- IREE: the same module exported by torch-mlir's FX importer (torch's
  default decompositions: the SDPA math in torch ops) and compiled by
  iree-base-compiler for llvm-cpu on this host CPU, run by
  iree-base-runtime's local-task driver.

Each worker prints JSON {"seconds": ...}: its best call, timed as ours is
(bench/timing.py).
"""

import json
import os
import subprocess
import sys

import timing

COMMON = timing.CHILD_IMPORT + r"""
import json, os, sys
import torch, torch.nn.functional as F
s, hq, hkv, d, repeat, causal, dtype = sys.argv[1:8]
s, hq, hkv, d, repeat = (int(x) for x in (s, hq, hkv, d, repeat))
causal = causal == "1"
dtype = getattr(torch, dtype)
torch.manual_seed(0)
q, g = (torch.randn(1, hq, s, d).to(dtype) for _ in range(2))
k, v = (torch.randn(1, hkv, s, d).to(dtype) for _ in range(2))
class Gated(torch.nn.Module):
    def forward(self, q, k, v, g):
        return F.scaled_dot_product_attention(
            q, k, v, is_causal=causal, enable_gqa=True) * torch.sigmoid(g)
def best(fn):
    return best_seconds(fn, repeat)
"""

TORCH = COMMON + r"""
torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
m = Gated()
with torch.no_grad():
    print(json.dumps({"seconds": best(lambda: m(q, k, v, g))}))
"""

IREE = COMMON + r"""
import numpy as np
from torch_mlir import fx
import iree.compiler as ic, iree.runtime as rt
text = str(fx.export_and_import(Gated(), q, k, v, g, output_type="torch",
                                func_name="main"))
vmfb = ic.compile_str(text, target_backends=["llvm-cpu"], input_type="torch",
                      extra_args=["--iree-llvmcpu-target-cpu=" +
                                  os.environ.get("BENCH_TARGET_CPU", "host")])
rt.flags.parse_flags("--task_topology_group_count=" +
                     os.environ["OMP_NUM_THREADS"])
ctx = rt.SystemContext(config=rt.Config("local-task"))
ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb))
f = ctx.modules.module["main"]
dev = ctx.config.device
if dtype == torch.float32:
    args = [rt.asdevicearray(dev, x.numpy()) for x in (q, k, v, g)]
else:   # bf16 as ml_dtypes' numpy type, which the runtime maps to bf16
    import ml_dtypes
    args = [rt.asdevicearray(dev, x.float().numpy().astype(ml_dtypes.bfloat16))
            for x in (q, k, v, g)]
def call():
    f(*args).to_host()
print(json.dumps({"seconds": best(call)}))
"""

WORKERS = {"torch": TORCH, "iree": IREE}


def pinned_env(threads, isa_env=None):
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(threads)
    env.update(isa_env or {})
    return env


def run(peer, s, hq, hkv, d, repeat, causal, dtype, cpus, isa_env=None):
    """Seconds per call of `peer` ("torch" or "iree"), or None with the
    reason printed when it cannot run (a missing package, a compile error).
    `isa_env`: variables that hold the peer to an instruction set (torch's
    ATEN_CPU_CAPABILITY, oneDNN's ONEDNN_MAX_CPU_ISA and MKL's
    MKL_ENABLE_INSTRUCTIONS; IREE's target CPU as BENCH_TARGET_CPU)."""
    cmd = [sys.executable, "-c", WORKERS[peer], str(s), str(hq), str(hkv),
           str(d), str(repeat), "1" if causal else "0", dtype]
    proc = subprocess.run(
        cmd, capture_output=True, text=True,
        env=pinned_env(len(cpus), isa_env),
        preexec_fn=lambda: os.sched_setaffinity(0, cpus))
    if proc.returncode:
        print(f"  ({peer} failed: {proc.stderr.strip().splitlines()[-1:]})",
              file=sys.stderr)
        return None
    return json.loads(proc.stdout.splitlines()[-1])["seconds"]
