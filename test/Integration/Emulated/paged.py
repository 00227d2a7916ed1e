# RUN: %PYTHON %s
# The paged tensor-core kernel (gated_attention.paged_attention on the GPU)
# on the emulator, over the matrix the CPU lowering is tested on
# (gated_attention.testing.paged_cases: shuffled and shared pages, NaN in
# every slot no sequence reads, garbage table entries, ragged lengths,
# decode, chunked prefill, page sizes 16/64/528, GQA 1-8, every gate), in
# f16 and bf16, with the default tiles and with small ones whose key blocks
# straddle pages (32 keys over 528-token pages) and whose query blocks
# split sequences (16 rows: 16 / G queries of G packed heads each); then
# split-KV: 3 and 7 splits of the keys (some of them empty), the f32
# partials merged and gated by the merge kernel. The emulator fails any
# table read outside its buffer; partials start as NaN, so a row the split
# kernel leaves unwritten fails too. GATED_ATTENTION_TEST_SEED draws other
# cases.
# The sm_90a kernel (chip=sm_90a kernel=wgmma: a producer warpgroup copying
# rows through the block table by cp.async, mbarriers, wgmma) runs the same
# matrix with head dims rounded up to multiples of 64 (its swizzle span),
# plus Qwen3-Next's D = 256 with 528-token pages and D = 192 / Dv = 128: with its default tiles,
# with 48-key blocks (pieces of 16-token pages) and 64-row CTAs under a
# random interleaving of the warpgroups and of the copies' landing, and
# with split-KV (whose split kernel is mma.sync's).
import dataclasses
import os

import numpy as np

from gated_attention.testing import emulate, paged_cases

SEED = int(os.environ.get("GATED_ATTENTION_TEST_SEED", "0"))
rng = np.random.default_rng(SEED)

for i, case in enumerate(paged_cases.MATRIX):
    if case.dtype == "f32":   # the tensor cores take f16 and bf16
        case = dataclasses.replace(case, dtype=("bf16", "f16")[i % 2])
    for options, splits in (("", 1), ("warps=1 key-block=32", 1),
                            ("", 3), ("warps=1 key-block=16", 7)):
        a = paged_cases.build(case, rng)
        out, name = emulate.run_paged(case, a, options=options, splits=splits)
        worst = paged_cases.check(case, a, out)
        print(f"PASS {case.describe()} [{name} {options} splits={splits}] "
              f"err/bound={worst:.3g}", flush=True)

WGMMA = "chip=sm_90a kernel=wgmma"
wide = [dataclasses.replace(case, d=-(-case.d // 64) * 64,
                            dv=-(-case.dv // 64) * 64,
                            dtype=("bf16", "f16")[i % 2])
        for i, case in enumerate(paged_cases.MATRIX)]
wide.append(paged_cases.PagedCase(528, 16, 2, 256, 256, (1, 5), (600, 40),
                                  causal=True, dtype="bf16"))
# D = 192 (DeepSeek's query/key head dim, Dv = 128): rows of 24 chunks, which
# the producer's 128 threads do not divide.
wide.append(paged_cases.PagedCase(16, 8, 2, 192, 128, (3, 1, 20), (40, 17, 70),
                                  causal=True, dtype="bf16"))
for case in wide:
    for options, splits, schedule in ((WGMMA, 1, None),
                                      (WGMMA + " warps=4 key-block=48", 1,
                                       SEED + 1),
                                      (WGMMA, 3, None)):
        a = paged_cases.build(case, rng)
        out, name = emulate.run_paged(case, a, options=options, splits=splits,
                                      schedule=schedule)
        if splits == 1:
            assert name.endswith("_sm90a"), name
        worst = paged_cases.check(case, a, out, kernel=name)
        print(f"PASS {case.describe()} [{name} {options} splits={splits} "
              f"schedule={schedule}] err/bound={worst:.3g}", flush=True)
# D = 192 on the mma.sync kernel too: its default tiles make whole copies.
case = wide[-1]
a = paged_cases.build(case, rng)
out, name = emulate.run_paged(case, a)
worst = paged_cases.check(case, a, out)
print(f"PASS {case.describe()} [{name}] err/bound={worst:.3g}", flush=True)
print("paged kernel: ok")
