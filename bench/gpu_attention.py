"""GPU check and benchmark of the tensor-core kernel (issue 4, section 4).

Two phases, because the GPU machine has torch but no MLIR:

  prepare (here, with gated-attention-opt):
    /usr/bin/python3 bench/gpu_attention.py prepare build/device-check
      compiles every correctness case and benchmark shape with
      --gated-attention-to-ptx, once for each kernel (mma-sync for sm_90,
      wgmma for sm_90a; wgmma-1wg, one consumer warpgroup, for the
      correctness cases only), writes <kernel>.ptx + <kernel>.json and
      cases.json (which config uses which kernel).
  run (on the GPU machine, with torch):
    python3 bench/gpu_attention.py run build/device-check --out bench/results \
        [--kernel mma-sync|wgmma|wgmma-1wg|wgmma-persistent] [--match REGEX]
        [--no-check] [--no-bench] [--bench-match REGEX] [--tag TAG]
      checks every correctness case against the float64 numpy reference
      (gated_attention.reference, on the same rounded inputs), then
      times bf16 forward at B*S = 16k tokens: our fused kernel, torch SDPA +
      a separate `* sigmoid(gate)` (what serving stacks run), torch SDPA
      alone, and our kernel without its gate (the gate's cost). Writes
      bench/results/gpu-<date>-<gpu>.csv; exits 1 if a check fails.
      --kernel wgmma-persistent checks the persistent wgmma kernel on the
      device's SM count and on 3 CTAs (each looping over many tiles), and
      times it against the one-tile wgmma kernel on the same tensors, one
      CSV row per shape (-wgmma-persistent CSV).

TFLOP/s = 4 * B * Hq * Sq * Skv * D / time, halved for causal.
"""

import argparse
import dataclasses
import datetime
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python"))

from gated_attention import config, cuda  # noqa: E402
from gated_attention.testing.check import compare  # noqa: E402

# The chip, kernel option and warps of each kind of kernel. wgmma-1wg, the
# Hopper kernel with one consumer warpgroup (no pingpong), is only checked:
# if the two-consumer kernel fails on a GPU, whether this one does tells
# where to look.
KERNELS = {"mma-sync": ("sm_90", "mma-sync", 0),
           "wgmma": ("sm_90a", "wgmma", 0),
           "wgmma-1wg": ("sm_90a", "wgmma", 4)}
CHECK_ONLY = {"wgmma-1wg"}
# Compiled with persistent=1 (its tiles looped over by at most one CTA per
# SM), and timed against the one-tile kernel named here.
PERSISTENT = {"wgmma-persistent": "wgmma"}
KERNELS["wgmma-persistent"] = KERNELS["wgmma"]
TOKENS = 16384


def correctness_cases():
    # every element type, head dim, mask and gate layout
    specs = [f"dtype=bf16|f16,d={d},dv={d},hq=4,hkv=2,sq=200,skv=200,"
             "causal=0|1,gw=elementwise|headwise" for d in (64, 128, 256)]
    specs += [
        # ragged lengths: tails, Sq != Skv (bottom-right causal), empty rows
        "dtype=bf16,d=128,dv=128,hq=2,hkv=1,sq=77,skv=333,causal=0|1",
        "dtype=bf16,d=128,dv=128,hq=2,hkv=1,sq=300,skv=45,causal=0|1",
        "dtype=bf16,d=64,dv=64,hq=2,hkv=2,sq=1,skv=1|17,causal=0|1",
        # gate variants, additive combine, one gate for all heads, MQA, B > 1
        "dtype=bf16,d=128,dv=128,hq=8,hkv=1,b=2,sq=130,skv=130,causal=1,"
        "gate=silu|ns_sigmoid,combine=mul|add,gh=per_head|shared",
        # the Qwen3-Next shape
        "dtype=bf16,d=256,dv=256,hq=16,hkv=2,sq=513,skv=513,causal=1",
    ]
    return [c for s in specs for c in config.parse_cases(s)]


def bench_cases(gate="sigmoid"):
    out = []
    for d, hq, hkv in ((128, 16, 16), (256, 16, 16), (256, 16, 2)):
        for causal in (False, True):
            for s in (1024, 4096, 16384):
                out.append(config.AttentionConfig(
                    b=TOKENS // s, hq=hq, hkv=hkv, sq=s, skv=s, d=d, dv=d,
                    causal=causal, dtype="bf16", gate=gate))
    return out


def prepare(outdir, opt, kinds):
    os.makedirs(outdir, exist_ok=True)
    entries = []
    jobs = [(c, "check") for c in correctness_cases()]
    jobs += [(c, "bench") for c in bench_cases()]
    # The same shapes without a gate operand: what the gate costs.
    jobs += [(c, "nogate") for c in bench_cases(gate="none")]
    jobs = [(c, role, kind) for kind in kinds for c, role in jobs
            if role == "check" or kind not in CHECK_ONLY and not (
                role == "nogate" and kind in PERSISTENT)]
    for i, (cfg, role, kind) in enumerate(jobs):
        chip, option, warps = KERNELS[kind]
        kernel, text, desc = cuda.compile_kernel(
            cfg, opt, chip, option, warps, persistent=kind in PERSISTENT)
        # Kernels differing in gate or scale share a readable name: key the
        # files by the case index as well.
        stem = f"{i:03d}-{kernel}"
        with open(os.path.join(outdir, stem + ".ptx"), "w") as f:
            f.write(text)
        with open(os.path.join(outdir, stem + ".json"), "w") as f:
            json.dump(desc, f, indent=1)
        entries.append({"role": role, "kernel": kind,
                        "config": dataclasses.asdict(cfg), "stem": stem})
    with open(os.path.join(outdir, "cases.json"), "w") as f:
        json.dump({"kernels": KERNELS, "cases": entries}, f, indent=1)
    print(f"prepared {len(entries)} kernels in {outdir}")


# --- run phase (torch) -----------------------------------------------------

def run(kdir, outdir, match=None, bench=True, kind="mma-sync", check=True,
        bench_match=None, tag=""):
    import torch
    import torch.nn.functional as F

    with open(os.path.join(kdir, "cases.json")) as f:
        every = json.load(f)["cases"]
    cases = [c for c in every if c["kernel"] == kind]
    if not cases:   # (prepared before the kind existed: nothing to run)
        print(f"no {kind} kernels in {kdir}: prepare them first "
              f"(scripts/device-check prepare)", flush=True)
        return 1
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # the primary context, made current
    backend = cuda.Backend(cuda.Driver())
    sms = backend.driver.sm_count()
    gpu = torch.cuda.get_device_name()
    tdt = {"bf16": torch.bfloat16, "f16": torch.float16}

    def kernel(stem):
        return backend.kernel_from_files(os.path.join(kdir, stem + ".ptx"),
                                         os.path.join(kdir, stem + ".json"))

    def inputs(cfg, seed):
        gen = torch.Generator(device="cuda").manual_seed(seed)
        sh = cfg.shapes()
        spread = {"query": 1.0, "key": 1.0, "value": 1.0, "gate": 2.0}
        return [(torch.randn(sh[n], generator=gen, device="cuda") * s)
                .to(tdt[cfg.dtype]) for n, s in spread.items()]

    def launch(kern, cfg, q, k, v, g, out, sm_count=sms):
        # (sm_count sizes a persistent kernel's grid; others ignore it.)
        return kern.launch(
            {"q": (q.data_ptr(), q.numel()), "k": (k.data_ptr(), k.numel()),
             "v": (v.data_ptr(), v.numel()), "gate": (g.data_ptr(), g.numel()),
             "out": (out.data_ptr(), out.numel())},
            stream=torch.cuda.current_stream().cuda_stream,
            b=cfg.b, sq=cfg.sq, skv=cfg.skv, sm_count=sm_count)

    failures = checked = 0
    for n, case in enumerate(c for c in cases if c["role"] == "check"):
        cfg = config.AttentionConfig(**case["config"])
        if not check or (match and not re.search(match, cfg.describe())):
            continue
        checked += 1
        q, k, v, g = inputs(cfg, n)
        kern = kernel(case["stem"])
        # The project's float64 reference, on the same (rounded) inputs.
        host = dict(zip(("query", "key", "value", "gate"),
                        (t.double().cpu().numpy() for t in (q, k, v, g))))
        ref = cfg.reference(host)
        # A persistent kernel also on 3 CTAs: each loops over many tiles.
        for sm_count in (sms, 3) if kind in PERSISTENT else (sms,):
            out = torch.full(cfg.shapes()["result"], float("nan"),
                             dtype=tdt[cfg.dtype], device="cuda")
            grid = launch(kern, cfg, q, k, v, g, out, sm_count).grid
            torch.cuda.synchronize()
            # Each element within the error model's bound (accuracy.py).
            result = compare(cfg, out.double().cpu().numpy(), ref, host,
                             kernel=kern.desc)
            failures += not result.ok
            print(f"{'PASS' if result.ok else 'FAIL'} [{kind}] "
                  f"{cfg.describe()} grid={grid} "
                  f"err/bound={result.ratio:.3g} "
                  f"max_abs_err={result.max_abs_err:.3g}", flush=True)
    print(f"correctness [{kind}]: {checked - failures} passed, {failures} "
          "failed", flush=True)
    if not bench or kind in CHECK_ONLY:
        return 1 if failures else 0

    def timed(fn, window=0.05):
        """Best of 5 windows of back-to-back calls, each about `window`
        seconds long, after warm-up: the mean time of one call."""
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        fn()
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        reps = max(1, min(50, int(window / max(start.elapsed_time(end) / 1e3,
                                               1e-6))))
        best = float("inf")
        for _ in range(5):
            start.record()
            for _ in range(reps):
                fn()
            end.record()
            torch.cuda.synchronize()
            best = min(best, start.elapsed_time(end) / reps / 1e3)
        return best

    def shape_key(c):
        return json.dumps({k: v for k, v in c.items() if k != "gate"},
                          sort_keys=True)

    nogate = {shape_key(c["config"]): c["stem"]
              for c in cases if c["role"] == "nogate"}
    # The one-tile kernel a persistent one is timed against.
    baseline = {shape_key(c["config"]): c["stem"] for c in every
                if c["role"] == "bench" and c["kernel"] == PERSISTENT.get(kind)}
    os.makedirs(outdir, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", gpu).strip("-").lower()
    suffix = ("" if kind == "mma-sync" else f"-{kind}") + tag
    path = os.path.join(
        outdir, f"gpu-{datetime.date.today().isoformat()}-{slug}{suffix}.csv")
    csv = None
    for case in (c for c in cases if c["role"] == "bench"):
        cfg = config.AttentionConfig(**case["config"])
        if bench_match and not re.search(bench_match, cfg.describe()):
            continue
        q, k, v, g = inputs(cfg, 0)
        out = torch.empty(cfg.shapes()["result"], dtype=torch.bfloat16,
                          device="cuda")
        flops = cfg.flops() / (2 if cfg.causal else 1)
        row = {"date": datetime.date.today().isoformat(), "gpu": gpu,
               "kernel": kind, "b": cfg.b, "hq": cfg.hq, "hkv": cfg.hkv, "s": cfg.sq,
               "d": cfg.d, "causal": int(cfg.causal)}
        t = None
        if kind in PERSISTENT:
            ours = kernel(case["stem"])
            one = kernel(baseline[shape_key(case["config"])])
            row["ctas"] = launch(ours, cfg, q, k, v, g, out).grid[0]
            row["sm_count"] = sms
            t = {"fused": timed(lambda: launch(ours, cfg, q, k, v, g, out)),
                 "one_tile": timed(lambda: launch(one, cfg, q, k, v, g, out))}
        else:
            ours, bare = kernel(case["stem"]), kernel(
                nogate[shape_key(case["config"])])
        gqa = cfg.hq != cfg.hkv

        def sdpa():
            return F.scaled_dot_product_attention(q, k, v, is_causal=cfg.causal,
                                                  enable_gqa=gqa)
        t = t or {
            "fused": timed(lambda: launch(ours, cfg, q, k, v, g, out)),
            "fused_nogate": timed(lambda: launch(bare, cfg, q, k, v, g, out)),
            "sdpa_then_gate": timed(lambda: sdpa() * torch.sigmoid(g)),
            "sdpa": timed(sdpa),
        }
        for name, sec in t.items():
            row[f"{name}_ms"] = f"{sec * 1e3:.4f}"
            row[f"{name}_tflops"] = f"{flops / sec / 1e12:.1f}"
        if kind in PERSISTENT:
            row["speedup_vs_one_tile"] = f"{t['one_tile'] / t['fused']:.3f}"
        else:
            row["gate_cost_pct"] = \
                f"{(t['fused'] / t['fused_nogate'] - 1) * 100:.2f}"
            row["speedup_vs_sdpa_then_gate"] = \
                f"{t['sdpa_then_gate'] / t['fused']:.3f}"
        print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)
        # Row by row, so that a run cut short keeps what it measured.
        if csv is None:
            csv = open(path, "w")
            csv.write(",".join(row) + "\n")
        csv.write(",".join(str(v) for v in row.values()) + "\n")
        csv.flush()
    if csv:
        csv.close()
    print(f"wrote {path}")
    return 1 if failures else 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="phase", required=True)
    pp = sub.add_parser("prepare")
    pp.add_argument("dir")
    pp.add_argument("--opt", default="gated-attention-opt")
    pp.add_argument("--kernel", action="append", choices=sorted(KERNELS),
                    help="kernels to compile (default: all)")
    pr = sub.add_parser("run")
    pr.add_argument("dir")
    pr.add_argument("--out", default="bench/results")
    pr.add_argument("--match", help="check only cases whose description "
                    "matches this regex")
    pr.add_argument("--no-bench", dest="bench", action="store_false",
                    help="correctness cases only")
    pr.add_argument("--no-check", dest="check", action="store_false",
                    help="benchmark only")
    pr.add_argument("--bench-match", help="time only shapes whose "
                    "description matches this regex")
    pr.add_argument("--tag", default="", help="appended to the CSV's name "
                    "(gpu-DATE-GPU[-KERNEL]TAG.csv)")
    pr.add_argument("--kernel", default="mma-sync", choices=sorted(KERNELS))
    args = p.parse_args(argv)
    if args.phase == "prepare":
        prepare(args.dir, args.opt, args.kernel or sorted(KERNELS))
        return 0
    return run(args.dir, args.out, args.match, args.bench, args.kernel,
               args.check, args.bench_match, args.tag)


if __name__ == "__main__":
    sys.exit(main())
