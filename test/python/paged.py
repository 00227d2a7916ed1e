# RUN: %PYTHON %s
"""gated_attention.paged_attention on the CPU (the tiled lowering reading
key blocks from the pages in place; with other tile sizes, whose key
blocks span pages; and the reference pipeline's unpage lowering, one dense
op per sequence on its gathered keys) against the float64 reference, each sequence within the dense error model's bound
(gated_attention.accuracy), over: shuffled block tables with pages shared by
two sequences (a common prefix), ragged lengths, page sizes 16, 64 and 528
(Qwen3-Next's hybrid-cache pages), GQA ratios 1, 2, 4, 8, decode with 1 and
1 + 3 queries, prefill, chunked prefill (queries appended to keys already
cached), a sequence without queries, one without keys, every gate, combine,
gate layout and dtype. Slots past each length and pages in no table hold
NaN: the result must not see them. Bad tables, lengths and offsets are
errors naming the rule. GATED_ATTENTION_TEST_SEED draws other cases. The
matrix (gated_attention.testing.paged_cases) is the one the tensor-core
kernel runs on the emulator and the GPU."""

import os

import numpy as np

from gated_attention import paged
from gated_attention.testing import paged_cases

SEED = int(os.environ.get("GATED_ATTENTION_TEST_SEED", "0"))
rng = np.random.default_rng(SEED)

for case in paged_cases.MATRIX:
    a = paged_cases.build(case, rng)
    out = paged.paged_attention(
        a["q"], a["key_cache"], a["value_cache"], a["block_table"],
        a["seq_lens"], a["cu_seqlens_q"], a["g"], dtype=case.dtype,
        **case.kwargs())
    # kv-splits=auto on this host's threads may split the keys.
    splits = paged.cpu_key_splits(sum(case.queries), len(case.keys), case.hq,
                                  case.hkv, max(case.keys), os.cpu_count())
    worst = paged_cases.check(case, a, out, splits=splits)
    print(f"PASS {case.describe()} err/bound={worst:.3g}")


# Other pipelines over the same matrix: 48-key blocks (pieces of 16 keys
# spanning 16- and 64-token pages, whole slices of 528-token ones), 16-key
# blocks with 8-row tiles (several tiles per sequence, one row per head for
# MQA), and the reference pipeline (the unpage lowering).
PIPELINES = ["--gated-attention-to-llvm=key-block=48 query-block=16",
             "--gated-attention-to-llvm=key-block=16 query-block=8",
             "--gated-attention-to-llvm=reference=1"]
for pipeline in PIPELINES:
    for case in paged_cases.MATRIX:
        a = paged_cases.build(case, rng)
        out = paged_cases.run_cpu(case, a, pipeline)
        worst = paged_cases.check(case, a, out)
        print(f"PASS [{pipeline}] {case.describe()} err/bound={worst:.3g}")

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
