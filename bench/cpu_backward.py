"""CPU benchmark of a training step of gated attention: forward + backward
of gated_attention.torch.attention (under autograd the tiled forward with
its log-sum-exp, and the tiled FlashAttention-2-shaped backward reading it:
--gated-attention-to-llvm) against torch
computing the same step unfused, F.scaled_dot_product_attention (torch's
CPU flash-attention kernels, forward and backward) then `* sigmoid(g)`,
under autograd, with the same number of threads (torch.set_num_threads and
OMP_NUM_THREADS, which the op's OpenMP loops read).

    .venv/bin/python bench/cpu_backward.py [--sizes 512,1024] [--dtypes f32,bf16]
        [--threads N] [--repeat 3] [--split]

A step: out = attention(q, k, v, g); out.backward(dout). Seconds are the
best of --repeat steps and of a second of steps, after warm-up (which
compiles the op's kernels; bench/timing.py). "saved" is what autograd
keeps for the backward (distinct storages, through
torch.autograd.graph.saved_tensors_hooks), and "saved
beyond inputs" the part of it that is not q, k, v or g: the activations a
training step holds per layer. --split also times the halves apart: the
forward alone (ours with its log-sum-exp, as training runs it; torch's SDPA
without autograd), and the backward alone (the op's backward op reading
that log-sum-exp; torch's autograd.grad of SDPA, without the gate's
elementwise backward).
Writes a CSV file to bench/results/.
"""

import argparse
import datetime
import os
import platform
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import gated_attention.torch as ga_torch  # noqa: E402 (registers the ops)
import timing  # noqa: E402

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def ours(q, k, v, g, causal):
    return ga_torch.attention(q, k, v, g, causal=causal)


def unfused(q, k, v, g, causal):
    y = F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                       enable_gqa=q.shape[1] != k.shape[1])
    return y * torch.sigmoid(g)


def step(fn, leaves, dout, causal):
    for x in leaves:
        x.grad = None
    fn(*leaves, causal).backward(dout)


def saved_bytes(fn, leaves, causal):
    """(all saved bytes, saved bytes that are not an input's storage)."""
    storages = {}

    def pack(x):
        s = x.untyped_storage()
        storages[s.data_ptr()] = s.nbytes()
        return x

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
        out = fn(*leaves, causal)
    inputs = {x.untyped_storage().data_ptr() for x in leaves}
    beyond = sum(n for p, n in storages.items() if p not in inputs)
    del out
    return sum(storages.values()), beyond


def best_seconds(fn, leaves, dout, causal, repeat):
    # The warm-up compiles the op's kernels.
    return timing.best_seconds(lambda: step(fn, leaves, dout, causal), repeat)


def halves(leaves, dout, causal, repeat):
    """Seconds of (our forward, our backward, torch's SDPA forward, torch's
    SDPA backward), each alone."""
    q, k, v, g = (x.detach() for x in leaves)
    gqa = q.shape[1] != k.shape[1]
    with_lse = torch.ops.gated_attention.attention_with_lse
    out, lse = with_lse(q, k, v, g, causal=causal)
    qq, kk, vv = (x.clone().requires_grad_() for x in (q, k, v))
    y = F.scaled_dot_product_attention(qq, kk, vv, is_causal=causal,
                                       enable_gqa=gqa)

    def best(fn):
        return timing.best_seconds(fn, repeat)

    with torch.no_grad():
        fwd = best(lambda: with_lse(q, k, v, g, causal=causal))
        tfwd = best(lambda: F.scaled_dot_product_attention(
            q, k, v, is_causal=causal, enable_gqa=gqa))
    bwd = best(lambda: torch.ops.gated_attention.attention_backward(
        q, k, v, out, dout, g, lse, causal=causal))
    tbwd = best(lambda: torch.autograd.grad(y, (qq, kk, vv), dout,
                                            retain_graph=True))
    return fwd, bwd, tfwd, tbwd


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="512,1024")
    parser.add_argument("--dtypes", default="f32,bf16")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--split", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)

    # Qwen3-Next-shaped GQA (Hq 16 over Hkv 2, causal) at D 128 and the
    # plain multi-head shape, B = 1.
    shapes = [dict(hq=8, hkv=8, d=128, causal=False),
              dict(hq=16, hkv=2, d=128, causal=True)]
    rows = []
    header = ("dtype,hq,hkv,d,causal,s,ours_s,torch_s,speedup,"
              "ours_saved_MiB,torch_saved_MiB,ours_beyond_MiB,"
              "torch_beyond_MiB")
    print(f"threads {args.threads}, {platform.processor() or platform.machine()}")
    print(header)
    for dtype in args.dtypes.split(","):
        for shape in shapes:
            for s in (int(x) for x in args.sizes.split(",")):
                torch.manual_seed(0)
                hq, hkv, d = shape["hq"], shape["hkv"], shape["d"]
                t = DTYPES[dtype]
                leaves = [torch.randn(1, h, s, d, dtype=t).requires_grad_()
                          for h in (hq, hkv, hkv, hq)]
                dout = torch.randn(1, hq, s, d, dtype=t)
                causal = shape["causal"]
                ours_s = best_seconds(ours, leaves, dout, causal, args.repeat)
                torch_s = best_seconds(unfused, leaves, dout, causal,
                                       args.repeat)
                mine, theirs = (saved_bytes(fn, leaves, causal)
                                for fn in (ours, unfused))
                mib = 2.0 ** 20
                row = (f"{dtype},{hq},{hkv},{d},{int(causal)},{s},"
                       f"{ours_s:.4f},{torch_s:.4f},{torch_s / ours_s:.2f},"
                       f"{mine[0] / mib:.1f},{theirs[0] / mib:.1f},"
                       f"{mine[1] / mib:.1f},{theirs[1] / mib:.1f}")
                print(row, flush=True)
                if args.split:
                    fwd, bwd, tfwd, tbwd = halves(leaves, dout, causal,
                                                  args.repeat)
                    print(f"  forward ours {fwd:.4f} torch {tfwd:.4f}, "
                          f"backward ours {bwd:.4f} torch {tbwd:.4f}",
                          flush=True)
                rows.append(row)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y%m%dT%H%M%SZ")
    path = os.path.join(HERE, "results", f"cpu_backward-{stamp}.csv")
    with open(path, "w") as f:
        f.write(header + "\n" + "\n".join(rows) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
