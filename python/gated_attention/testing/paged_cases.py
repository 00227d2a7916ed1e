"""The paged-attention test matrix, shared by every backend's test: the CPU
lowering (test/python/paged.py), the tensor-core kernel on the emulator
(test/Integration/Emulated/paged.py) and on a GPU (the device check).

A case is a cache holding each sequence's keys in shuffled pages (a page
shared by two sequences: a common prefix), NaN in every slot no sequence
reads and garbage in unused table entries, packed queries and gate; `check`
compares a backend's result with the float64 reference sequence by
sequence, within the dense error model's bound (gated_attention.accuracy),
and fails on any NaN (an unused slot reached the result).
"""

import dataclasses
import os

import numpy as np

from .. import accuracy, compiler, config, dtypes, paged
from ..dtypes import round_to


@dataclasses.dataclass(frozen=True)
class PagedCase:
    """One case: page size, heads and head dims, queries and keys of each
    sequence, and the op's variant."""
    page: int
    hq: int
    hkv: int
    d: int
    dv: int
    queries: tuple
    keys: tuple
    causal: bool
    gate: str = "sigmoid"
    combine: str = "mul"
    gate_heads: str = "per_head"
    gate_width: str = "elementwise"
    dtype: str = "f32"
    gated: bool = True
    spare_pages: int = 3
    share_prefix: bool = True

    def describe(self):
        return (f"P={self.page} Hq={self.hq} Hkv={self.hkv} D={self.d} "
                f"Dv={self.dv} q={list(self.queries)} k={list(self.keys)} "
                f"causal={int(self.causal)} "
                f"{self.gate if self.gated else 'nogate'}/{self.combine} "
                f"{self.gate_heads}/{self.gate_width} {self.dtype}")

    def dense_config(self, b=1, sq=1, skv=1):
        """The AttentionConfig of one sequence of this case."""
        return config.AttentionConfig(
            b=b, hq=self.hq, hkv=self.hkv, sq=sq, skv=skv, d=self.d,
            dv=self.dv, causal=self.causal,
            gate=self.gate if self.gated else "none", combine=self.combine,
            gate_heads=self.gate_heads, gate_width=self.gate_width,
            dtype=self.dtype)

    def kwargs(self):
        """The op's keyword arguments (causal, gate, combine)."""
        return dict(causal=self.causal, gate=self.gate, combine=self.combine)


# Prefill, decode (1 and 1 + 3 queries), chunked prefill (more keys than
# queries), GQA 1/2/4/8, page sizes 16, 64 and 528, a sequence without
# queries and one without keys, every gate, combine and gate layout.
MATRIX = (
    PagedCase(16, 4, 4, 32, 32, (5, 7, 0), (5, 30, 17), causal=False),
    PagedCase(16, 8, 4, 32, 32, (5, 1, 4), (5, 40, 33), causal=True),
    PagedCase(64, 8, 2, 64, 64, (1, 1, 1, 1), (70, 3, 128, 64), causal=True,
              gate="silu", combine="add"),
    PagedCase(64, 8, 1, 64, 32, (4, 4), (100, 9), causal=True,
              gate="ns_sigmoid", gate_width="headwise"),
    PagedCase(16, 16, 2, 32, 32, (3, 2), (50, 2), causal=True,
              gate_heads="shared"),
    PagedCase(528, 4, 2, 32, 32, (2, 6), (600, 6), causal=True,
              spare_pages=1),
    PagedCase(16, 4, 2, 32, 32, (3, 2), (0, 9), causal=False),
    PagedCase(16, 4, 2, 32, 32, (4, 3), (20, 7), causal=True, gated=False),
    PagedCase(16, 4, 2, 64, 64, (5, 1), (21, 60), causal=True, dtype="bf16"),
    PagedCase(16, 4, 2, 64, 64, (2, 3), (18, 3), causal=False, dtype="f16",
              combine="add"),
    # Query blocks that split sequences (prefill beside chunked prefill),
    # D = 128 with 1 + 3 queries.
    PagedCase(16, 4, 2, 64, 64, (40, 3, 20), (40, 50, 37), causal=True,
              dtype="bf16"),
    PagedCase(64, 8, 1, 128, 128, (1, 4), (200, 130), causal=True,
              dtype="f16"),
)


def build(case, rng):
    """The arrays of `case`: dict of q, key_cache, value_cache, block_table,
    seq_lens, cu_seqlens_q, g (None without a gate), rounded to its dtype."""
    b = len(case.keys)
    page = case.page
    pages_of = [(n + page - 1) // page for n in case.keys]
    mb = max(pages_of + [1])
    nb = sum(pages_of) + case.spare_pages
    ids = rng.permutation(nb)
    table = np.full((b, mb), nb + 7, np.int64)   # unused entries: garbage
    at = 0
    for s, n in enumerate(pages_of):
        table[s, :n] = ids[at:at + n]
        at += n
    # Sequence 1 shares sequence 0's first page (a common prefix: what
    # sequence 1 writes there below is both sequences' first tokens).
    if case.share_prefix and b > 1 and pages_of[0] and pages_of[1] > 1:
        table[1, 0] = table[0, 0]
    kc = np.full((nb, page, case.hkv, case.d), np.nan)
    vc = np.full((nb, page, case.hkv, case.dv), np.nan)
    for s, n in enumerate(case.keys):
        j = np.arange(n)
        kc[table[s, j // page], j % page] = rng.standard_normal(
            (n, case.hkv, case.d))
        vc[table[s, j // page], j % page] = rng.standard_normal(
            (n, case.hkv, case.dv))
    cu = np.concatenate([[0], np.cumsum(case.queries)]).astype(np.int64)
    t = int(cu[-1])
    q = rng.standard_normal((t, case.hq, case.d))
    hg = case.hq if case.gate_heads == "per_head" else 1
    dg = case.dv if case.gate_width == "elementwise" else 1
    g = rng.standard_normal((t, hg, dg)) if case.gated else None
    # Representable in the element type, as the op rounds them.
    q, kc, vc = (round_to(x, case.dtype) for x in (q, kc, vc))
    g = None if g is None else round_to(g, case.dtype)
    return dict(q=q, key_cache=kc, value_cache=vc, block_table=table,
                seq_lens=np.array(case.keys, np.int64), cu_seqlens_q=cu, g=g)


def run_cpu(case, arrays, pipeline):
    """The paged op of `case` compiled by `pipeline` (a gated-attention-opt
    option, e.g. --gated-attention-to-llvm=key-block=48) and run on the CPU
    on `arrays` (build's); the result [T, Hq, Dv] in the case's dtype."""
    a = arrays
    args = [dtypes.kernel_operand(a[name], case.dtype)
            for name in ("q", "key_cache", "value_cache")]
    args += [np.asarray(a[name], np.int32)
             for name in ("block_table", "seq_lens", "cu_seqlens_q")]
    if a["g"] is not None:
        args.append(dtypes.kernel_operand(a["g"], case.dtype))
    cfg = paged._config(a["q"], a["key_cache"], a["value_cache"], a["g"],
                        dtype=case.dtype, scale=None, **case.kwargs())
    lib = compiler.compile_cpu(paged.paged_ir(cfg, case.page), pipeline)
    return dtypes.kernel_result(
        lib.call("paged", args, 3, dtypes.storage_type(case.dtype)),
        case.dtype)


def check(case, arrays, out, kernel=None, splits=1, flush_subnormals=False):
    """Raises AssertionError unless `out` ([T, Hq, Dv]) matches the
    reference within each sequence's bound (that of `kernel`, the name or
    description of the GPU kernel that wrote it, of `splits` merged parts
    of the keys on the CPU, and of bf16 products on the CPU's matrix units
    with `flush_subnormals`: accuracy.error_bound) and holds no NaN;
    returns the worst error / bound."""
    a = arrays
    out = np.asarray(out, np.float64)
    ref = paged.paged_attention_reference(
        a["q"], a["key_cache"], a["value_cache"], a["block_table"],
        a["seq_lens"], a["cu_seqlens_q"], a["g"], **case.kwargs())
    t = ref.shape[0]
    assert out.shape == ref.shape == (t, case.hq, case.dv), (out.shape,
                                                             ref.shape)
    assert not np.isnan(out).any(), \
        f"{case.describe()}: NaN from an unused slot reached the result"
    worst = 0.0
    cu, page, table = a["cu_seqlens_q"], case.page, a["block_table"]
    for s, n in enumerate(case.keys):
        first, last = int(cu[s]), int(cu[s + 1])
        if first == last:
            continue
        j = np.arange(n)

        def dense(x):   # [S, H, W] -> [1, H, S, W]
            return x.transpose(1, 0, 2)[None]
        inputs = {"query": dense(a["q"][first:last]),
                  "key": dense(a["key_cache"][table[s, j // page], j % page]),
                  "value": dense(a["value_cache"][table[s, j // page],
                                                  j % page]),
                  "gate": (dense(a["g"][first:last]) if case.gated
                           else np.zeros((1, 1, last - first, 1)))}
        result = accuracy.compare(case.dense_config(sq=last - first, skv=n),
                                  dense(out[first:last]),
                                  dense(ref[first:last]), inputs,
                                  splits=splits, kernel=kernel,
                                  flush_subnormals=flush_subnormals)
        assert result.ok, (f"{case.describe()}: sequence {s}: "
                           f"{accuracy.describe(result)}")
        worst = max(worst, result.ratio)
    return worst


def random_case(rng, bf16_pairs=False):
    """A case drawn over the op's shape space, and the pipeline options of
    one CPU compilation of it: (case, options, splits), `splits` the key
    parts the accuracy bound allows for. Head dims not multiples of 16,
    pages of 16 to 528 tokens, GQA 1 to 16, 0 to 700 keys a sequence,
    prefill, decode and chunked prefill, every gate, combine and layout,
    key blocks that span pages or stop inside one, query blocks, split-KV
    off, automatic or 3 parts, AVX2 code (target-cpu=x86-64-v3); bf16
    products on AVX512-BF16 when `bf16_pairs` (the host runs them)."""
    def pick(*values):
        return values[int(rng.integers(len(values)))]

    dtype = pick("f32", "f16", "bf16", "bf16")
    hkv = pick(1, 2, 3)
    d = pick(8, 24, 40, 72, 16, 32, 48, 64, 80, 96, 128, 256)
    causal = bool(rng.integers(2))
    keys = tuple(pick(0, 1, 2, 15, 17, 63, 130, 257, 300, 700)
                 for _ in range(int(rng.integers(1, 4))))
    # Causal: a sequence's queries are its last keys (at most as many).
    queries = tuple(int(rng.integers(0, (k if causal else 40) + 1))
                    if rng.random() < 0.5 else min(1, k if causal else 1)
                    for k in keys)
    case = PagedCase(pick(16, 32, 48, 64, 80, 528), hkv * pick(1, 2, 4, 8, 16),
                     hkv, d, pick(d, 8, 24, 16, 32, 64, 96), queries, keys,
                     causal, gate=pick("sigmoid", "silu", "ns_sigmoid"),
                     combine=pick("mul", "add"),
                     gate_heads=pick("per_head", "shared"),
                     gate_width=pick("elementwise", "headwise"), dtype=dtype)
    if rng.random() < 0.15:
        case = dataclasses.replace(case, gated=False, gate="sigmoid",
                                   combine="mul", gate_heads="per_head",
                                   gate_width="elementwise")
    options = {}
    if bf16_pairs and dtype == "bf16" and rng.random() < 0.6:
        options["matrix-units"] = "avx512-bf16"
    key_block = pick(None, 32, 48, 64, 128, 256)
    if key_block:
        options["key-block"] = key_block
    query_block = pick(None, None, 16, 32, 64)
    if query_block:
        options["query-block"] = query_block
    options["kv-splits"] = pick("1", "auto", "3")
    # AVX2 code (256-bit vectors, its own register tiles) on any x86-64 host.
    if "matrix-units" not in options and rng.random() < 0.3:
        options["target-cpu"] = "x86-64-v3"
    splits = {"1": 1, "3": 3}.get(options["kv-splits"])
    if splits is None:
        splits = paged.cpu_key_splits(sum(queries), len(keys), case.hq, hkv,
                                      max(keys), os.cpu_count(),
                                      query_block or 64)
    return case, options, splits
