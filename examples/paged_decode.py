"""Generation with a paged KV cache, checked step by step.

A stack of random Qwen3-Next-shaped gated-attention layers (GQA, a sigmoid
gate from the q_proj's second half, no weights downloaded) serves a batch
of sequences as an engine would: pages allocated from a shuffled free list
(the same page size for all layers, a multiple of 16: 528 and 1056 are
Qwen3-Next's), the prompts prefilled, then one token per sequence per
decode step, and one speculative step of 1 + 3 tokens. Each layer's
attention runs as gated_attention.paged_attention over the packed batch and
is checked against the dense op (ga.attention) on each sequence's keys kept
contiguous, and both against the float64 reference within the error
model's bound. `--device cuda` runs both ops on the GPU (the paged kernel,
split-KV for the decode steps; f16 or bf16).

    PYTHONPATH=python .venv/bin/python examples/paged_decode.py \\
        [--layers 2] [--steps 4] [--page 16] [--heads 16 --kv-heads 2 --dim 64]
        [--device cpu|cuda] [--dtype f32|f16|bf16]

A GPU machine without MLIR runs it from kernels compiled elsewhere:
`--prepare DIR` (here) compiles the two kernels `--device cuda` needs for
sm_90 into DIR; there, set GATED_ATTENTION_CACHE_DIR to it.
"""

import argparse
import dataclasses
import sys

import numpy as np

import gated_attention as ga
from gated_attention import accuracy, config
from gated_attention.dtypes import round_to


class PagedCache:
    """One layer's K/V pages; slots no sequence owns hold NaN (as in a real
    cache, garbage), so reading one would show in the result."""

    def __init__(self, pages, page, hkv, d, free):
        self.k = np.full((pages, page, hkv, d), np.nan, np.float32)
        self.v = np.full((pages, page, hkv, d), np.nan, np.float32)
        self.page, self.free = page, free

    def append(self, table, length, k, v):
        """Writes tokens k, v [n, Hkv, D] after `length` tokens of the
        sequence whose page list is `table`, allocating pages."""
        for t in range(k.shape[0]):
            j = length + t
            if j // self.page == len(table):
                table.append(self.free.pop())
            self.k[table[j // self.page], j % self.page] = k[t]
            self.v[table[j // self.page], j % self.page] = v[t]


def prepare(args, dtype):
    """Compiles the paged and the dense kernel of the stack for sm_90 into
    args.prepare (the disk cache both GPU entry points read)."""
    from gated_attention import cuda, compiler, paged
    hq, hkv, d = args.heads, args.kv_heads, args.dim
    q = np.zeros((1, hq, d))
    kc = np.zeros((1, args.page, hkv, d))
    cfg = paged._config(q, kc, kc, q, causal=True, scale=None,
                        gate="sigmoid", combine="mul", dtype=dtype)
    cuda.compile_paged_kernel(cfg, args.page, chip="sm_90",
                              cache=args.prepare)
    dq, dk = np.zeros((1, hq, 1, d)), np.zeros((1, hkv, 1, d))
    dense = compiler.config_for(dq, dk, dk, dq, causal=True, dtype=dtype)
    cuda.compile_kernel(dataclasses.replace(dense, b=1, sq=1, skv=1,
                                            dynamic=("b", "sq", "skv")),
                        chip="sm_90", cache=args.prepare)
    print(f"paged decode kernels ({dtype}) for sm_90 in {args.prepare}")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--page", type=int, default=16)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--prompts", default="21,5,40",
                   help="prompt lengths of the sequences")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--prepare", metavar="DIR",
                   help="compile the kernels of --device cuda for sm_90 "
                   "into DIR and stop")
    p.add_argument("--dtype", choices=("f32", "f16", "bf16"),
                   help="the ops' element type (default: f32 on the CPU, "
                   "bf16 on cuda, whose tensor cores take f16 and bf16)")
    args = p.parse_args(argv)
    dtype = args.dtype or ("bf16" if args.device == "cuda" else "f32")
    if args.device == "cuda" and dtype == "f32":
        p.error("--device cuda runs the tensor-core kernels: --dtype f16 or "
                "bf16")
    run = dict(dtype=dtype, device=args.device)
    if args.prepare:
        return prepare(args, dtype if args.dtype else "bf16")
    rng = np.random.default_rng(args.seed)
    hq, hkv, d, page = args.heads, args.kv_heads, args.dim, args.page
    prompts = [int(n) for n in args.prompts.split(",")]
    width = hq * d                        # the hidden size, as in Qwen3-Next
    most = max(prompts) + args.steps + 4
    pages = len(prompts) * (-(-most // page)) + 2
    free = list(rng.permutation(pages))   # shared by the layers' caches
    layers = []
    for _ in range(args.layers):
        w = {n: rng.standard_normal((width, c)) / np.sqrt(width)
             for n, c in (("q", 2 * hq * d), ("k", hkv * d), ("v", hkv * d),
                          ("o", width))}
        w["o"] = rng.standard_normal((hq * d, width)) / np.sqrt(hq * d)
        layers.append((w, PagedCache(pages, page, hkv, d, list(free))))
    tables = [[[] for _ in prompts] for _ in layers]
    lengths = [0] * len(prompts)
    dense_k = [[np.zeros((0, hkv, d)) for _ in prompts] for _ in layers]
    dense_v = [[np.zeros((0, hkv, d)) for _ in prompts] for _ in layers]
    worst = 0.0

    def step(hidden, counts, label):
        """Runs the stack on `hidden` [T, width], counts[b] new tokens of
        sequence b; checks every layer; returns the new hidden states."""
        nonlocal worst
        cu = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        for layer, (w, cache) in enumerate(layers):
            qg = (hidden @ w["q"]).reshape(-1, hq, 2 * d)
            q, g = qg[..., :d], qg[..., d:]          # Qwen3-Next's [q | gate]
            k = (hidden @ w["k"]).reshape(-1, hkv, d)
            v = (hidden @ w["v"]).reshape(-1, hkv, d)
            # Representable in the ops' element type, as they round them.
            q, k, v, g = (round_to(x, dtype) for x in (q, k, v, g))
            for b, n in enumerate(counts):
                rows = slice(cu[b], cu[b + 1])
                cache.append(tables[layer][b], lengths[b], k[rows], v[rows])
                dense_k[layer][b] = np.concatenate([dense_k[layer][b], k[rows]])
                dense_v[layer][b] = np.concatenate([dense_v[layer][b], v[rows]])
            seq_lens = np.array([lengths[b] + n for b, n in enumerate(counts)],
                                np.int32)
            mb = max(len(t) for t in tables[layer])
            table = np.array([t + [0] * (mb - len(t))
                              for t in tables[layer]], np.int32)
            out = ga.paged_attention(q, cache.k, cache.v, table, seq_lens, cu,
                                     g, causal=True, **run).astype(np.float64)
            for b, n in enumerate(counts):
                if n == 0:
                    continue
                rows = slice(cu[b], cu[b + 1])
                dq, dg = (x[rows].transpose(1, 0, 2)[None] for x in (q, g))
                dk, dv = (x[layer][b].transpose(1, 0, 2)[None]
                          for x in (dense_k, dense_v))
                dense = ga.attention(dq, dk, dv, dg, causal=True, **run)
                ref = ga.attention_reference(dq, dk, dv, dg, causal=True)
                got = out[rows].transpose(1, 0, 2)[None]
                cfg = config.AttentionConfig(
                    b=1, hq=hq, hkv=hkv, sq=n, skv=int(seq_lens[b]), d=d,
                    dv=d, causal=True, dtype=dtype)
                inputs = {"query": dq, "key": dk, "value": dv, "gate": dg}
                for name, x in (("paged", got), ("dense", dense)):
                    check = accuracy.compare(cfg, x, ref, inputs)
                    if not check.ok:
                        print(f"FAIL {label} layer {layer} sequence {b}: "
                              f"{name} {accuracy.describe(check)}")
                        sys.exit(1)
                    worst = max(worst, check.ratio)
            hidden = hidden + out.reshape(-1, hq * d) @ w["o"]
        for b, n in enumerate(counts):
            lengths[b] += n
        print(f"PASS {label}: {len(counts)} sequences, tokens "
              f"{list(counts)}, lengths {lengths}")
        return hidden

    # Prefill, then decode steps of one token each, then a speculative
    # step of 1 + 3 tokens (one sequence idle: 0 new tokens).
    step(rng.standard_normal((sum(prompts), width)), prompts, "prefill")
    for s in range(args.steps):
        step(rng.standard_normal((len(prompts), width)), [1] * len(prompts),
             f"decode {s + 1}")
    spec = [4] * (len(prompts) - 1) + [0]
    step(rng.standard_normal((sum(spec), width)), spec, "speculative 1+3")
    print(f"paged decode: ok, {args.layers} layers, page {page}, {dtype} on "
          f"{args.device}, worst "
          f"err/bound {worst:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
