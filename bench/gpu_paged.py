"""Paged attention on the GPU against what a serving stack runs today.

Two phases, because the GPU machine has torch but no MLIR:

  prepare (here):
    .venv/bin/python bench/gpu_paged.py prepare build/device-check/torch-kernels
      compiles the kernels below for sm_90 into that disk cache.
  run (on the GPU machine):
    GATED_ATTENTION_CACHE_DIR=build/device-check/torch-kernels \\
        python3 bench/gpu_paged.py run --out bench/results

Qwen3-Next's full-attention heads (Hq 16, Hkv 2, D 256), bf16, gate
[T, 16, 256] (sigmoid, multiplied), pages in shuffled order:

  decode  B in {1, 8, 32, 64} x context {1k, 8k, 32k}, one query per
          sequence, pages of 16 tokens: torch.ops.gated_attention.
          paged_attention (split-KV as it chooses) against SDPA on K/V
          gathered through the block table + a separate gate (what a torch
          user without a paged kernel runs), and against SDPA on contiguous
          K/V (the gather left out: a bound no paged baseline beats).
          Bandwidth = K and V bytes the op must read / its time, and that
          over the H200's 4.8 TB/s.
  prefill one sequence of 4k and 16k tokens, causal, pages of 16 and 528
          tokens: the paged op against the dense torch op on the same
          values in contiguous [B, S, H, D] tensors (ratio: paged / dense).
          Rows "prefill-sm90a": the sm_90a paged kernel (kernel=wgmma, its
          producer warpgroup copying rows through the block table),
          launched on the same tensors, against the same dense op and (in
          vs_mma_sync) the torch op's mma.sync paged kernel.

Each result is checked against its baseline first; the CSV is
gpu-paged-<date>-<gpu>.csv.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gpu_torch_common as common  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import gated_attention.torch as gat  # noqa: E402
from gated_attention import cuda, kernel_cache, paged  # noqa: E402

HQ, HKV, D = 16, 2, 256
PEAK_TBPS = 4.8
DECODE = [(b, ctx) for b in (1, 8, 32, 64) for ctx in (1024, 8192, 32768)]
DECODE_PAGE = 16
PREFILL = [(s, page) for s in (4096, 16384) for page in (16, 528)]


def paged_inputs(b, ctx, queries, page, device, causal):
    """q [T, 16, 256], caches of shuffled pages, tables, lengths, gate, and
    the contiguous [B, ctx, Hkv, D] K/V the caches hold."""
    def randn(*shape):
        return torch.randn(*shape, device=device).to(torch.bfloat16)
    per_seq = -(-ctx // page)
    nb = b * per_seq
    table = torch.randperm(nb, device=device).to(torch.int32).view(
        b, per_seq)
    k, v = randn(b, per_seq * page, HKV, D), randn(b, per_seq * page, HKV, D)
    kc = torch.empty(nb, page, HKV, D, device=device, dtype=torch.bfloat16)
    vc = torch.empty_like(kc)
    kc[table.flatten().long()] = k.view(b * per_seq, page, HKV, D)
    vc[table.flatten().long()] = v.view(b * per_seq, page, HKV, D)
    t = b * queries
    q, g = randn(t, HQ, D), randn(t, HQ, D)
    lens = torch.full((b,), ctx, device=device, dtype=torch.int32)
    cu = torch.arange(0, t + 1, queries, device=device, dtype=torch.int32)
    return (q, kc, vc, table, lens, cu, g), (k[:, :ctx], v[:, :ctx])


def sdpa_gathered(q, kc, vc, table, ctx, g):
    """What a torch user without a paged kernel runs: gather the pages,
    SDPA, then the gate."""
    b = table.shape[0]
    k = kc[table.long()].flatten(1, 2)[:, :ctx].transpose(1, 2)
    v = vc[table.long()].flatten(1, 2)[:, :ctx].transpose(1, 2)
    return sdpa_contiguous(q, k, v, g, b)


def sdpa_contiguous(q, k, v, g, b):
    """SDPA on [B, Hkv, ctx, D] K/V for one query per sequence, gated."""
    y = F.scaled_dot_product_attention(q.view(b, -1, HQ, D).transpose(1, 2),
                                       k, v, enable_gqa=True)
    return y.transpose(1, 2).reshape(q.shape) * torch.sigmoid(g)


def prepare(directory):
    gat.set_cache_dir(directory)
    for causal, pages in ((False, (DECODE_PAGE,)),
                          (True, sorted({p for _, p in PREFILL}))):
        cfg = paged._config(
            torch.empty(1, HQ, D, device="meta"),
            torch.empty(1, 16, HKV, D, device="meta"),
            torch.empty(1, 16, HKV, D, device="meta"),
            torch.empty(1, HQ, D, device="meta"), causal=causal, scale=None,
            gate="sigmoid", combine="mul", dtype="bf16")
        for page in pages:
            cuda.compile_paged_kernel(cfg, page, chip="sm_90",
                                      cache=directory)
            if causal:
                cuda.compile_paged_kernel(cfg, page, chip="sm_90a",
                                          kernel="wgmma", cache=directory)
    meta = torch.empty(1, 16, HQ, D, device="meta", dtype=torch.bfloat16)
    kv = torch.empty(1, 16, HKV, D, device="meta", dtype=torch.bfloat16)
    gat.warmup(meta, kv, kv, meta, causal=True, layout="bshd", chip="sm_90")
    print(f"paged benchmark kernels for sm_90 in {directory} "
          f"({kernel_cache.directory()})")


def hopper_paged(args, page):
    """A launcher of the sm_90a paged kernel (causal, direct) on the torch
    tensors `args` of paged_inputs, on torch's current stream, and its
    output tensor."""
    q, kc, vc, table, lens, cu, g = args
    cfg = paged._config(q, kc, vc, g, causal=True, scale=None,
                        gate="sigmoid", combine="mul", dtype="bf16")
    _, ptx, desc = cuda.compile_paged_kernel(
        cfg, page, chip="sm_90a", kernel="wgmma",
        cache=kernel_cache.directory())["paged"]
    kernel = cuda.Backend(cuda.Driver()).kernel(ptx, desc)
    out = torch.empty_like(q)
    names = {"q": q, "k": kc, "v": vc, "gate": g, "out": out,
             "block_table": table, "seq_lens": lens, "cu_seqlens_q": cu}
    buffers = {n: (x.data_ptr(), x.numel()) for n, x in names.items()}

    def launch():
        kernel.launch(buffers, stream=torch.cuda.current_stream().cuda_stream,
                      b=table.shape[0], mb=table.shape[1], t=q.shape[0])
        return out
    return launch


def close(ours, ref):
    err = (ours.float() - ref.float()).abs().max().item()
    return err < 3e-2 * (1 + ref.float().abs().max().item()), err


def run(out_dir):
    rows = ["kind,B,context,P,op_ms,baseline_ms,contiguous_ms,op_TBps,"
            "fraction_of_peak,speedup_vs_gather,ratio_vs_contiguous,"
            "vs_mma_sync"]
    failed = False
    for b, ctx in DECODE:
        args, (k, v) = paged_inputs(b, ctx, 1, DECODE_PAGE, "cuda", False)
        q, kc, vc, table, lens, cu, g = args

        def ours():
            return torch.ops.gated_attention.paged_attention(*args)
        ok, err = close(ours(), sdpa_gathered(q, kc, vc, table, ctx, g))
        if not ok:
            print(f"FAIL decode B={b} ctx={ctx}: max error {err}")
            failed = True
            continue
        kt, vt = k.transpose(1, 2).contiguous(), v.transpose(1, 2).contiguous()
        op = common.timed(ours)
        base = common.timed(lambda: sdpa_gathered(q, kc, vc, table, ctx, g))
        contiguous = common.timed(lambda: sdpa_contiguous(q, kt, vt, g, b))
        tbps = b * ctx * HKV * 2 * D * 2 / (op * 1e-3) / 1e12
        rows.append(f"decode,{b},{ctx},{DECODE_PAGE},{op:.4f},{base:.4f},"
                    f"{contiguous:.4f},{tbps:.3f},{tbps / PEAK_TBPS:.3f},"
                    f"{base / op:.3f},{contiguous / op:.3f},")
        print(rows[-1], flush=True)
    for s, page in PREFILL:
        args, (k, v) = paged_inputs(1, s, s, page, "cuda", True)
        q, kc, vc, table, lens, cu, g = args

        def ours():
            return torch.ops.gated_attention.paged_attention(*args,
                                                             causal=True)

        def dense():
            return gat.attention(q[None], k, v, g[None], causal=True,
                                 layout="bshd")
        ok, err = close(ours(), dense()[0])
        if not ok:
            print(f"FAIL prefill S={s} P={page}: max error {err}")
            failed = True
            continue
        op, contiguous = common.timed(ours, reps=5), common.timed(dense, reps=5)
        rows.append(f"prefill,1,{s},{page},{op:.4f},,{contiguous:.4f},,,,"
                    f"{contiguous / op:.3f},")
        print(rows[-1], flush=True)
        hopper = hopper_paged(args, page)
        ok, err = close(hopper(), dense()[0])
        if not ok:
            print(f"FAIL prefill-sm90a S={s} P={page}: max error {err}")
            failed = True
            continue
        fast = common.timed(hopper, reps=5)
        rows.append(f"prefill-sm90a,1,{s},{page},{fast:.4f},,"
                    f"{contiguous:.4f},,,,{contiguous / fast:.3f},"
                    f"{op / fast:.3f}")
        print(rows[-1], flush=True)
    common.write_csv(out_dir, "gpu-paged", rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(common.main(__doc__, prepare, run))
