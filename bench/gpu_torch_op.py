"""The torch op against what a PyTorch user runs today, on the GPU.

Two phases, because the GPU machine has torch but no MLIR:

  prepare (here):
    .venv/bin/python bench/gpu_torch_op.py prepare build/device-check/torch-kernels
      compiles the kernels of every shape and layout below for sm_90 into
      that disk cache (gated_attention.torch.warmup(chip="sm_90")).
  run (on the GPU machine):
    GATED_ATTENTION_CACHE_DIR=build/device-check/torch-kernels \\
        python3 bench/gpu_torch_op.py run --out bench/results
      times, bf16, causal, in one run: gated_attention.torch.attention
      against F.scaled_dot_product_attention(..., is_causal=True,
      enable_gqa=True) * torch.sigmoid(g) (the separate gate serving stacks
      run), each on the same tensors in the layout model code has:
      Qwen3-Next's q | gate halves of one [B, S, 16, 512] projection with
      K, V [B, S, 2, 256] ("bshd"), and [B, 8, S, 128] tensors ("bhsd").
      Checks each result against the baseline's first, then writes
      gpu-torch-op-<date>-<gpu>.csv (ms of each, speedup = baseline / op).

Both compute bottom-right causal; with Sq = Skv it is SDPA's is_causal.
"""

import argparse
import datetime
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import gated_attention.torch as gat  # noqa: E402

# (name, layout, B, S, Hq, Hkv, D)
SHAPES = [("qwen3-next", "bshd", b, s, 16, 2, 256)
          for b, s in ((1, 4096), (4, 4096), (1, 16384))] + \
         [("bhsd-d128", "bhsd", 1, s, 8, 8, 128) for s in (1024, 4096)]


def tensors(layout, b, s, hq, hkv, d, device):
    """q, k, v, g as model code has them (`meta` for prepare)."""
    def randn(*shape):
        return torch.randn(*shape, device=device).to(torch.bfloat16)
    if layout == "bshd":
        proj = randn(b, s, hq, 2 * d)
        return (proj[..., :d], randn(b, s, hkv, d), randn(b, s, hkv, d),
                proj[..., d:])
    return (randn(b, hq, s, d), randn(b, hkv, s, d), randn(b, hkv, s, d),
            randn(b, hq, s, d))


def baseline(q, k, v, g, layout):
    """SDPA + a separate gate, in the caller's layout."""
    if layout == "bshd":
        q, k, v = (x.transpose(1, 2) for x in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                       enable_gqa=True)
    if layout == "bshd":
        y = y.transpose(1, 2)
    return y * torch.sigmoid(g)


def timed(fn, reps=20):
    start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) / reps)
    return best


def prepare(directory):
    gat.set_cache_dir(directory)
    for _, layout, b, s, hq, hkv, d in SHAPES:
        q, k, v, g = tensors(layout, b, s, hq, hkv, d, "meta")
        gat.warmup(q, k, v, g, causal=True, layout=layout, chip="sm_90")
    print(f"torch op benchmark kernels for sm_90 in {directory}")


def run(out_dir):
    gpu = torch.cuda.get_device_name()
    rows = ["shape,layout,B,S,Hq,Hkv,D,op_ms,sdpa_gate_ms,speedup"]
    failed = False
    for name, layout, b, s, hq, hkv, d in SHAPES:
        q, k, v, g = tensors(layout, b, s, hq, hkv, d, "cuda")
        ours = gat.attention(q, k, v, g, causal=True, layout=layout)
        ref = baseline(q, k, v, g, layout)
        err = (ours.float() - ref.float()).abs().max().item()
        if not err < 3e-2 * (1 + ref.float().abs().max().item()):
            print(f"FAIL {name} B={b} S={s}: max error {err}")
            failed = True
            continue
        op = timed(lambda: gat.attention(q, k, v, g, causal=True,
                                         layout=layout))
        base = timed(lambda: baseline(q, k, v, g, layout))
        rows.append(f"{name},{layout},{b},{s},{hq},{hkv},{d},{op:.4f},"
                    f"{base:.4f},{base / op:.3f}")
        print(rows[-1], flush=True)
    os.makedirs(out_dir, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9]+", "-", gpu).strip("-").lower()
    path = os.path.join(out_dir, f"gpu-torch-op-{datetime.date.today()}-"
                                 f"{stem}.csv")
    with open(path, "w") as f:
        f.write("\n".join(rows) + "\n")
    print(f"wrote {path} ({gpu}, torch {torch.__version__})")
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="phase", required=True)
    sub.add_parser("prepare").add_argument("directory")
    sub.add_parser("run").add_argument("--out", default="bench/results")
    args = p.parse_args()
    if args.phase == "prepare":
        prepare(args.directory)
        return 0
    return run(args.out)


if __name__ == "__main__":
    sys.exit(main())
