# RUN: %PYTHON %s
# Self-tests of the launch-description tools: the checker must reject what
# the static checks exist to catch, and the launcher's CUDA backend must pass
# the arguments the description promises (checked against a recording
# stand-in for libcuda, so this runs without a GPU).
import ctypes
import json
import os
import tempfile

import numpy as np

from gated_attention import config, cuda, launch, launcher, paged, ptx

DESC = {"schema": "gated-attention.launch", "version": 4, "kernel": "k",
        "layout": "dense", "page_size": 0, "row_group": 1,
        "instructions": "mma.sync", "module": "k", "element_type": "bf16",
        "Hq": 16, "Hkv": 2, "Hg": 16,
        "D": 128, "Dv": 128, "gate_width": 128, "causal": False,
        "gated": True, "rows_per_block": 64, "key_block": 64,
        "grid": [["Sq", 64], ["Hq", 1], ["B", 1]], "block": [128, 1, 1],
        "dynamic_shared_memory": 81920,
        "abi": {"memref": ["allocated", "aligned", "offset", "size",
                           "stride"], "index": "i64", "tensor_map": "pointer",
                "alignment": 16},
        "arguments": [{"name": n, "kind": "memref"}
                      for n in ("q", "k", "v", "gate", "out")]
        + [{"name": "Sq", "kind": "index"}, {"name": "Skv", "kind": "index"}]}
PARAMS = ",\n".join(f"  .param .u64 k_param_{i}" for i in range(27))
GOOD_PTX = (f".visible .entry k(\n{PARAMS}\n)\n{{ cp.async.cg.shared.global; "
            "ldmatrix.sync.aligned.m8n8.x4.shared.b16; "
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32; }")
GOOD_REPORT = ("0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
               "Used 229 registers, used 1 barriers, 1 bytes smem\n")

# A clean kernel passes.
assert ptx.check_kernel(GOOD_PTX, GOOD_REPORT, "sm_90", DESC) == []
# Spills, missing tensor-core instructions, too much shared memory and a
# parameter list that disagrees with the description are each caught.
bad = ptx.check_kernel(GOOD_PTX, GOOD_REPORT.replace("0 bytes spill stores",
                                                     "8 bytes spill stores"),
                       "sm_90", DESC)
assert bad == ["spills registers"], bad
bad = ptx.check_kernel(GOOD_PTX.replace("mma.sync", "fma"), GOOD_REPORT,
                       "sm_90", DESC)
assert bad == ["no mma.sync.aligned.m16n8k16"], bad
big = dict(DESC, dynamic_shared_memory=200 * 1024)
assert ptx.check_kernel(GOOD_PTX, GOOD_REPORT, "sm_90", big) == []
bad = ptx.check_kernel(GOOD_PTX, GOOD_REPORT, "sm_80", big)
assert len(bad) == 1 and "exceeds sm_80" in bad[0], bad
short = dict(DESC, arguments=DESC["arguments"][:-1])
bad = ptx.check_kernel(GOOD_PTX, GOOD_REPORT, "sm_90", short)
assert bad == ["27 kernel parameters, description says 26"], bad
# The sm_90a kernel (TMA maps for Q, K, V: one parameter each) must use
# wgmma, TMA and mbarrier waits, and ptxas must not have had to repair its
# wgmma pipeline.
MAP = {"kind": "tensor_map", "element_type": "bf16", "box": [64, 64, 1],
       "swizzle": "128B", "oob_fill": "zero"}
HOPPER = dict(DESC, instructions="wgmma", arguments=[
    dict(MAP, name="q", dims=["D", "Sq", "B*Hq"]),
    dict(MAP, name="k", dims=["D", "Skv", "B*Hkv"]),
    dict(MAP, name="v", dims=["Dv", "Skv", "B*Hkv"])] + DESC["arguments"][3:])
HOPPER_PTX = (".visible .entry k(\n" + ",\n".join(
    f"  .param .u64 k_param_{i}" for i in range(15)) + "\n)\n{ "
    "cp.async.bulk.tensor.3d; mbarrier.try_wait.parity.shared.b64; "
    "setmaxnreg.dec.sync.aligned.u32 24; setmaxnreg.inc.sync.aligned.u32 240; "
    "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16; }")
assert ptx.check_kernel(HOPPER_PTX, GOOD_REPORT, "sm_90a", HOPPER) == []
# Without warp specialization's register split.
bad = ptx.check_kernel(HOPPER_PTX.replace("setmaxnreg.inc", "nop"),
                       GOOD_REPORT, "sm_90a", HOPPER)
assert bad == ["no setmaxnreg.inc"], bad
bad = ptx.check_kernel(GOOD_PTX, GOOD_REPORT, "sm_90a", HOPPER)
assert "no wgmma.mma_async" in bad and "no cp.async.bulk.tensor" in bad, bad
advised = GOOD_REPORT + ("ptxas info : (C7519) warpgroup.arrive is injected "
                         "in around line 9\n")
bad = ptx.check_kernel(HOPPER_PTX, advised, "sm_90a", HOPPER)
assert bad == ["ptxas advisory C7519"], bad
# The consumers' register demand: setmaxnreg removed, every thread capped
# at the consumers' count; a kernel without warp specialization has none.
SPECIALIZED = (".visible .entry k()\n.minnctapersm 1\n{\n"
               "  setmaxnreg.dec.sync.aligned.u32 24;\n"
               "  setmaxnreg.inc.sync.aligned.u32 240;\n}\n")
variant = ptx.consumer_variant(SPECIALIZED)
assert ".maxnreg 240" in variant and "setmaxnreg" not in variant, variant
assert ".minnctapersm" not in variant, variant
assert ptx.consumer_variant(GOOD_PTX) is None
with tempfile.TemporaryDirectory() as tmp:
    fake = os.path.join(tmp, "ptxas")
    with open(fake, "w") as f:
        # Spills unless the cap is 240 (as if the consumers needed 240).
        f.write("#!/bin/sh\nfor a; do p=$a; done\n"
                "for a; do case $a in *.ptx) p=$a;; esac; done\n"
                "if grep -q 'maxnreg 240' $p; then n=0; else n=8; fi\n"
                "echo \"    0 bytes stack frame, $n bytes spill stores, "
                "0 bytes spill loads\"\n")
    os.chmod(fake, 0o755)
    assert ptx.check_consumers(fake, "sm_90a", SPECIALIZED) == []
    tight = SPECIALIZED.replace("u32 240", "u32 232")
    assert ptx.check_consumers(fake, "sm_90a", tight) == [
        "consumers spill within their setmaxnreg registers"]
    assert ptx.check_consumers(fake, "sm_90a", GOOD_PTX) == []
# SIMT kernels (no description) are only checked for spills.
assert ptx.check_kernel("", GOOD_REPORT, "sm_90", None) == []

# Descriptions are read back from the module attribute, escapes undone,
# and validated.
def attr(desc):
    return json.dumps(desc, separators=(",", ":")).replace('"', "\\22")


text = (f'module attributes {{gated_attention.kernels = {{a = "{attr(DESC)}", '
        f'b_1 = "{attr(dict(DESC, kernel="b_1"))}"}}, gpu.container_module}} '
        '{\n}')
assert ptx.launch_descriptions(text) == {"a": DESC,
                                         "b_1": dict(DESC, kernel="b_1")}
try:
    ptx.launch_descriptions(text.replace("\\22version\\22:4",
                                         "\\22version\\22:1"))
    raise AssertionError("a description of another version is an error")
except launch.LaunchDescriptionError as e:
    assert "version 1" in str(e), e
assert ptx.launch_descriptions("module {\n}") == {}


# The runner: 5 words per memref (ptr, ptr, 0, size, 1), then Sq and Skv as
# i64; grid (ceildiv(Sq, rows), Hq, B); the description's block and smem.
class FakeLib:
    def __init__(self):
        self.calls, self.next = [], 0x10000

    def cuMemAlloc_v2(self, ptr, nbytes):
        """Hands out addresses 0x10000 apart."""
        self.calls.append(("cuMemAlloc_v2", (ptr, nbytes)))
        ptr._obj.value = self.next   # (a ctypes.byref)
        self.next += 0x10000
        return 0

    def __getattr__(self, name):
        def call(*args):
            self.calls.append((name, args))
            return 0
        return call


class FakeDriver(cuda.Driver):
    def __init__(self):
        self.lib = FakeLib()


driver = FakeDriver()
kernel = cuda.Backend(driver).kernel(GOOD_PTX, DESC)
names = [c[0] for c in driver.lib.calls]
assert names == ["cuModuleLoadData", "cuModuleGetFunction",
                 "cuFuncSetAttribute"], names
assert driver.lib.calls[2][1][1:] == (
    cuda.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 81920)
buffers = {n: (0x1000 * (i + 1), 100 + i)
           for i, n in enumerate(("q", "k", "v", "gate", "out"))}
kernel.launch(buffers, b=3, sq=130, skv=70)
name, args = driver.lib.calls[-1]
assert name == "cuLaunchKernel"
assert args[1:7] == (3, 16, 3, 128, 1, 1), args[1:7]
assert args[7] == 81920
params = args[9]
assert len(params) == 27
words = []
for i, p in enumerate(params):
    kind = ctypes.c_int64 if (i < 25 and i % 5 >= 2) or i >= 25 else ctypes.c_uint64
    words.append(ctypes.cast(p, ctypes.POINTER(kind)).contents.value)
for i, n in enumerate(("q", "k", "v", "gate", "out")):
    ptr, size = buffers[n]
    assert words[5 * i:5 * i + 5] == [ptr, ptr, 0, size, 1], (n, words)
assert words[25:] == [130, 70], words[25:]
# Nothing to launch for an empty grid (CUDA rejects one).
count = len(driver.lib.calls)
kernel.launch(buffers, b=3, sq=0, skv=70)
assert len(driver.lib.calls) == count
# The sm_90a kernel: each TMA map is encoded once per (buffer, dims) with
# cuTensorMapEncodeTiled (bf16, rank 3, dims and byte strides of (width, S,
# B x H), the description's box, element strides 1, 128B swizzle, zero
# fill), copied to device memory, and passed as one pointer parameter.
driver = FakeDriver()
hopper = cuda.Backend(driver).kernel(HOPPER_PTX, HOPPER)
hopper.launch(buffers, b=3, sq=130, skv=70)
encodes = [c[1] for c in driver.lib.calls if c[0] == "cuTensorMapEncodeTiled"]
assert len(encodes) == 3, driver.lib.calls
(address, dtype, rank, global_address, dims, strides, box, elem_strides,
 interleave, swizzle, l2, oob) = encodes[0]
assert address.value % 64 == 0
assert (dtype, rank, global_address.value) == (9, 3, buffers["q"][0])
assert list(dims) == [128, 130, 3 * 16], list(dims)
assert list(strides) == [128 * 2, 130 * 128 * 2], list(strides)
assert list(box) == [64, 64, 1] and list(elem_strides) == [1, 1, 1]
assert (interleave, swizzle, l2, oob) == (0, 3, 0, 0)
assert list(encodes[1][4]) == [128, 70, 3 * 2], list(encodes[1][4])
name, args = driver.lib.calls[-1]
assert name == "cuLaunchKernel" and len(args[9]) == 15, (name, len(args[9]))
hopper.launch(buffers, b=3, sq=130, skv=70)
assert sum(c[0] == "cuTensorMapEncodeTiled" for c in driver.lib.calls) == 3
hopper.launch(buffers, b=3, sq=140, skv=70)
assert sum(c[0] == "cuTensorMapEncodeTiled" for c in driver.lib.calls) == 4
# compile_kernel (what the runner and the device check use) finds the one
# tensor-core kernel of a config, with its description; an f32 config has
# none (it takes the SIMT kernel).
cfg = config.AttentionConfig(hq=4, hkv=2, sq=40, skv=40, d=64, dv=64,
                             causal=True, dtype="bf16")
name, text, desc = cuda.compile_kernel(cfg)
assert desc["kernel"] == name and f".entry {name}(" in text, name
assert (desc["Hq"], desc["Hkv"], desc["D"], desc["causal"]) == (4, 2, 64, True)
try:
    cuda.compile_kernel(config.AttentionConfig(dtype="f32"))
    raise AssertionError("an f32 config has no tensor-core kernel")
except ValueError:
    pass
# The paged kernel: 5 words per memref (q, k, v, gate, out, then the int32
# block_table, seq_lens, cu_seqlens_q), then B and MB; grid (ceildiv(T,
# rows) + B, Hq, 1); nothing is read back from the device.
pcfg = config.AttentionConfig(hq=4, hkv=2, d=64, dv=64, causal=True,
                              dtype="bf16")
compiled = cuda.compile_paged_kernel(pcfg, 16)
assert sorted(compiled) == ["paged", "paged-split", "split-merge"], compiled
name, text, desc = compiled["paged"]
assert (desc["layout"], desc["page_size"]) == ("paged", 16), desc
driver = FakeDriver()
paged_kernel = cuda.Backend(driver).kernel(text, desc)
order = ("q", "k", "v", "gate", "out", "block_table", "seq_lens",
         "cu_seqlens_q")
pbuffers = {n: (0x1000 * (i + 1), 10 + i) for i, n in enumerate(order)}
paged_kernel.launch(pbuffers, b=3, mb=5, t=130)
name, args = driver.lib.calls[-1]
assert name == "cuLaunchKernel"
# 64 rows: 32 queries x the 2 query heads of one K/V head (row_group).
assert desc["row_group"] == 2 and desc["rows_per_block"] == 64, desc
assert args[1:7] == (5 + 3, 2, 1, 128, 1, 1), args[1:7]
params = args[9]
assert len(params) == 42, len(params)
words = []
for i, p in enumerate(params):
    kind = ctypes.c_int64 if (i < 40 and i % 5 >= 2) or i >= 40 else ctypes.c_uint64
    words.append(ctypes.cast(p, ctypes.POINTER(kind)).contents.value)
for i, n in enumerate(order):
    ptr, size = pbuffers[n]
    assert words[5 * i:5 * i + 5] == [ptr, ptr, 0, size, 1], (n, words)
assert words[40:] == [3, 5], words[40:]
assert not any(c[0].startswith("cuMemcpyDtoH") for c in driver.lib.calls)
for bad, words_ in ((dict(pbuffers, k=(0x1002, 10)), "aligned to 16 bytes"),):
    try:
        paged_kernel.launch(bad, b=3, mb=5, t=130)
        raise AssertionError("a misaligned cache was launched")
    except ValueError as e:
        assert words_ in str(e), e
try:
    kernel.launch(pbuffers, b=3, mb=5, t=130)
    raise AssertionError("a dense kernel launched as a paged one")
except ValueError as e:
    assert "k: a dense launch needs Skv, Sq" in str(e), e
# Split-KV: the split kernel takes the f32 partials, then splits and T, on
# grid z = splits; the merge takes gate, out, the partials, T and splits on
# a CTA per (token, head) of Dv / 2 threads.
pbuffers.update(o_partial=(0xa000, 7), lse_partial=(0xb000, 3))
driver = FakeDriver()
split = cuda.Backend(driver).kernel(compiled["paged-split"][1],
                    compiled["paged-split"][2])
split.launch(pbuffers, b=3, mb=5, t=130, splits=6)
args = driver.lib.calls[-1][1]
assert args[1:7] == (5 + 3, 2, 6, 128, 1, 1), args[1:7]
params = args[9]
assert len(params) == 54, len(params)
tail = [ctypes.cast(p, ctypes.POINTER(ctypes.c_int64)).contents.value
        for p in params[40:]]
assert tail[:2] == [3, 5] and tail[2] == tail[3] == 0xa000, tail
assert tail[7] == tail[8] == 0xb000 and tail[12:] == [6, 130], tail
try:
    split.launch(dict(pbuffers, o_partial=(0xa004, 7)), b=3, mb=5,
                       t=130, splits=6)
    raise AssertionError("misaligned partials were launched")
except ValueError as e:
    assert "'o_partial' needs its address aligned to 8 bytes" in str(e), e
merge = cuda.Backend(driver).kernel(compiled["split-merge"][1],
                    compiled["split-merge"][2])
merge.launch(pbuffers, b=3, mb=5, t=130, splits=6)
args = driver.lib.calls[-1][1]
assert args[1:7] == (130, 4, 1, 32, 1, 1), args[1:7]
assert args[7] == 0, args[7]
params = args[9]
words = [ctypes.cast(p, ctypes.POINTER(ctypes.c_int64)).contents.value
         for p in params]
assert len(words) == 22 and words[0] == pbuffers["gate"][0], words
assert words[5] == pbuffers["out"][0] and words[10] == 0xa000, words
assert words[20:] == [130, 6], words[20:]
# The choice of splits: decode of 4 sequences (10 CTAs) over tables of
# 1024 keys splits 4 ways (256 keys each at least); a prefill of 4096
# tokens fills the GPU alone; 132 SMs want 264 CTAs.
split_desc = compiled["paged-split"][2]
assert paged.choose_splits(split_desc, 4, 4, 64, 132) == 4
assert paged.choose_splits(split_desc, 4, 4, 4096, 132) == 27
assert paged.choose_splits(split_desc, 4, 4096, 64, 132) == 1
assert paged.choose_splits(split_desc, 4, 4, 64) == 4
# The dense op's decode step: a static Sq = 1 brings split-KV's kernels
# beside the dense one (a dynamic Sq does not); the dense-split kernel takes the dense
# arguments (Sq, Skv, the strides), then the partials, splits and T = B, on
# grid (splits, Hq / 2, B) (a CTA packs the G = 2 query heads of a K/V
# head); its merge is the paged one's (page_size 0).
decode = cuda.compile_decode_kernels(cfg)
assert sorted(decode) == ["dense", "dense-split", "split-merge"], decode
ddesc = decode["dense-split"][2]
assert (ddesc["layout"], ddesc["page_size"]) == ("dense-split", 0), ddesc
assert decode["split-merge"][2]["page_size"] == 0
assert cuda.compile_kernel(cfg)[2]["layout"] == "dense"
driver = FakeDriver()
dsplit = cuda.Backend(driver).kernel(decode["dense-split"][1], ddesc)
dbuffers = dict(buffers, o_partial=(0xa000, 7), lse_partial=(0xb000, 3))
dsplit.launch(dbuffers, b=3, sq=1, skv=5000, splits=9)
args = driver.lib.calls[-1][1]
assert args[1:7] == (9, 2, 3, ddesc["block"][0], 1, 1), args[1:7]
params = args[9]
words = [ctypes.cast(p, ctypes.POINTER(ctypes.c_int64)).contents.value
         for p in params]
strides = [a for a in ddesc["arguments"] if a["kind"] == "stride"]
assert len(words) == 25 + 2 + len(strides) + 10 + 2, len(words)
assert words[25:27] == [1, 5000], words[25:27]
assert words[-12] == words[-11] == 0xa000, words[-12:]
assert words[-7] == words[-6] == 0xb000 and words[-2:] == [9, 3], words[-12:]
# The splits of a decode step: B x Hq CTAs over Skv keys.
assert launch.split_count(ddesc, 3 * 4, 5000, 132) == 20
assert launch.split_count(ddesc, 3 * 4, 300, 132) == 2
assert launch.split_count(ddesc, 128 * 16, 32768, 132) == 1
# ... where a split's CTAs pack G = 2 heads: B x Hq / 2 of them.
assert launch.decode_split_count(ddesc, 3, 5000, 132) == 20
assert launch.decode_split_count(ddesc, 3, 300, 132) == 2
assert launch.decode_split_count(ddesc, 128, 32768, 132) == 2
assert launch.decode_split_count(ddesc, 132, 32768, 132) == 1
for bad in (0, -1, 2.5, True, "4"):
    try:
        paged.check_splits(bad)
        raise AssertionError(f"num_splits={bad!r} accepted")
    except ValueError as e:
        assert "num_splits must be" in str(e), e
# The CUDA backend under launcher.run (a dense decode step in 2 splits): the
# operands uploaded, the output and the partials allocated, a missing gate
# passed as the output, the split and merge launches, the output downloaded,
# everything freed.
driver = FakeDriver()
gpu = cuda.Backend(driver)
kernels = {layout: gpu.kernel(text, desc)
           for layout, (_, text, desc) in decode.items()}
arrays = {n: np.arange(size, dtype=np.uint16) for n, size in
          (("q", 3 * 4 * 64), ("k", 3 * 2 * 50 * 64), ("v", 3 * 2 * 50 * 64))}
out = launcher.run(kernels, arrays, 2, b=3, sq=1, skv=50)
calls = [c[0] for c in driver.lib.calls[9:]]
assert calls == (["cuMemAlloc_v2", "cuMemcpyHtoD_v2"] * 3
                 + ["cuMemAlloc_v2"] * 3 + ["cuLaunchKernel"] * 2
                 + ["cuCtxSynchronize", "cuMemcpyDtoH_v2"]
                 + ["cuMemFree_v2"] * 6), calls
allocs = [c[1][1] for c in driver.lib.calls if c[0] == "cuMemAlloc_v2"]
assert allocs == [2 * 3 * 4 * 64, 2 * 3 * 2 * 50 * 64, 2 * 3 * 2 * 50 * 64,
                  2 * 3 * 4 * 64, 4 * 2 * 3 * 4 * 64, 4 * 2 * 3 * 4], allocs
launches = [c[1] for c in driver.lib.calls if c[0] == "cuLaunchKernel"]
row_group = ddesc["row_group"]
assert launches[0][1:4] == (2, 4 // row_group, 3), launches[0][1:4]
assert launches[1][1:4] == (3, 4, 1), launches[1][1:4]
# The merge's parameters: gate (the output) and out as five words each,
# the partials, then T and splits.
words = [ctypes.cast(p, ctypes.POINTER(ctypes.c_int64)).contents.value
         for p in launches[1][9]]
assert words[0] == words[5] == 0x40000 and words[3] == 3 * 4 * 64, words
assert words[10] == 0x50000 and words[15] == 0x60000, words
assert words[20:] == [3, 2], words[20:]
assert out.size == 3 * 4 * 64 and out.dtype == np.dtype("<u2")
print("ok")
