# REQUIRES: torch
# RUN: %PYTHON %s
"""gat.paged_attention on CPU tensors: the op's kernel computes into the
output tensor (paged_destination_ir), and a call whose signature the op
has checked before, in eager code, runs it without torch's dispatcher
(_paged.direct). Both must give the numpy entry point's result bit for
bit; the tables' values (the runtime contract) are checked on every call,
the direct ones included; what would see the op still gets it."""

import os

import numpy as np
import torch

import gated_attention.torch as gat
from gated_attention import paged
from gated_attention.testing.observers import PathSpy, Recorder, graph_recorder
from gated_attention.torch import _paged

SEED = int(os.environ.get("GATED_ATTENTION_TEST_SEED", "3"))
gen = torch.Generator().manual_seed(SEED)
rng = np.random.default_rng(SEED)

spy = PathSpy(_paged, "direct")
taken = spy.taken


def call(*args, direct, **kw):
    """gat.paged_attention(*args, **kw), asserting whether it ran directly."""
    return spy.call(gat.paged_attention, *args, direct=direct, **kw)


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=gen).to(dtype)


def numpy_path(args, dtype, **kw):
    """The numpy entry point's result (the same compiled function, on
    numpy arrays) for torch arguments."""
    def arr(x):
        if x.dtype == torch.bfloat16:
            import ml_dtypes
            return x.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return x.numpy()
    out = paged.paged_attention(*[None if x is None else arr(x)
                                  for x in args], dtype=dtype, **kw)
    out = np.asarray(out, np.float32)
    return torch.from_numpy(out)


# 1. Mixed prefill and decode (B 3, pages shuffled, one page shared, a
#    sequence of 1 key), both dtypes, gated and causal or neither: the
#    first call of a signature goes through the op, the next ones
#    directly, all giving the numpy entry point's bits.
P, HQ, HKV, D = 16, 8, 2, 64
lens = torch.tensor([37, 1, 20], dtype=torch.int32)
cu = torch.tensor([0, 5, 6, 26], dtype=torch.int32)
table = torch.tensor([[3, 0, 6], [5, 7, 7], [3, 1, 2]], dtype=torch.int32)
T = int(cu[-1])
for dtype, name in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
    kc, vc = randn(8, P, HKV, D, dtype=dtype), randn(8, P, HKV, D, dtype=dtype)
    q, g = randn(T, HQ, D, dtype=dtype), randn(T, HQ, D, dtype=dtype)
    # (Two variants a dtype: each compiles a kernel.)
    for gate, causal in ((g, True), (None, False)):
        args = (q, kc, vc, table, lens, cu, gate)
        first = call(*args, causal=causal, direct=False)
        again = call(*args, causal=causal, direct=True)
        assert first.dtype == dtype and first.shape == (T, HQ, D)
        assert torch.equal(first, again)
        want = numpy_path(args, name, causal=causal)
        assert torch.equal(first.float(), want), (name, causal)
    # Strided queries and an int64 table: copied and cast, same bits.
    wide = randn(T, HQ, 2 * D, dtype=dtype)[..., ::2]
    args = (wide, kc, vc, table.long(), lens, cu, g)
    call(*args, causal=True, direct=False)
    assert torch.equal(call(*args, causal=True, direct=True).float(),
                       numpy_path((wide.contiguous(),) + args[1:], name,
                                  causal=True))
print("PASS the op and its direct path give the numpy entry point's bits")

# 2. A decode step of Qwen3-Next's heads over 300 keys (split across the
#    threads by kv-splits=auto), and a step with no queries.
kc, vc = randn(20, P, 2, 256), randn(20, P, 2, 256)
q1, g1 = randn(1, 16, 256), randn(1, 16, 256)
step = (q1, kc, vc, torch.tensor([rng.permutation(20)[:19]], dtype=torch.int32),
        torch.tensor([300], dtype=torch.int32),
        torch.tensor([0, 1], dtype=torch.int32), g1)
call(*step, direct=False)
assert torch.equal(call(*step, direct=True), numpy_path(step, "f32"))
empty = (q1[:0], kc, vc, step[3], step[4],
         torch.tensor([0, 0], dtype=torch.int32), g1[:0])
assert call(*empty, direct=False).shape == (0, 16, 256)
assert call(*empty, direct=True).shape == (0, 16, 256)
print("PASS decode and an empty step")


# 3. The runtime contract on the direct path: after a good call, the same
#    signature with broken table values is refused by name.
def refused(args, words, **kw):
    taken.clear()
    try:
        gat.paged_attention(*args, **kw)
    except ValueError as e:
        assert words in str(e), (words, e)
        return
    raise AssertionError(f"accepted: {words}")


kc, vc = randn(8, P, HKV, D), randn(8, P, HKV, D)
q, g = randn(T, HQ, D), randn(T, HQ, D)
good = (q, kc, vc, table, lens, cu, g)
call(*good, causal=True, direct=True)   # (its signature was seen in 1)
refused((q, kc, vc, table + 8, lens, cu, g), "page ids outside [0, NB = 8)",
        causal=True)
assert taken == []   # (raised inside the direct path, before its spy)
refused((q, kc, vc, table, lens, torch.tensor([0, 5, 4, 26],
                                              dtype=torch.int32), g),
        "cu_seqlens_q must rise", causal=True)
refused((q, kc, vc, table, torch.tensor([37, 1, 49], dtype=torch.int32), cu,
         g), "seq_lens must be in [0, MB * P = 48]", causal=True)
refused((q, kc, vc, table, torch.tensor([37, 0, 20], dtype=torch.int32), cu,
         g), "more queries than keys", causal=True)
long_table = table.long()
call(q, kc, vc, long_table, lens, cu, g, causal=True, direct=True)  # (seen in 1)
refused((q, kc, vc, long_table + 2 ** 32, lens, cu, g),
        "block_table must fit in int32", causal=True)
for bad in (table.float(), table.bool()):
    refused((q, kc, vc, bad, lens, cu, g), "block_table must be a 2-D "
            "integer array", causal=True)
print("PASS the tables are checked on every call")


# 4. What would see the op gets it: a dispatch mode, grad mode with an
#    input that requires grad, options of other types than the schema's;
#    torch.compile traces the op.
ref = call(*good, causal=True, direct=True)
with Recorder() as rec:
    assert torch.equal(call(*good, causal=True, direct=False), ref)
assert "gated_attention.paged_attention.default" in rec.ops, rec.ops
qg = q.clone().requires_grad_()
assert torch.equal(call(qg, *good[1:], causal=True, direct=False), ref)
assert torch.equal(call(*good, causal=1, direct=False), ref)
assert torch.equal(call(*good, causal=True, num_splits=1, direct=False),
                   call(*good, causal=True, num_splits=1, direct=True))
backend, graphs = graph_recorder()


@torch.compile(backend=backend, fullgraph=True)
def compiled(*args):
    return gat.paged_attention(*args, causal=True)


assert torch.equal(compiled(*good), ref)
assert len(graphs) == 1 and any("gated_attention.paged_attention" in t
                                for t in graphs[0]), graphs
print("PASS modes, autograd, converted options and torch.compile see the op")
print("torch paged direct: ok")
