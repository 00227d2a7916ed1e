# RUN: %PYTHON %s
"""Split-KV of gated_attention.paged_attention on the CPU (kv-splits: each
tile's keys in parts whose f32 partials, indexed by query token, a merge
combines before the gate) against the float64 reference, each sequence
within the error model with its merge term (accuracy.softmax_error,
splits): kv-splits 2, 3 and auto (counting 16 threads, so that it splits),
over ragged contexts (a sequence shorter than a part, one without keys, one
without queries), causal rows that see no key of a part, pages of 16 and
528 tokens, GQA 1, 2 and 8, f32 and bf16, decode and several queries per
sequence (prefill chunks). Slots no sequence reads hold NaN. Then the
Python entry point: its default (auto on this host's threads) and
num_splits on the CPU."""

import os

import numpy as np

from gated_attention import paged
from gated_attention.testing import paged_cases
from gated_attention.testing.paged_cases import PagedCase

SEED = int(os.environ.get("GATED_ATTENTION_TEST_SEED", "0"))
rng = np.random.default_rng(SEED)
AUTO_THREADS = 16

CASES = (
    # GQA 8 decode: 700 keys in parts of 256 / 384 (2 / 3 parts), 40 keys
    # (parts 1 and 2 empty under 3 parts), a sequence without keys.
    PagedCase(16, 8, 1, 32, 32, (1, 1, 1), (700, 40, 0), causal=False),
    # 528-token pages (64-key blocks span pages), GQA 2, bf16: a decode
    # step beside a chunk of 4 queries appended to 596 cached keys.
    PagedCase(528, 4, 2, 32, 32, (1, 4), (1300, 600), causal=True,
              dtype="bf16", spare_pages=1),
    # GQA 1, 3 queries over 650 keys, a sequence of 2 keys (shorter than a
    # part), one without queries.
    PagedCase(16, 2, 2, 64, 64, (3, 1, 0), (650, 2, 30), causal=True),
    # A prefill chunk of 32 queries over 276 keys, GQA 2 (one tile): with
    # 3 parts ([0, 128), [128, 256), [256, 276)) rows 0..11 see no key of
    # the last part (causal: row i sees keys j <= i + 244).
    PagedCase(16, 4, 2, 32, 32, (32,), (276,), causal=True, dtype="bf16",
              gate="silu", combine="add"),
    # 528-token pages, GQA 8, decode of two sequences, a shared headwise
    # gate.
    PagedCase(528, 8, 1, 32, 32, (1, 1), (1100, 530), causal=True,
              gate_heads="shared", gate_width="headwise", spare_pages=1),
)


def auto_splits(case, threads):
    """The parts kv-splits=auto takes for `case` on `threads` threads."""
    return paged.cpu_key_splits(sum(case.queries), len(case.keys), case.hq,
                                case.hkv, max(case.keys), threads)


# Each case splits under auto (16 threads) but the 32-query chunk (4 tiles,
# 276 keys: one part of 256 or more).
assert [auto_splits(c, AUTO_THREADS) for c in CASES] == [2, 3, 2, 1, 4]

for splits in ("2", "3", "auto"):
    pipeline = f"--gated-attention-to-llvm=kv-splits={splits}"
    if splits == "auto":
        pipeline += f" threads={AUTO_THREADS}"
    for case in CASES:
        parts = (auto_splits(case, AUTO_THREADS) if splits == "auto"
                 else int(splits))
        a = paged_cases.build(case, rng)
        out = paged_cases.run_cpu(case, a, pipeline)
        worst = paged_cases.check(case, a, out, splits=parts)
        print(f"PASS kv-splits={splits} ({parts} parts) {case.describe()} "
              f"err/bound={worst:.3g}")

# The entry point: kv-splits=auto on this host's threads by default (the
# error model's term for the most parts auto can take), a count through
# num_splits, and more than the CPU's 64 parts refused.
case = CASES[0]
a = paged_cases.build(case, rng)
arrays = [a[n] for n in ("q", "key_cache", "value_cache", "block_table",
                         "seq_lens", "cu_seqlens_q", "g")]
out = paged.paged_attention(*arrays, dtype=case.dtype, **case.kwargs())
paged_cases.check(case, a, out, splits=auto_splits(case, 1 << 20))
out = paged.paged_attention(*arrays, dtype=case.dtype, num_splits=3,
                            **case.kwargs())
paged_cases.check(case, a, out, splits=3)
try:
    paged.paged_attention(*arrays, num_splits=65, **case.kwargs())
    raise AssertionError("num_splits=65 was accepted on the CPU")
except ValueError as e:
    assert "at most 64" in str(e), e
print("paged split-KV: ok")
