"""Which of the sm_90a backward's kernels hangs at head dim 256, on the GPU.

On an H200 (2026-12-04) the wgmma backward at D 256 (two consumer
warpgroups) did not finish a 200-row case within 30 s, while D 64 and 128
passed; the emulator does not reproduce it. This runs the backward's three
kernels (preprocessing, dK/dV, dQ) of one configuration one stage more
each time, every run in a process of its own under a timeout (a hung
kernel cannot be stopped from inside its process), synchronizing after
each launch, and prints which stage finished and which timed out:

  prepare (here, with MLIR):
    .venv/bin/python bench/gpu_backward_stages.py prepare build/device-check/torch-kernels
  run (on the GPU machine, about 70 s at most):
    GATED_ATTENTION_CACHE_DIR=build/device-check/torch-kernels \\
        python3 bench/gpu_backward_stages.py run

`--case` takes another configuration (config.parse_cases' syntax).
"""

import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python"))

CASE = "dtype=bf16,d=256,dv=256,hq=16,hkv=2,sq=200,skv=200,causal=1"
STAGES = ("backward-preprocess", "backward-kv", "backward-q")


def kernels_of(cfg):
    """{layout: (name, PTX, description)} of the sm_90a wgmma backward."""
    from gated_attention import cuda
    from gated_attention.torch import _args
    return cuda.compile_backward_kernels(_args.compile_key(cfg),
                                         chip="sm_90a", kernel="wgmma")


def child(case, stages):
    """Launches the first `stages` kernels, synchronizing after each."""
    import torch
    from gated_attention import config, cuda, launcher
    cfg = config.parse_cases(case)[0]
    compiled = kernels_of(cfg)
    backend = cuda.Backend(cuda.Driver(0))
    kernels = {n: backend.kernel(ptx, desc)
               for n, (_, ptx, desc) in compiled.items()}
    sizes = {"b": cfg.b, "sq": cfg.sq, "skv": cfg.skv}
    found = launcher.backward_buffers(kernels, **sizes)
    dtypes = {"f32": torch.float32, "bf16": torch.bfloat16,
              "f16": torch.float16}
    buffers = {}
    for name, (element, count) in found.items():
        t = torch.randn(count, device="cuda").to(dtypes[element])
        if name == "lse":
            t = t.abs() + 4.0   # finite, above every row's max score
        buffers[name] = (t, count)
    stream = torch.cuda.current_stream().cuda_stream
    for layout in STAGES[:stages]:
        print(f"launching {layout} ({compiled[layout][0]})", flush=True)
        kernels[layout].launch({n: (t.data_ptr(), c)
                                for n, (t, c) in buffers.items()},
                               stream=stream, **sizes)
        torch.cuda.synchronize()
        print(f"finished {layout}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=("prepare", "run", "child"))
    p.add_argument("cache", nargs="?")
    p.add_argument("--case", default=CASE)
    p.add_argument("--stages", type=int, default=len(STAGES))
    p.add_argument("--timeout", type=float, default=20.0)
    args = p.parse_args()
    if args.mode == "prepare":
        from gated_attention import config
        from gated_attention.torch import set_cache_dir
        if args.cache:
            set_cache_dir(args.cache)
        compiled = kernels_of(config.parse_cases(args.case)[0])
        print("prepared " + ", ".join(n for n, _, _ in compiled.values()))
        return 0
    if args.mode == "child":
        child(args.case, args.stages)
        return 0
    bad = 0
    for stages in range(1, len(STAGES) + 1):
        try:
            proc = subprocess.run(
                [sys.executable, __file__, "child", "--case", args.case,
                 "--stages", str(stages)], timeout=args.timeout,
                capture_output=True, text=True)
            out = proc.stdout.strip().splitlines()
            status = "ok" if proc.returncode == 0 else \
                f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"
            bad += proc.returncode != 0
        except subprocess.TimeoutExpired as e:
            out = e.stdout or ""
            out = (out.decode() if isinstance(out, bytes) else out) \
                .strip().splitlines()
            status, bad = f"timeout after {args.timeout:g} s", bad + 1
        print(f"stages 1-{stages} ({', '.join(STAGES[:stages])}): {status}; "
              f"last line: {out[-1] if out else '-'}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
