"""gated_attention.paged_attention on numpy arrays: packed variable-length
queries over a paged KV cache (the serving form of ``attention``).

    q            [T, Hq, D]         the query tokens of all sequences
    key_cache    [NB, P, Hkv, D]    NB pages of P tokens (P a multiple of 16)
    value_cache  [NB, P, Hkv, Dv]
    block_table  [B, MB] int        page ids of each sequence's keys
    seq_lens     [B] int            keys of each sequence, new ones included
    cu_seqlens_q [B + 1] int        query offsets, from 0 to T
    g            [T, Hg, Dg]        optional gate, Hg in {Hq, 1}, Dg in {Dv, 1}

Sequence b's queries are rows cu_seqlens_q[b] .. cu_seqlens_q[b + 1] of q
(q_b of them); its keys are the first seq_lens[b] tokens of its pages, key
j in slot j % P of page block_table[b, j // P]. Causal is bottom-right per
sequence: query i sees key j iff j <= i + seq_lens[b] - q_b. Slots past a
sequence's length and pages outside its table are never read (garbage or
NaN there does not reach the result); rows no sequence covers are 0.

``check_arguments`` checks the runtime contract the op's verifier cannot
see (page ids in range, lengths within the table, monotone offsets) and
every entry point runs it first.
"""

import dataclasses

import numpy as np

from . import compiler, config as config_mod, dtypes, kernel_cache
from . import cuda, launch, launcher
from .paged_mlir import paged_destination_ir, paged_ir  # noqa: F401 (API)
from . import reference as reference_mod



def _ints(name, x, ndim):
    a = np.asarray(x)
    if a.ndim != ndim or not (a.size == 0 or np.issubdtype(a.dtype,
                                                           np.integer)):
        raise ValueError(f"{name} must be a {ndim}-D integer array, got "
                         f"shape {a.shape} of {a.dtype}")
    if a.size and (a.min() < np.iinfo(np.int32).min or
                   a.max() > np.iinfo(np.int32).max):
        raise ValueError(f"{name} must fit in int32")
    return a.astype(np.int32)


def check_arguments(q, key_cache, value_cache, block_table, seq_lens,
                    cu_seqlens_q, g=None, causal=False, contract=True):
    """The arrays as the op takes them (tables as int32); raises ValueError
    naming the first broken rule of the shape and (with `contract`, the
    default) runtime contract: the tables' values."""
    q = compiler._array("q", q)
    kc = compiler._array("key_cache", key_cache)
    vc = compiler._array("value_cache", value_cache)
    table = _ints("block_table", block_table, 2)
    lens = _ints("seq_lens", seq_lens, 1)
    cu = _ints("cu_seqlens_q", cu_seqlens_q, 1)
    if q.ndim != 3 or kc.ndim != 4 or vc.ndim != 4:
        raise ValueError(f"q must be [T, Hq, D] and the caches [NB, P, Hkv, "
                         f"D(v)], got shapes {q.shape}, {kc.shape}, "
                         f"{vc.shape}")
    t, hq, d = q.shape
    nb, page, hkv, dk = kc.shape
    if vc.shape[:3] != kc.shape[:3]:
        raise ValueError(f"value_cache {vc.shape} must match key_cache "
                         f"{kc.shape} in NB, P and Hkv")
    if dk != d:
        raise ValueError(f"key_cache head dim {dk} must be q's {d}")
    if page <= 0 or page % 16:
        raise ValueError(f"page size P must be a positive multiple of 16, "
                         f"got {page}")
    if hkv == 0 or hq % hkv:
        raise ValueError(f"Hkv = {hkv} must divide Hq = {hq}")
    b = lens.shape[0]
    if table.shape[0] != b or cu.shape[0] != b + 1:
        raise ValueError(f"block_table {table.shape}, seq_lens {lens.shape} "
                         f"and cu_seqlens_q {cu.shape} must be [B, MB], [B] "
                         f"and [B + 1]")
    if g is not None:
        g = compiler._array("g", g)
        if g.ndim != 3 or g.shape[0] != t or g.shape[1] not in (hq, 1) or \
                g.shape[2] not in (vc.shape[3], 1):
            raise ValueError(f"g must be [T, Hq or 1, Dv or 1] = [{t}, "
                             f"{hq} or 1, {vc.shape[3]} or 1], got {g.shape}")
    if contract:
        check_contract(table, lens, cu, t, nb, page, causal)
    return q, kc, vc, table, lens, cu, g


def check_contract(table, lens, cu, t, nb, page, causal=False):
    """The runtime contract of int32 tables of shape-checked arguments (T
    query tokens, NB pages of P tokens): offsets rising from 0 to T,
    lengths within the table, page ids in range where a sequence reads
    them; raises ValueError naming the first broken rule."""
    if cu[0] != 0 or cu[-1] != t or np.any(cu[1:] < cu[:-1]):
        raise ValueError(f"cu_seqlens_q must rise from 0 to T = {t} without "
                         f"decreasing, got {cu.tolist()}")
    capacity = table.shape[1] * page
    if np.any(lens < 0) or np.any(lens > capacity):
        raise ValueError(f"seq_lens must be in [0, MB * P = {capacity}], got "
                         f"{lens.tolist()}")
    pages = (lens.astype(np.int64) + (page - 1)) // page
    # The entries each sequence reads: the first `pages[s]` of its row.
    used = table[np.arange(table.shape[1]) < pages[:, None]]
    if used.size and (used.min() < 0 or used.max() >= nb):
        raise ValueError(f"block_table holds page ids outside [0, NB = {nb}) "
                         f"in the pages the sequences use")
    if causal and np.any(cu[1:] - cu[:-1] > lens):
        raise ValueError("causal: a sequence has more queries than keys "
                         "(its keys include its queries)")


def _gather(cache, table, s, n):
    """The first n tokens of sequence s: [n, H, W]."""
    page = cache.shape[1]
    j = np.arange(n)
    return cache[table[s, j // page], j % page]


def paged_attention_reference(q, key_cache, value_cache, block_table,
                              seq_lens, cu_seqlens_q, g=None, *, causal=False,
                              scale=None, gate="sigmoid", combine="mul"):
    """The float64 reference of ``paged_attention`` (same arguments, no
    rounding): each sequence's dense reference on its gathered keys."""
    q, kc, vc, table, lens, cu, g = check_arguments(
        q, key_cache, value_cache, block_table, seq_lens, cu_seqlens_q, g,
        causal)
    gate, combine = compiler._gate_kind(g, gate, combine)
    out = np.zeros((q.shape[0], q.shape[1], vc.shape[3]))
    if scale is not None:
        scale = float(np.float32(scale))
    for s, n in enumerate(lens.tolist()):
        first, last = int(cu[s]), int(cu[s + 1])
        if last == first:
            continue
        dense = [x.transpose(1, 0, 2)[None] for x in (
            q[first:last], _gather(kc, table, s, n), _gather(vc, table, s, n))]
        gs = None if g is None else g[first:last].transpose(1, 0, 2)[None]
        y = reference_mod.gated_attention_reference(
            *dense, gs, scale=scale, causal=causal, gate=gate,
            combine=combine)
        out[first:last] = y[0].transpose(1, 0, 2)
    return out


_COMPILED = {}


def choose_splits(split_desc, b, t, mb, sm_count=None):
    """The key splits of a paged launch on the GPU (split-KV decode): the
    rule of the split kernel's description (what the MLIR host code does),
    with a target of two CTAs per SM of the device when `sm_count` is
    given. Host-side sizes only: B sequences, T query tokens, tables of MB
    pages; 1 means the direct kernel."""
    gx, gy, _ = launch.grid(split_desc, b, t=t)
    return launch.split_count(split_desc, gx * gy,
                              mb * split_desc["page_size"], sm_count)


def cpu_key_splits(t, b, hq, hkv, longest, threads, query_block=64):
    """The parts the CPU lowering's kv-splits=auto splits each tile's keys
    into (Transforms.h, PagedOnlineSoftmax.cpp) for T query tokens of B
    sequences, the longest of `longest` keys, on `threads` threads: the
    tiles that can hold queries, min(T, ceildiv(T, R') + B) per head group,
    fewer than the threads give min(ceildiv(threads, tiles), longest // 256,
    64) parts, else 1."""
    group = hq // hkv
    stack = next(r for r in range(min(group, 16), 0, -1) if group % r == 0)
    rows = max(1, query_block // stack)
    tiles = min(t, -(-t // rows) + b) * (hq // stack)
    if tiles >= threads:
        return 1
    return max(1, min(-(-threads // max(tiles, 1)), longest // 256, 64))


def check_splits(num_splits):
    """`num_splits` (None: chosen) as an int, or a ValueError."""
    if num_splits is None:
        return None
    if isinstance(num_splits, bool) or not isinstance(
            num_splits, (int, np.integer)) or not 1 <= num_splits <= 1024:
        raise ValueError(f"num_splits must be None or an int in [1, 1024], "
                         f"got {num_splits!r}")
    return int(num_splits)


def check_cpu_splits(num_splits):
    """A checked `num_splits` the CPU lowering takes (kv-splits: at most
    64), or a ValueError."""
    if num_splits is not None and num_splits > 64:
        raise ValueError(f"num_splits on the CPU must be at most 64 "
                         f"(kv-splits), got {num_splits}")


def paged_attention(q, key_cache, value_cache, block_table, seq_lens,
                    cu_seqlens_q, g=None, *, causal=False, scale=None,
                    gate="sigmoid", combine="mul", dtype="f32", device="cpu",
                    num_splits=None):
    """gated_attention.paged_attention on numpy arrays (see the module
    docstring), rounded to `dtype`; the result in `dtype`'s numpy type.
    Compiled once per heads, head dims, page size and variant: the number
    of sequences, tokens, pages and lengths are runtime values. `device`:
    cpu, or cuda (the paged tensor-core kernel: f16 or bf16, head dims
    multiples of 16 up to 256). `num_splits`: the key splits of split-KV
    decode (1: none); None chooses them (on cuda choose_splits, on the CPU
    the pipeline's kv-splits=auto at run time: cpu_key_splits); a count on
    the CPU compiles the op once more with kv-splits=N."""
    config_mod.check_choice("device", device, ("cpu", "cuda"))
    num_splits = check_splits(num_splits)
    config_mod.check_choice("dtype", dtype, ("f32", "f16", "bf16"))
    q, kc, vc, table, lens, cu, g = check_arguments(
        q, key_cache, value_cache, block_table, seq_lens, cu_seqlens_q, g,
        causal)
    out_type = dtypes.numpy_dtype(dtype)
    t, hq = q.shape[:2]
    page, dv = kc.shape[1], vc.shape[3]
    cfg = _config(q, kc, vc, g, causal=causal, scale=scale, gate=gate,
                  combine=combine, dtype=dtype)
    if device == "cuda":
        reason = compiler.tensor_core_unsupported(cfg)
        if reason:
            raise ValueError(f"device='cuda' runs the paged tensor-core "
                             f"kernel: {reason}")
    if t == 0:
        return np.zeros((0, hq, dv), out_type)
    key = (dataclasses.replace(cfg, b=1, sq=1, skv=1), page, device)
    if device == "cuda":
        if key not in _COMPILED:
            backend = cuda.Backend(cuda.Driver())
            _COMPILED[key] = (backend, {
                layout: backend.kernel(ptx, desc)
                for layout, (_, ptx, desc) in cuda.compile_paged_kernel(
                    key[0], page).items()})
        backend, kernels = _COMPILED[key]
        splits = num_splits or choose_splits(
            kernels["paged-split"].desc, len(lens), t, table.shape[1],
            backend.driver.sm_count())
        arrays = {"q": q, "k": kc, "v": vc, "gate": g}
        bits = {n: dtypes.to_bits(np.asarray(x, np.float64), dtype).ravel()
                for n, x in arrays.items() if x is not None}
        bits.update(block_table=table.ravel(), seq_lens=lens,
                    cu_seqlens_q=cu)
        out = launcher.run(kernels, bits, splits, b=len(lens),
                           mb=table.shape[1], t=t)
        return dtypes.from_bits_as(out.reshape(t, hq, dv), dtype)
    check_cpu_splits(num_splits)
    key += (num_splits,)
    if key not in _COMPILED:
        _COMPILED[key] = cpu_library(cfg, page, num_splits)
    floats = [dtypes.kernel_operand(x, dtype)
              for x in [q, kc, vc] + ([] if g is None else [g])]
    args = floats[:3] + [table, lens, cu] + floats[3:]
    out = np.empty((t, hq, dv), dtypes.storage_type(dtype))
    _COMPILED[key].call_into(
        "paged", [np.ascontiguousarray(a) for a in args] + [out])
    return dtypes.kernel_result(out, dtype)


def cpu_library(cfg, page, num_splits=None):
    """The CPU library (kernel_cache.cpu_library) of the paged op of `cfg`
    with pages of `page` tokens: `paged_destination_ir`'s function, which
    computes into a buffer the caller passes (numpy's and torch's entry
    points share it). `num_splits`: the pipeline's kv-splits (None:
    auto)."""
    sizes = dataclasses.replace(cfg, dynamic=("b", "sq", "skv"))
    pipeline = "--gated-attention-to-llvm" + (
        f"=kv-splits={num_splits}" if num_splits else "")
    return kernel_cache.cpu_library(
        paged_destination_ir(cfg, page),
        f"paged {kernel_cache.variant(sizes)},page={page} for the CPU"
        + (f", kv-splits={num_splits}" if num_splits else ""),
        (pipeline,))


def _config(q, kc, vc, g, *, causal, scale, gate, combine, dtype):
    """The dense AttentionConfig whose heads, head dims and variant the
    paged op of these (checked) arrays has; `gate` and `combine` checked
    against `g` as the dense entry points check them."""
    hq, d = q.shape[1:]
    gate, combine = compiler._gate_kind(g, gate, combine)
    return config_mod.AttentionConfig(
        hq=hq, hkv=kc.shape[2], d=d, dv=vc.shape[3], causal=causal,
        gate=gate, combine=combine, scale=scale,
        dtype=dtype,
        gate_heads="per_head" if g is None or g.shape[1] == hq else "shared",
        gate_width="elementwise" if g is None or g.shape[2] == vc.shape[3]
        else "headwise")
