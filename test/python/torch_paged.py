# REQUIRES: torch
# RUN: %PYTHON %s
"""torch.ops.gated_attention.paged_attention on CPU tensors: the plumbing
(tensors to the kernel and back: f32 and bf16 against the float64
reference at loose fixed tolerances; the kernel's numerics are held to the
error model in test/python/paged.py), GQA, a shared page, NaN in the slots
no sequence reads, the dtype kept, torch.library.opcheck (schema,
fake kernel), bad arguments, CUDA tensors and backward refused by name."""

import warnings

import numpy as np
import torch

import gated_attention.torch as gat
from gated_attention import paged

torch.manual_seed(0)
P, HQ, HKV, D = 16, 8, 2, 64
lens = torch.tensor([37, 1, 20], dtype=torch.int32)
queries = [5, 1, 20]
cu = torch.tensor(np.concatenate([[0], np.cumsum(queries)]), dtype=torch.int32)
table = torch.tensor([[3, 0, 6], [5, 7, 7], [3, 1, 2]], dtype=torch.int32)
kc = torch.full((8, P, HKV, D), float("nan"))
vc = torch.full((8, P, HKV, D), float("nan"))
for s, n in enumerate(lens.tolist()):
    for j in range(n):
        kc[table[s, j // P], j % P] = torch.randn(HKV, D)
        vc[table[s, j // P], j % P] = torch.randn(HKV, D)
t = int(cu[-1])
q, g = torch.randn(t, HQ, D), torch.randn(t, HQ, D)

for dtype, tol in ((torch.float32, 1e-5), (torch.bfloat16, 3e-2)):
    args = [x.to(dtype) for x in (q, kc, vc)] + [table, lens, cu,
                                                 g.to(dtype)]
    out = gat.paged_attention(*args, causal=True, gate="silu")
    assert out.dtype == dtype and out.shape == (t, HQ, D)
    ref = paged.paged_attention_reference(
        *[x.float().numpy() if x.is_floating_point() else x.numpy()
          for x in args], causal=True, gate="silu")
    err = np.abs(out.float().numpy() - ref).max()
    assert np.isfinite(err) and err < tol * (1 + np.abs(ref).max()), \
        (dtype, err)
    print(f"PASS {dtype} max error {err:.3g}")

# Schema, fake kernel, (no) autograd registration: opcheck. NaN-free caches
# (opcheck compares eager runs and fake shapes only).
example = (q, torch.randn(8, P, HKV, D), torch.randn(8, P, HKV, D), table,
           lens, cu, g)
torch.library.opcheck(torch.ops.gated_attention.paged_attention, example,
                      {"causal": True},
                      test_utils=("test_schema", "test_faketensor"))

# Bad arguments: named.
def refused(fn, words, kind=ValueError):
    try:
        fn()
    except kind as e:
        assert words in str(e), (words, e)
        return
    raise AssertionError(f"accepted: {words}")


refused(lambda: gat.paged_attention(q, kc.double(), vc, table, lens, cu),
        "key_cache must be torch.float32")
refused(lambda: gat.paged_attention(q, kc, vc, table + 8, lens, cu),
        "page ids outside [0, NB = 8)")
refused(lambda: gat.paged_attention(
    q, kc, vc, table, lens, torch.tensor([0, 5, 4, 26], dtype=torch.int32)),
    "cu_seqlens_q must rise")
# gate and combine agree with g as in the dense op (eager and fake).
for kwargs, words in (({"gate": "silu"}, "gate='silu' without a gate array"),
                      ({"combine": "add"},
                       "combine='add' without a gate array")):
    refused(lambda: gat.paged_attention(q, kc, vc, table, lens, cu,
                                        **kwargs), words)
    refused(lambda: torch.ops.gated_attention.paged_attention(
        *[x.to("meta") for x in (q, kc, vc, table, lens, cu)], **kwargs),
        words)
refused(lambda: gat.paged_attention(q, kc, vc, table, lens, cu, g,
                                    gate="none"),
        "gate='none' with a gate array")
# Tensors of kinds the kernel does not read, as any argument: named.
names = ("q", "key_cache", "value_cache", "block_table", "seq_lens",
         "cu_seqlens_q", "g")
dense = (q, kc, vc, table, lens, cu, g)
warnings.simplefilter("ignore", UserWarning)   # (beta, deprecated kinds)
kinds = {"sparse_coo": lambda x: x.to_sparse(),
         "sparse_csr": lambda x: x.reshape(-1, x.shape[-1]).to_sparse_csr(),
         "mkldnn": lambda x: (x if x.is_floating_point()
                             else x.to(torch.int8)).to_mkldnn(),
         "quantized": lambda x: torch.quantize_per_tensor(
             x.float(), 0.1, 0, torch.qint8),
         "nested": lambda x: torch.nested.nested_tensor(list(x.float()))}
for n, name in enumerate(names):
    for kind, make in kinds.items():
        args = list(dense)
        args[n] = make(dense[n])
        for op in (gat.paged_attention,
                   torch.ops.gated_attention.paged_attention):
            if kind == "nested" and op is not gat.paged_attention:
                continue   # torch's dispatcher refuses it before the op
            refused(lambda: op(*args), f"{name} is a")
print("PASS gate checks and tensor kinds")
qg = q.clone().requires_grad_()
refused(lambda: gat.paged_attention(qg, kc, vc, table, lens, cu).sum()
        .backward(), "paged_attention has no backward", NotImplementedError)
print("torch paged attention: ok")
