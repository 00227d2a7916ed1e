"""Trains a small Qwen3-Next-shaped gated-attention language model on the
CPU with the op, and the same model with the unfused torch expression,
from the same seed; compares their losses step by step and the tensors
each layer's autograd saves.

The model is gated_attention.models.gated_lm (GQA 8, head dim 32, partial
rotary, q/k RMSNorm, an elementwise sigmoid gate from q_proj's second
half, SwiGLU MLP). The data is random: walks through a fixed random table
giving each token 4 equally likely successors, so the loss falls from
about ln(256) = 5.5 towards ln(4) = 1.39. AdamW, one batch per step.

Three runs: the op (float32), the unfused expression (torch's SDPA, then
`y * sigmoid(gate)`) in float32 and the same in float64. The float64 run
is the reference trajectory; the op's loss must stay within
gated_lm.loss_tolerances of it at every step: 2 E(t) + r(t), E(t) the
largest |unfused32 - float64| so far (how far float32 rounding, amplified
by training, moves the trajectory), doubled as the op's error model is
the plain float32 sums' bound twice, r(t) one float32 evaluation of the
loss.

    PYTHONPATH=python .venv/bin/python examples/train_qwen3_next.py \\
        [--steps 300] [--layers 2] [--batch 8] [--seq 32] [--lr 3e-3]

Prints the losses every --every steps, the bytes autograd keeps per
layer (saved_tensors_hooks: the storages a block's saved tensors keep
alive, and the tensors its attention core saves itself) and PASS or FAIL;
exit status 1 on FAIL. The op's core saves q, k, v, the gate and the gated
output, which o_proj saves anyway (its input); the unfused core saves q,
k, v, the ungated output, SDPA's log-sum-exp and sigmoid(gate), and o_proj
the gated output besides: per block, the op keeps the ungated output,
sigmoid(gate) and the log-sum-exp less.
"""

import argparse
import sys
import time

import torch

from gated_attention.models import gated_lm

BRANCH = 4


def successors(vocab):
    """The random language: each token may be followed by BRANCH tokens
    (a fixed random table), each as likely."""
    gen = torch.Generator().manual_seed(7)
    return torch.randint(0, vocab, (vocab, BRANCH), generator=gen)


def batch(step, args, table):
    """Tokens [B, S + 1] of step `step`: random walks through `table`."""
    gen = torch.Generator().manual_seed(1000 + step)
    tokens = torch.empty(args.batch, args.seq + 1, dtype=torch.long)
    tokens[:, 0] = torch.randint(0, table.shape[0], (args.batch,),
                                 generator=gen)
    pick = torch.randint(0, BRANCH, (args.batch, args.seq), generator=gen)
    for t in range(args.seq):
        tokens[:, t + 1] = table[tokens[:, t], pick[:, t]]
    return tokens


def train(args, shape, attention, dtype):
    """The losses of `args.steps` AdamW steps from seed 0."""
    table = successors(shape.vocab)
    torch.manual_seed(0)
    model = gated_lm.GatedLM(shape, attention).to(dtype)
    if attention == "op":
        gated_lm.warmup(model, batch(0, args, table))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    losses = []
    start = time.monotonic()
    for step in range(args.steps):
        loss = gated_lm.loss(model, batch(step, args, table))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, time.monotonic() - start


def saved_bytes(shape, attention, tokens):
    """Bytes autograd keeps for one layer's backward: the storages the
    block's saved tensors keep alive (one counted once however many
    tensors view it), and the bytes of the tensors its attention core
    (q, k, v, gate -> gated output) saves."""
    torch.manual_seed(0)
    model = gated_lm.GatedLM(shape, attention)
    block, regions = model.blocks[0], {}

    def counting(region):
        saved = regions.setdefault(region, {})

        def pack(t):
            s = t.untyped_storage()
            saved[("storage", s.data_ptr())] = s.nbytes()
            # (A transposed view of a saved tensor is the same bytes.)
            size = t.numel() * t.element_size()
            saved[("tensor", t.data_ptr(), size)] = size
            return t
        return torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t)

    core = gated_lm.gated_attention

    def counted_core(*a):
        with counting("core"):
            return core(*a)

    x = model.embed(tokens).detach().requires_grad_()
    cos, sin = gated_lm.rotary_tables(shape, tokens.shape[1], x.dtype)
    gated_lm.gated_attention = counted_core
    try:
        with counting("block"):
            block(x, cos, sin)
    finally:
        gated_lm.gated_attention = core
    block = {**regions["block"], **regions["core"]}
    return (sum(n for k, n in block.items() if k[0] == "storage"),
            sum(n for k, n in regions["core"].items() if k[0] == "tensor"))


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--every", type=int, default=50)
    args = p.parse_args(argv)
    for name in ("steps", "layers", "batch", "seq", "every"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be at least 1")
    if not args.lr > 0:
        p.error("--lr must be positive")
    shape = gated_lm.Shape(vocab=256, hidden=128, layers=args.layers,
                           heads=8, kv_heads=1, head_dim=32, mlp=256,
                           rotary=8)
    print(f"model: {shape.layers} layers, hidden {shape.hidden}, "
          f"{shape.heads} query heads over {shape.kv_heads} KV head(s) of "
          f"dim {shape.head_dim}; batch {args.batch} x {args.seq} tokens, "
          f"{args.steps} AdamW steps, lr {args.lr}")
    op, t_op = train(args, shape, "op", torch.float32)
    ref32, t_32 = train(args, shape, "unfused", torch.float32)
    ref64, _ = train(args, shape, "unfused", torch.float64)
    print(f"time: op {t_op:.1f} s, unfused {t_32:.1f} s (float32)")
    print(f"{'step':>5} {'loss (f64)':>11} {'op - f64':>10} "
          f"{'unfused32 - f64':>16} {'tolerance':>10}")
    worst, failed = 0.0, []
    tolerances = gated_lm.loss_tolerances(ref32, ref64, shape.vocab)
    for t, tol in enumerate(tolerances):
        err = abs(op[t] - ref64[t])
        worst = max(worst, err / tol)
        if not err <= tol:
            failed.append(t)
        if t % args.every == 0 or t == args.steps - 1:
            print(f"{t:>5} {ref64[t]:>11.6f} {op[t] - ref64[t]:>+10.2e} "
                  f"{ref32[t] - ref64[t]:>+16.2e} {tol:>10.2e}")
    tokens = batch(0, args, successors(shape.vocab))[:, :-1]
    print("saved for backward per layer (float32, batch "
          f"{args.batch} x {args.seq}):")
    per_block = {}
    for attention in ("op", "unfused"):
        block, core = saved_bytes(shape, attention, tokens)
        per_block[attention] = block
        print(f"  {attention:>7}: {block:>8} bytes per block, {core:>7} by "
              f"the attention core")
    less = per_block["unfused"] - per_block["op"]
    print(f"  the op saves {less} bytes less per layer "
          f"({less / tokens.numel():.0f} per token)")
    drop = ref64[0] - ref64[-1]
    print(f"loss {ref64[0]:.3f} -> {ref64[-1]:.3f}; worst |op - f64| / "
          f"tolerance {worst:.3g}")
    if failed:
        print(f"FAIL: the op's loss is outside the tolerance at steps "
              f"{failed[:10]}")
        return 1
    print(f"PASS losses agree at all {args.steps} steps (loss fell by "
          f"{drop:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
