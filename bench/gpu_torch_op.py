"""The torch op against what a PyTorch user runs today, on the GPU.

Two phases, because the GPU machine has torch but no MLIR:

  prepare (here):
    .venv/bin/python bench/gpu_torch_op.py prepare build/device-check/torch-kernels
      compiles the kernels of every shape and layout below for sm_90 into
      that disk cache (gated_attention.torch.warmup(chip="sm_90")): those
      the op runs by default (wgmma where they fit) and with
      GATED_ATTENTION_CUDA_KERNEL=mma-sync, which run compares.
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
      gpu-torch-op-<date>-<gpu>.csv (ms of each, speedup = baseline / op);
      with GATED_ATTENTION_CUDA_KERNEL=mma-sync (or wgmma) the file is
      gpu-torch-op-mma-sync-<date>-<gpu>.csv, so both runs are kept.

Both compute bottom-right causal; with Sq = Skv it is SDPA's is_causal.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gpu_torch_common as common  # noqa: E402
import torch  # noqa: E402

import gated_attention.torch as gat  # noqa: E402
from gated_attention.torch import _select  # noqa: E402

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


def prepare(directory):
    gat.set_cache_dir(directory)
    for _, layout, b, s, hq, hkv, d in SHAPES:
        q, k, v, g = tensors(layout, b, s, hq, hkv, d, "meta")
        for kernel in (None, "mma-sync"):
            gat.warmup(q, k, v, g, causal=True, layout=layout, chip="sm_90",
                       kernel=kernel)
    print(f"torch op benchmark kernels for sm_90 in {directory}")


def run(out_dir):
    rows = ["shape,layout,B,S,Hq,Hkv,D,op_ms,sdpa_gate_ms,speedup"]
    failed = False
    for name, layout, b, s, hq, hkv, d in SHAPES:
        q, k, v, g = tensors(layout, b, s, hq, hkv, d, "cuda")
        ours = gat.attention(q, k, v, g, causal=True, layout=layout)
        ref = common.baseline(q, k, v, g, layout)
        err = (ours.float() - ref.float()).abs().max().item()
        if not err < 3e-2 * (1 + ref.float().abs().max().item()):
            print(f"FAIL {name} B={b} S={s}: max error {err}")
            failed = True
            continue
        op = common.timed(lambda: gat.attention(q, k, v, g, causal=True,
                                         layout=layout))
        base = common.timed(lambda: common.baseline(q, k, v, g, layout))
        rows.append(f"{name},{layout},{b},{s},{hq},{hkv},{d},{op:.4f},"
                    f"{base:.4f},{base / op:.3f}")
        print(rows[-1], flush=True)
    choice = _select.choice()
    common.write_csv(out_dir, "gpu-torch-op" + (
        "" if choice == "auto" else f"-{choice}"), rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(common.main(__doc__, prepare, run))
