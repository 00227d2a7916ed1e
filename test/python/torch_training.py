# REQUIRES: torch
# RUN: %PYTHON %s
"""A training step with the op under torch.compile(fullgraph=True) on the
CPU: a small Qwen3-Next-shaped language model (gated_lm) whose attention
is gated_attention.attention, its loss compiled by Inductor with every
parameter requiring grad, loss.backward() through the compiled backward
graph (which calls torch.ops.gated_attention.attention_backward), an AdamW
step. Checks: no graph break (fullgraph=True raises on one;
torch._dynamo.explain counts them), gat.warmup on tensors that require
grad compiles (or loads) the backward's kernel as well as the forward's so
that the training steps compile none, the compiled steps run the op's forward
and backward kernels, and their losses stay within
gated_lm.loss_tolerances of a float64 run of the unfused model (torch's
SDPA, then * sigmoid(gate)) from the same seed."""

import torch

import gated_attention.torch as gat
from gated_attention.models import gated_lm
from gated_attention.torch import _backward, _op

SHAPE = gated_lm.Shape(vocab=32, hidden=32, layers=1, heads=4, kv_heads=2,
                       head_dim=16, mlp=32, rotary=4)
STEPS = 3


def batch(step):
    gen = torch.Generator().manual_seed(step)
    return torch.randint(0, SHAPE.vocab, (2, 13), generator=gen)


def train(attention, dtype, compiled):
    torch.manual_seed(0)
    model = gated_lm.GatedLM(SHAPE, attention).to(dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    loss_fn = (lambda t: gated_lm.loss(model, t))
    if compiled:
        torch._dynamo.reset()
        loss_fn = torch.compile(loss_fn, fullgraph=True)
    losses = []
    for step in range(STEPS):
        loss = loss_fn(batch(step))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, losses


def kernels():
    """The kernels this process has compiled or loaded (configurations)."""
    return set(_op._kernels), set(_backward._kernels)


# 1. Warm-up on meta tensors that require grad: the forward's kernel and
# the backward's.
torch.manual_seed(0)
gated_lm.warmup(gated_lm.GatedLM(SHAPE, "op"), batch(0))
forward, backward = kernels()
assert len(forward) == 1 and len(backward) == 1, kernels()
# Without requires_grad only the forward's.
q = torch.empty(1, 5, 4, 16, device="meta")
kv = torch.empty(1, 5, 2, 16, device="meta")
gat.warmup(q, kv, kv, q, layout="bshd", device="cpu")
assert len(kernels()[0]) == 2 and kernels()[1] == backward, kernels()
print("PASS warm-up compiles the backward kernel")

# 2. The compiled training steps: no compile, the op's kernels run.
calls = {"forward": 0, "backward": 0}


def counting(name, kernel_for):
    def wrapped(*args, **kwargs):
        calls[name] += 1
        return kernel_for(*args, **kwargs)
    return wrapped


# (The forward looks its kernel up per call; kernel_for runs once per
# call signature.)
_op._kernel_of_call = counting("forward", _op._kernel_of_call)
_backward.kernel_for = counting("backward", _backward.kernel_for)
warm = kernels()
model, compiled = train("op", torch.float32, compiled=True)
assert kernels() == warm, (kernels(), warm)
assert calls["forward"] >= STEPS and calls["backward"] == STEPS, calls
for name, p in model.named_parameters():
    assert p.grad is not None and torch.isfinite(p.grad).all(), name
print(f"PASS {STEPS} compiled training steps compile no kernel and run the "
      f"op's forward and backward ({calls})")

# 3. No graph break.
explanation = torch._dynamo.explain(lambda t: gated_lm.loss(model, t))(
    batch(0))
assert explanation.graph_break_count == 0, explanation.break_reasons
assert explanation.graph_count == 1, explanation.graph_count
print("PASS no graph break")

# 4. The losses against the float64 unfused run.
_, ref32 = train("unfused", torch.float32, compiled=False)
_, ref64 = train("unfused", torch.float64, compiled=False)
for t, tol in enumerate(gated_lm.loss_tolerances(ref32, ref64,
                                                 SHAPE.vocab)):
    assert abs(compiled[t] - ref64[t]) <= tol, (t, compiled[t], ref64[t],
                                                tol)
print("PASS compiled losses within the float32 envelope of the float64 "
      "run")
