"""CPU benchmark of gated attention: the tiled (fused, vectorized, OpenMP)
path, the reference path and numpy + OpenBLAS computing the same unfused
math, in one run on one machine; then peak resident memory vs S.

    bench/run-cpu [--sizes 512,1024,2048,4096] [--mem-sizes 1024,4096,16384]

GFLOP/s = 4 * B * H * Sq * Skv * D / time (non-causal, B = 1, H = 8, D = 128,
f32), best of --repeat calls and of a second of calls after warm-up
(bench/timing.py, for ours and the peers alike; with --rounds N, ours and
torch are timed alternately N times and each keeps its best, so that on
a shared machine both meet the same load); a second table runs the
Qwen3-Next shape (Hq 16 over Hkv 2, D 256, causal; FLOPs halved), where
numpy repeats K/V per query head as unfused implementations do. Before the
f32 tables, bench/fma_peak.py measures the f32 FMA peak on the same pinned
threads; each f32 row reports its fraction of it. numpy runs in a child
process with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (OpenBLAS picks its
kernels itself); a second numpy column forces OPENBLAS_CORETYPE=SkylakeX,
the fastest OpenBLAS kernels on AVX-512 machines, as the strongest baseline.
Writes CSV files to bench/results/.

`--isa avx2` measures what an AVX2-only CPU would run, on this one: ours
compiled for x86-64-v3 (`target-cpu=x86-64-v3`, llc -mcpu=x86-64-v3: 256-bit
vectors, 16 registers, no AVX-512), torch held to AVX2 (ATEN_CPU_CAPABILITY
for its own kernels, ONEDNN_MAX_CPU_ISA for oneDNN's, MKL_ENABLE_INSTRUCTIONS
for the MKL sgemm that its f32 SDPA calls), IREE compiled for x86-64-v3,
OpenBLAS's Haswell kernels, the 256-bit FMA peak; the bf16 table (the torch
op, compiled for this host) is left out. The CSVs' names end in -avx2. A
held figure above the held FMA peak means a library chose its instructions
itself: the run stops rather than write it.
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from gated_attention import config, mlir, native  # noqa: E402
import cpu_peers  # noqa: E402
import fma_peak  # noqa: E402
from timing import CHILD_IMPORT, best_seconds  # noqa: E402

H, D = 8, 128
# Qwen3-Next's full-attention layer: 16 query heads over 2 KV heads, D 256.
QWEN = dict(hq=16, hkv=2, d=256)


def attention_config(s, causal=False, hq=H, hkv=H, d=D):
    return config.AttentionConfig(b=1, hq=hq, hkv=hkv, sq=s, skv=s, d=d, dv=d,
                                  causal=causal)


def useful_flops(cfg):
    """4 B Hq Sq Skv D, halved under the causal mask."""
    return cfg.flops() / (2 if cfg.causal else 1)


# What each --isa holds every implementation to: our target CPU (the
# pipeline's target-cpu and llc's -mcpu), the peers' environment, OpenBLAS's
# kernels (None: its own choice) and the FMA peak's vector width.
ISAS = {
    "native": dict(cpu="native", env={}, openblas=None, fma_bits=None),
    "avx2": dict(cpu="x86-64-v3",
                 # Each library in torch dispatches on its own: without
                 # MKL_ENABLE_INSTRUCTIONS its sgemm took AVX-512 on an
                 # Intel Xeon (196 GFLOP/s against a 182 GFLOP/s 256-bit
                 # peak, 2026-12-07).
                 env={"ATEN_CPU_CAPABILITY": "avx2",
                      "ONEDNN_MAX_CPU_ISA": "AVX2",
                      "MKL_ENABLE_INSTRUCTIONS": "AVX2",
                      "BENCH_TARGET_CPU": "x86-64-v3"},
                 openblas="Haswell", fma_bits=256),
}
ISA = ISAS["native"]


def compile_attention(cfg, reference=False):
    # Destination style, as the torch op calls the kernel: the result is
    # computed in a buffer the caller allocates (`run_attention`). A
    # returned buffer is copied into a numpy array and freed by
    # SharedLibrary.call: a pass over the result that torch's SDPA does not
    # make, 13% of a Qwen3-Next S 1024 call on 2 threads (2026-12-06).
    text = mlir.destination_function(cfg, "attn")
    options = ["reference=1"] if reference else []
    if ISA["cpu"] != "native":
        options.append(f"target-cpu={ISA['cpu']}")
    pipeline = "--gated-attention-to-llvm" + (
        "=" + " ".join(options) if options else "")
    return native.SharedLibrary(text, [pipeline], openmp=not reference)


def run_attention(lib, cfg, x, dtype=np.float32):
    """One call of `compile_attention`'s function on the operands `x`: the
    result in a fresh array, as torch allocates its output each call."""
    out = np.empty(cfg.shapes()["result"], dtype)
    lib.call_into("attn", list(x[:len(cfg.operands)]) + [out])
    return out


def inputs(cfg):
    rng = np.random.default_rng(0)
    shapes = cfg.shapes()
    return [rng.standard_normal(shapes[o]).astype(np.float32)
            for o in mlir.OPERANDS]


# Peak RSS is read from VmHWM, the high-water mark of this process image:
# getrusage's ru_maxrss would include the (larger) parent it was forked from.
HWM = r"""
def peak_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
"""

NUMPY_WORKER = HWM + CHILD_IMPORT + r"""
import json, sys
import numpy as np
s, h, hkv, d, repeat = (int(a) for a in sys.argv[1:6])
mode = sys.argv[6]
rng = np.random.default_rng(0)
q, g = (rng.standard_normal((1, h, s, d)).astype(np.float32) for _ in range(2))
k, v = (rng.standard_normal((1, hkv, s, d)).astype(np.float32) for _ in range(2))
def attention():
    kk, vv = (np.repeat(t, h // hkv, axis=1) if hkv != h else t for t in (k, v))
    x = q @ kk.transpose(0, 1, 3, 2) * np.float32(d ** -0.5)
    if mode == "causal":
        x = np.where(np.tril(np.ones((s, s), dtype=bool)), x, np.float32(-np.inf))
    x = np.exp(x - x.max(-1, keepdims=True))
    y = (x @ vv) / x.sum(-1, keepdims=True)
    return y * (1 / (1 + np.exp(-g)))
best = best_seconds(attention, repeat)
print(json.dumps({"seconds": best, "peak_kib": peak_kib()}))
"""


def has_avx512():
    """OpenBLAS's SkylakeX kernels need AVX-512 (forcing them elsewhere is
    SIGILL): the SkylakeX column is only measured where the CPU has it."""
    if ISA["fma_bits"] == 256:
        return False
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512f" in f.read()
    except OSError:
        return False


def numpy_child(s, repeat, causal=False, coretype=None, hq=H, hkv=H, d=D):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    if coretype or ISA["openblas"]:
        env["OPENBLAS_CORETYPE"] = coretype or ISA["openblas"]
    out = subprocess.run(
        [sys.executable, "-c", NUMPY_WORKER, str(s), str(hq), str(hkv), str(d),
         str(repeat), "causal" if causal else "full"],
        env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


MEMORY_WORKER = HWM + r"""
import json, sys
sys.path.insert(0, sys.argv[3])
sys.path.insert(0, sys.argv[4])
import ctypes
import cpu_attention as b
from gated_attention import native
cfg = b.attention_config(int(sys.argv[1]), causal=True)
lib = native.SharedLibrary.load(sys.argv[2])
args = b.inputs(cfg)
before = peak_kib()
out = b.run_attention(lib, cfg, args)
print(json.dumps({"peak_kib": peak_kib(), "before_kib": before,
                  "io_bytes": sum(a.nbytes for a in args) + out.nbytes}))
"""


def tiled_memory_child(s):
    """Peak RSS of a fresh process that loads the compiled kernel (compiled
    here, so that compilation does not count), allocates the inputs and
    calls it once."""
    lib = compile_attention(attention_config(s, causal=True))
    out = subprocess.run(
        [sys.executable, "-c", MEMORY_WORKER, str(s), lib.path, HERE,
         os.path.join(os.path.dirname(HERE), "python")],
        capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_features():
    """The x86 features that pick the CPU path."""
    flags = native.cpu_flags()
    return [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_tile",
                        "amx_bf16") if f in flags]


def bf16_matrix_units():
    """What --gated-attention-to-llvm's matrix-units=host multiplies bf16
    tiles with on this machine."""
    return native.host_matrix_units()


# The matrix-units values the bf16 table times, and the CPU flags each needs.
BF16_UNITS = {"fma": (), "avx512-bf16": ("avx512_bf16",),
              "amx": ("amx_tile", "amx_bf16")}


def csv_cell(c):
    if c is None:
        return ""
    return str(c) if isinstance(c, (int, str)) else f"{c:.4g}"


def gflops(cfg, seconds):
    return useful_flops(cfg) / seconds / 1e9 if seconds else float("nan")


def ratio(peer, ours):
    """How many times faster ours is than `peer` (None if it did not run)."""
    return peer / ours if peer else None


def with_peers(args, ours, s, hq, hkv, d, causal, dtype):
    """Seconds per call of `ours` (a function), torch and IREE (None: not
    run; both pinned to the cores this process runs on). Ours and torch
    are timed alternately --rounds times, each figure its best: on a shared
    machine both then meet the same spells of load. IREE (far behind, and
    compiled in its child) runs once."""
    cpus = os.sched_getaffinity(0)

    def peer(name):
        return cpu_peers.run(name, s, hq, hkv, d, args.repeat, causal, dtype,
                             cpus, ISA["env"])

    t_ours, t_torch, torch_runs = None, None, not args.no_peers
    for _ in range(args.rounds):
        t = best_seconds(ours, args.repeat)
        t_ours = t if t_ours is None else min(t_ours, t)
        if torch_runs:
            t = peer("torch")
            torch_runs = t is not None   # (its failure printed once)
            if t is not None:
                t_torch = t if t_torch is None else min(t_torch, t)
    return t_ours, t_torch, None if args.no_peers else peer("iree")


def check_held(args, name, gflops_):
    """Stops the run when an implementation held to a narrower instruction
    set than the host's beats that width's measured FMA peak: it was not
    held (a library picked its own kernels), and its ratio would be
    wrong. 5% of slack covers the peak's own timing noise."""
    if (gflops_ is not None and ISA["fma_bits"] and args.fma_peak
            and gflops_ > 1.05 * args.fma_peak):
        raise SystemExit(
            f"cpu_attention: {name} ran {gflops_:.1f} GFLOP/s, above the "
            f"{ISA['fma_bits']}-bit FMA peak ({args.fma_peak:.1f}): it is "
            f"not held to --isa {args.isa}; nothing written for this table")
    return gflops_


def print_row(cells):
    print("| " + " | ".join(cells) + " |", flush=True)


def print_header(names):
    print_row(names)
    print("|" + "---|" * len(names))


def fmt(c, pattern="{:.1f}"):
    return "-" if c is None else pattern.format(c)


def fresh_stamp(out, tables, suffix):
    """The CSVs' date (and `suffix`), with the time of day where a CSV of
    one of `tables` already has that name: a second run of a day must not
    overwrite the first's figures."""
    now = datetime.datetime.now()
    for stamp in (now.strftime("%Y-%m-%d"), now.strftime("%Y-%m-%dT%H%M%S")):
        stamp += suffix
        if not any(os.path.exists(os.path.join(out, f"cpu-{t}-{stamp}.csv"))
                   for t in tables):
            return stamp
    raise SystemExit(f"cpu_attention: CSVs named {stamp} exist in {out}")


def write_csv(path, machine, header, rows):
    with open(path, "w") as f:
        f.write("# " + machine + "\n")
        f.write(",".join(header) + "\n")
        for r in rows:
            f.write(",".join(csv_cell(c) for c in r) + "\n")


def of_peak(args, gflops_):
    """The fraction of the measured f32 FMA peak (None if not measured)."""
    return gflops_ / args.fma_peak if args.fma_peak else None


def throughput(args):
    """The main table: tiled, reference, numpy (two kernels), non-causal."""
    print_header(["S", "tiled GFLOP/s", "reference GFLOP/s", "numpy GFLOP/s",
                  "numpy SkylakeX GFLOP/s", "torch GFLOP/s", "IREE GFLOP/s",
                  "tiled / numpy", "tiled / torch", "tiled / IREE",
                  "tiled / FMA peak"])
    rows = []
    for s in (int(x) for x in args.sizes.split(",") if x):
        cfg = attention_config(s)
        x = inputs(cfg)
        tiled = compile_attention(cfg)
        t_tiled, t_torch, t_iree = with_peers(
            args, lambda: run_attention(tiled, cfg, x), s, H, H, D, False,
            "float32")
        t_ref = None
        if s <= args.reference_max:
            ref = compile_attention(cfg, reference=True)
            t_ref = best_seconds(lambda: run_attention(ref, cfg, x), 1,
                                 warmup_calls=1)
        t_np = numpy_child(s, args.repeat)["seconds"]
        t_skx = (numpy_child(s, args.repeat, coretype="SkylakeX")["seconds"]
                 if has_avx512() else None)
        row = (s, check_held(args, "ours", gflops(cfg, t_tiled)),
               gflops(cfg, t_ref) if t_ref else None,
               check_held(args, "numpy", gflops(cfg, t_np)),
               gflops(cfg, t_skx) if t_skx else None,
               check_held(args, "torch", gflops(cfg, t_torch)),
               check_held(args, "IREE", gflops(cfg, t_iree)),
               t_np / t_tiled, ratio(t_torch, t_tiled), ratio(t_iree, t_tiled),
               of_peak(args, gflops(cfg, t_tiled)))
        rows.append(row)
        print_row([str(s)] + [fmt(c) for c in row[1:7]] +
                  [fmt(c, "{:.2f}x") for c in row[7:10]] +
                  [fmt(row[10], "{:.0%}")])
    return ["S", "tiled_gflops", "reference_gflops", "numpy_gflops",
            "numpy_skylakex_gflops", "torch_gflops", "iree_gflops",
            "tiled_over_numpy", "tiled_over_torch", "tiled_over_iree",
            "tiled_over_fma_peak"], rows


def qwen3next(args):
    """Qwen3-Next's shape, causal; numpy repeats K/V per query head."""
    print("Qwen3-Next shape: Hq 16, Hkv 2, D 256, causal, f32 "
          "(GFLOP/s count the causal half)")
    print_header(["S", "tiled GFLOP/s", "numpy GFLOP/s",
                  "numpy SkylakeX GFLOP/s", "torch GFLOP/s", "IREE GFLOP/s",
                  "tiled / numpy", "tiled / torch", "tiled / IREE",
                  "tiled / FMA peak"])
    rows = []
    for s in (int(x) for x in args.qwen_sizes.split(",") if x):
        cfg = attention_config(s, causal=True, **QWEN)
        x = inputs(cfg)
        tiled = compile_attention(cfg)
        t_tiled, t_torch, t_iree = with_peers(
            args, lambda: run_attention(tiled, cfg, x), s, QWEN["hq"],
            QWEN["hkv"], QWEN["d"], True, "float32")
        kw = dict(causal=True, **QWEN)
        t_np = numpy_child(s, args.repeat, **kw)["seconds"]
        t_skx = (numpy_child(s, args.repeat, coretype="SkylakeX", **kw)["seconds"]
                 if has_avx512() else None)
        row = (s, check_held(args, "ours", gflops(cfg, t_tiled)),
               check_held(args, "numpy", gflops(cfg, t_np)),
               gflops(cfg, t_skx) if t_skx else None,
               check_held(args, "torch", gflops(cfg, t_torch)),
               check_held(args, "IREE", gflops(cfg, t_iree)), t_np / t_tiled, ratio(t_torch, t_tiled),
               ratio(t_iree, t_tiled), of_peak(args, gflops(cfg, t_tiled)))
        rows.append(row)
        print_row([str(s)] + [fmt(c) for c in row[1:6]] +
                  [fmt(c, "{:.2f}x") for c in row[6:9]] +
                  [fmt(row[9], "{:.0%}")])
    return ["S", "tiled_gflops", "numpy_gflops", "numpy_skylakex_gflops",
            "torch_gflops", "iree_gflops", "tiled_over_numpy",
            "tiled_over_torch", "tiled_over_iree", "tiled_over_fma_peak"], rows


def bf16_units_seconds(cfg, units, repeat):
    """Seconds per call of the function compiled with matrix-units=`units`
    on bf16 numpy arrays (None where the host cannot run it)."""
    import ml_dtypes
    if not set(BF16_UNITS[units]) <= set(cpu_features()):
        return None
    text = mlir.destination_function(cfg, "attn")
    lib = native.SharedLibrary(
        text, [f"--gated-attention-to-llvm=matrix-units={units}"], openmp=True)
    rng = np.random.default_rng(0)
    x = [rng.standard_normal(cfg.shapes()[o]).astype(ml_dtypes.bfloat16)
         for o in mlir.OPERANDS]
    return best_seconds(
        lambda: run_attention(lib, cfg, x, ml_dtypes.bfloat16), repeat)


def qwen3next_bf16(args):
    """Qwen3-Next's shape in bf16, causal: the torch op on bf16 tensors
    (the kernel reads and writes them in place; its products on the host's
    matrix units, matrix-units=host) vs torch and IREE; then the compiled
    function on numpy arrays with each matrix-units value, one after the
    other on the same inputs."""
    import torch
    import gated_attention.torch as gat
    units = bf16_matrix_units()
    print("Qwen3-Next shape in bf16: Hq 16, Hkv 2, D 256, causal "
          f"(GFLOP/s count the causal half); our bf16 products: {units}")
    print_header(["S", "ours GFLOP/s", "torch GFLOP/s", "IREE GFLOP/s",
                  "ours / torch", "ours / IREE"] +
                 [f"{u} GFLOP/s" for u in BF16_UNITS])
    rows = []
    for s in (int(x) for x in args.qwen_sizes.split(",") if x):
        cfg = attention_config(s, causal=True, **QWEN)
        torch.manual_seed(0)
        q, g = (torch.randn(1, QWEN["hq"], s, QWEN["d"]).bfloat16()
                for _ in range(2))
        k, v = (torch.randn(1, QWEN["hkv"], s, QWEN["d"]).bfloat16()
                for _ in range(2))
        t_ours, t_torch, t_iree = with_peers(
            args, lambda: gat.attention(q, k, v, g, causal=True), s,
            QWEN["hq"], QWEN["hkv"], QWEN["d"], True, "bfloat16")
        bf16_cfg = config.AttentionConfig(
            b=1, hq=QWEN["hq"], hkv=QWEN["hkv"], sq=s, skv=s, d=QWEN["d"],
            dv=QWEN["d"], causal=True, dtype="bf16")
        # None (`-`) for the units this CPU cannot run.
        per_units = [bf16_units_seconds(bf16_cfg, u, args.repeat)
                     for u in BF16_UNITS]
        per_units = [gflops(cfg, t) if t else None for t in per_units]
        row = (s, gflops(cfg, t_ours), gflops(cfg, t_torch),
               gflops(cfg, t_iree), ratio(t_torch, t_ours),
               ratio(t_iree, t_ours), *per_units, units)
        rows.append(row)
        print_row([str(s)] + [fmt(c) for c in row[1:4]] +
                  [fmt(c, "{:.2f}x") for c in row[4:6]] +
                  [fmt(c) for c in per_units])
    return ["S", "ours_gflops", "torch_gflops", "iree_gflops",
            "ours_over_torch", "ours_over_iree", "fma_gflops",
            "avx512_bf16_gflops", "amx_gflops", "matrix_units"], rows


def memory(args):
    """Peak resident memory vs S, causal."""
    print_header(["S (causal)", "tiled peak RSS MiB", "of which during the call",
                  "inputs+output MiB", "numpy peak RSS MiB"])
    rows = []
    for s in (int(x) for x in args.mem_sizes.split(",") if x):
        tiled = tiled_memory_child(s)
        np_peak = (numpy_child(s, 1, causal=True)["peak_kib"] / 1024
                   if s <= args.numpy_mem_max else None)
        row = (s, tiled["peak_kib"] / 1024,
               (tiled["peak_kib"] - tiled["before_kib"]) / 1024,
               tiled["io_bytes"] / 2**20, np_peak)
        rows.append(row)
        print_row([str(s)] + [fmt(c, "{:.0f}") for c in row[1:]])
    return ["S", "tiled_peak_MiB", "tiled_call_MiB", "inputs_output_MiB",
            "numpy_peak_MiB"], rows


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="512,1024,2048,4096")
    p.add_argument("--mem-sizes", default="1024,4096,16384")
    p.add_argument("--qwen-sizes", default="1024,2048",
                   help="S for the Qwen3-Next shape (Hq 16, Hkv 2, D 256, causal)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--rounds", type=int, default=1,
                   help="times ours and torch are timed alternately, each "
                   "figure the best of them")
    p.add_argument("--reference-max", type=int, default=1024,
                   help="largest S for the (slow, O(S^2) memory) reference path")
    p.add_argument("--numpy-mem-max", type=int, default=4096,
                   help="largest S for numpy's peak memory (it holds S x S scores)")
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    p.add_argument("--no-peers", action="store_true",
                   help="skip torch and IREE (they need the .venv's packages)")
    p.add_argument("--tables",
                   default="throughput,qwen3next,qwen3next-bf16,memory",
                   help="which tables to run")
    p.add_argument("--threads", type=int, default=os.cpu_count(),
                   help="cores every implementation runs on (pinned: the "
                   "first N the process may use)")
    p.add_argument("--isa", choices=sorted(ISAS), default="native",
                   help="the instruction set every implementation is held "
                   "to (avx2: an AVX2-only CPU's code, run on this one)")
    args = p.parse_args()
    if args.repeat < 1 or args.rounds < 1:
        p.error("--repeat and --rounds must be at least 1")
    global ISA
    ISA = ISAS[args.isa]
    # One pinning for all: this process (our kernel's OpenMP threads, set
    # before libomp loads) and the children it starts (numpy, torch, IREE).
    cpus = sorted(os.sched_getaffinity(0))[:args.threads]
    os.sched_setaffinity(0, cpus)
    os.environ["OMP_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = \
        str(len(cpus))

    machine = (f"{cpu_name()}, {os.cpu_count()} cores, "
               f"{' '.join(cpu_features()) or 'no AVX2'}")
    if args.isa != "native":
        machine += f", held to {args.isa} (our target-cpu={ISA['cpu']})"
    os.makedirs(args.out, exist_ok=True)
    stamp = fresh_stamp(args.out, args.tables.split(","),
                        "" if args.isa == "native" else f"-{args.isa}")
    print(f"# gated attention, CPU, B=1 H={H} D={D} f32, {machine}, "
          f"{len(cpus)} threads pinned, {stamp}")
    tables = [("throughput", throughput), ("qwen3next", qwen3next)]
    if not args.no_peers and args.isa == "native":
        tables.append(("qwen3next-bf16", qwen3next_bf16))
    tables.append(("memory", memory))
    chosen = args.tables.split(",")
    tables = [(n, t) for n, t in tables if n in chosen]
    # The f32 rows' yardstick, measured on the same pinned threads before
    # them (a nominal clock x width overstates Zen 4's by 2x).
    args.fma_peak = None
    if {"throughput", "qwen3next"} & set(chosen) and fma_peak.widths():
        peaks = fma_peak.peak(len(cpus))
        if ISA["fma_bits"]:
            peaks = {w: g for w, g in peaks.items() if w == ISA["fma_bits"]}
        args.fma_peak = fma_peak.best(peaks)
        print("f32 FMA peak on these threads (bench/fma_peak.py): " +
              ", ".join(f"{w}-bit {g:.1f}" for w, g in peaks.items()) +
              " GFLOP/s\n")
    for name, table in tables:
        header, rows = table(args)
        write_csv(os.path.join(args.out, f"cpu-{name}-{stamp}.csv"), machine,
                  header, rows)
        print()
    if not args.no_peers and len(tables) == len(chosen) == 4:
        import cpu_report
        print(cpu_report.plot(args.out, stamp))


if __name__ == "__main__":
    main()
