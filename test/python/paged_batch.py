# RUN: %PYTHON %s
"""gated_attention.paged_attention on the CPU with a batch of 200,000
sequences, almost all without queries (a decode step over a large batch of
idle sequences): the time is linear in B (each tile finds its sequence by a
binary search; counting the sequences before it made the batch quadratic:
5 s at B = 100,000 with almost no queries), and the sequences with queries,
spread over the batch (first, last, neighbours, and a multi-query one),
agree with the float64 reference within the dense error model. The
structure (no loop over the sequences in a tile) is checked by
test/Dialect/GatedAttention/Transforms/tile-paged.mlir."""

import time

import numpy as np

import gated_attention as ga
from gated_attention import accuracy, paged

rng = np.random.default_rng(11)
B, PAGE, PAGES, HQ, HKV, D = 200_000, 16, 64, 4, 2, 8
lens = rng.integers(1, 2 * PAGE + 1, size=B).astype(np.int32)
table = rng.integers(0, PAGES, size=(B, 2)).astype(np.int32)
queries = np.zeros(B, np.int64)
active = [0, 1, 2, 99_999, 100_000, 150_001, B - 2, B - 1]
queries[active] = 1
queries[100_000] = 3
lens[100_000] = 2 * PAGE
cu = np.concatenate([[0], np.cumsum(queries)]).astype(np.int32)
t = int(cu[-1])
q = rng.standard_normal((t, HQ, D))
kc = rng.standard_normal((PAGES, PAGE, HKV, D))
vc = rng.standard_normal((PAGES, PAGE, HKV, D))
args = (q, kc, vc, table, lens, cu)

# Compile (and warm up) on one sequence: the kernel serves every batch.
paged.paged_attention(q[:1], kc, vc, table[:1], lens[:1],
                      np.array([0, 1], np.int32))
start = time.perf_counter()
out = paged.paged_attention(*args)
seconds = time.perf_counter() - start
# Generous: the quadratic schedule took 175 s on a loaded 2-core machine,
# the linear one 1 s (mostly the argument checks).
assert seconds < 5.0, f"B = {B}: {seconds:.2f} s"
print(f"PASS B = {B}, T = {t}: {seconds:.2f} s")

# The reference on the sequences with queries only (its per-sequence loop
# would dominate the test otherwise).
sub = np.array(active)
sub_cu = np.concatenate([[0], np.cumsum(queries[sub])]).astype(np.int32)
ref = paged.paged_attention_reference(q, kc, vc, table[sub], lens[sub],
                                      sub_cu)
worst = 0.0
for i, s in enumerate(sub):
    first, last, n = int(cu[s]), int(cu[s + 1]), int(lens[s])
    j = np.arange(n)
    keys = kc[table[s, j // PAGE], j % PAGE].transpose(1, 0, 2)[None]
    values = vc[table[s, j // PAGE], j % PAGE].transpose(1, 0, 2)[None]
    cfg = ga.AttentionConfig(b=1, hq=HQ, hkv=HKV, sq=last - first, skv=n,
                             d=D, dv=D, gate="none")
    x = {"query": q[first:last].transpose(1, 0, 2)[None], "key": keys,
         "value": values, "gate": None}
    want = ref[int(sub_cu[i]):int(sub_cu[i + 1])].transpose(1, 0, 2)[None]
    got = out[first:last].transpose(1, 0, 2)[None]
    result = accuracy.compare(cfg, got, want, x, accuracy.CPU_KEY_BLOCK)
    assert result.ok, (int(s), accuracy.describe(result))
    worst = max(worst, result.ratio)
print(f"PASS {len(sub)} sequences with queries among {B}: "
      f"err/bound={worst:.3g}")
