# RUN: %PYTHON %s
"""gated_attention.paged_attention on the CPU (the unpage lowering: one
dense op per sequence on its keys gathered through the block table) against
the float64 reference, each sequence within the dense error model's bound
(gated_attention.accuracy), over: shuffled block tables with pages shared by
two sequences (a common prefix), ragged lengths, page sizes 16, 64 and 528
(Qwen3-Next's hybrid-cache pages), GQA ratios 1, 2, 4, 8, decode with 1 and
1 + 3 queries, prefill, chunked prefill (queries appended to keys already
cached), a sequence without queries, one without keys, every gate, combine,
gate layout and dtype. Slots past each length and pages in no table hold
NaN: the result must not see them. Bad tables, lengths and offsets are
errors naming the rule. GATED_ATTENTION_TEST_SEED draws other cases."""

import os

import numpy as np

from gated_attention import accuracy, config, paged
from gated_attention.dtypes import round_to

SEED = int(os.environ.get("GATED_ATTENTION_TEST_SEED", "0"))
rng = np.random.default_rng(SEED)


def case(page, hq, hkv, d, dv, queries, keys, *, causal, gate="sigmoid",
         combine="mul", gate_heads="per_head", gate_width="elementwise",
         dtype="f32", gated=True, spare_pages=3, share_prefix=True):
    """Builds a cache holding `keys[b]` tokens of each sequence (pages
    shuffled, NaN everywhere no sequence reads), runs the op, checks it."""
    b = len(keys)
    pages_of = [(n + page - 1) // page for n in keys]
    mb = max(pages_of + [1])
    nb = sum(pages_of) + spare_pages
    ids = rng.permutation(nb)
    table = np.full((b, mb), nb + 7, np.int64)   # unused entries: garbage
    at = 0
    for s, n in enumerate(pages_of):
        table[s, :n] = ids[at:at + n]
        at += n
    # Sequence 1 shares sequence 0's first page (a common prefix: what
    # sequence 1 writes there below is both sequences' first tokens).
    if share_prefix and b > 1 and pages_of[0] and pages_of[1] > 1:
        table[1, 0] = table[0, 0]
    kc = np.full((nb, page, hkv, d), np.nan)
    vc = np.full((nb, page, hkv, dv), np.nan)
    for s, n in enumerate(keys):
        j = np.arange(n)
        kc[table[s, j // page], j % page] = rng.standard_normal((n, hkv, d))
        vc[table[s, j // page], j % page] = rng.standard_normal((n, hkv, dv))
    cu = np.concatenate([[0], np.cumsum(queries)]).astype(np.int64)
    t = int(cu[-1])
    q = rng.standard_normal((t, hq, d))
    hg = hq if gate_heads == "per_head" else 1
    dg = dv if gate_width == "elementwise" else 1
    g = rng.standard_normal((t, hg, dg)) if gated else None
    # Representable in the element type, as the op rounds them.
    q, kc, vc = (round_to(x, dtype) for x in (q, kc, vc))
    g = None if g is None else round_to(g, dtype)
    kw = dict(causal=causal, gate=gate, combine=combine)
    out = paged.paged_attention(q, kc, vc, table, keys, cu, g, dtype=dtype,
                                **kw).astype(np.float64)
    ref = paged.paged_attention_reference(q, kc, vc, table, keys, cu, g, **kw)
    assert out.shape == ref.shape == (t, hq, dv), (out.shape, ref.shape)
    worst = 0.0
    for s in range(b):
        first, last, n = int(cu[s]), int(cu[s + 1]), int(keys[s])
        if first == last:
            continue
        cfg = config.AttentionConfig(
            b=1, hq=hq, hkv=hkv, sq=last - first, skv=n, d=d, dv=dv,
            causal=causal, gate=gate if gated else "none", combine=combine,
            gate_heads=gate_heads, gate_width=gate_width, dtype=dtype)
        j = np.arange(n)
        dense = {"query": q[first:last].transpose(1, 0, 2)[None],
                 "key": kc[table[s, j // page], j % page]
                 .transpose(1, 0, 2)[None],
                 "value": vc[table[s, j // page], j % page]
                 .transpose(1, 0, 2)[None],
                 "gate": (g[first:last].transpose(1, 0, 2)[None]
                          if gated else np.zeros((1, 1, last - first, 1)))}
        result = accuracy.compare(cfg, out[first:last].transpose(1, 0, 2)[None],
                                  ref[first:last].transpose(1, 0, 2)[None],
                                  dense)
        assert result.ok, (page, hq, hkv, queries, keys, s,
                           accuracy.describe(result))
        worst = max(worst, result.ratio)
    assert not np.isnan(out).any(), "NaN from an unused slot reached the result"
    print(f"PASS P={page} Hq={hq} Hkv={hkv} D={d} Dv={dv} q={queries} "
          f"k={keys} causal={int(causal)} {gate}/{combine} {gate_heads}/"
          f"{gate_width} {dtype} err/bound={worst:.3g}")


# Prefill, decode (1 and 1 + 3 queries), chunked prefill, GQA 1/2/4/8.
case(16, 4, 4, 32, 32, [5, 7, 0], [5, 30, 17], causal=False)
case(16, 8, 4, 32, 32, [5, 1, 4], [5, 40, 33], causal=True)
case(64, 8, 2, 64, 64, [1, 1, 1, 1], [70, 3, 128, 64], causal=True,
     gate="silu", combine="add")
case(64, 8, 1, 64, 32, [4, 4], [100, 9], causal=True, gate="ns_sigmoid",
     gate_width="headwise")
case(16, 16, 2, 32, 32, [3, 2], [50, 2], causal=True, gate_heads="shared")
case(528, 4, 2, 32, 32, [2, 6], [600, 6], causal=True, spare_pages=1)
case(16, 4, 2, 32, 32, [3, 2], [0, 9], causal=False)   # a sequence with no keys
case(16, 4, 2, 32, 32, [4, 3], [20, 7], causal=True, gated=False)
case(16, 4, 2, 64, 64, [5, 1], [21, 60], causal=True, dtype="bf16")
case(16, 4, 2, 64, 64, [2, 3], [18, 3], causal=False, dtype="f16",
     combine="add")

# The runtime contract: errors naming the rule, before anything runs.
q = np.zeros((3, 4, 32))
kc = vc = np.zeros((4, 16, 2, 32))


def rejected(words, **changes):
    args = dict(block_table=[[0, 1], [2, 3]], seq_lens=[20, 5],
                cu_seqlens_q=[0, 2, 3])
    args.update(changes)
    try:
        paged.paged_attention(q, kc, vc, args["block_table"],
                              args["seq_lens"], args["cu_seqlens_q"],
                              causal=True)
    except ValueError as e:
        assert words in str(e), (words, e)
        return
    raise AssertionError(f"accepted {changes}")


rejected("page ids outside [0, NB = 4)", block_table=[[0, 9], [2, 3]])
rejected("seq_lens must be in [0, MB * P = 32]", seq_lens=[40, 5])
rejected("cu_seqlens_q must rise from 0 to T = 3", cu_seqlens_q=[0, 2, 2])
rejected("cu_seqlens_q must rise from 0 to T = 3", cu_seqlens_q=[0, 3, 2])
rejected("more queries than keys", seq_lens=[1, 5])
rejected("[B, MB], [B] and [B + 1]", seq_lens=[20, 5, 3])
rejected("block_table must be a 2-D integer array",
         block_table=[[0.5, 1], [2, 3]])
try:
    paged.paged_attention(q, np.zeros((4, 24, 2, 32)), np.zeros((4, 24, 2, 32)),
                          [[0, 1], [2, 3]], [20, 5], [0, 2, 3])
    raise AssertionError("a page of 24 tokens was accepted")
except ValueError as e:
    assert "multiple of 16" in str(e), e
print("paged attention: ok")
