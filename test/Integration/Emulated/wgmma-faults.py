# RUN: %PYTHON %s
# The emulator's model of the sm_90a kernel must be able to fail: each
# fault injected here into the kernel (or its tensor maps) is one the
# kernel could have, and the emulator must report it, as a result outside
# the error model's bound or as a hang.
import re

from gated_attention import accuracy, config, launcher, mlir
from gated_attention.testing import emulate, emulate_wgmma
from gated_attention import ptx, runner
from gated_attention.dtypes import from_bits, to_bits

import numpy as np

# Four key blocks of 128 keys: both stages, two phases of each barrier.
CFG = config.AttentionConfig(b=1, hq=2, hkv=1, sq=70, skv=500, d=64, dv=64,
                             causal=False, dtype="bf16")


def generic(cfg=CFG):
    return runner.compile_module(
        mlir.attention_function(cfg, "case"),
        ["--convert-gated-attention-to-nvgpu=chip=sm_90a kernel=wgmma",
         "--canonicalize", "--cse", "--mlir-print-op-generic"])


def run(text, cfg=CFG):
    (name, desc), = ptx.launch_descriptions(text).items()
    kernel = emulate.find_kernel(text, name)
    inputs = cfg.inputs(seed=3)
    bits = {arg: to_bits(inputs[op].astype(np.float32).ravel(), CFG.dtype)
            for op, arg in (("query", "q"), ("key", "k"), ("value", "v"),
                            ("gate", "gate"))}
    out = launcher.run(emulate.Emulator().kernel(kernel, desc), bits,
                       b=cfg.b, sq=cfg.sq, skv=cfg.skv)
    result = from_bits(out, cfg.dtype).astype(np.float64).reshape(
        cfg.shapes()["result"])
    return accuracy.compare(cfg, result, cfg.reference(inputs), inputs,
                            kernel=desc)


text = generic()
assert run(text).ok, "the kernel itself must pass"

# A K-major descriptor with half the stride between 8-row core groups.
good = (1 << 62) | (64 << 32) | (1 << 16)
bad = (1 << 62) | (32 << 32) | (1 << 16)
assert f"value = {good} : i64" in text
result = run(text.replace(f"value = {good} : i64", f"value = {bad} : i64"))
assert not result.ok, "a wrong descriptor stride passed"

# V's descriptor with the wrong distance between its column atoms: Dv = 64
# has one atom, so use the stride: N-major rows 8 apart, not 1024 bytes.
v_good = (1 << 62) | (64 << 32) | ((128 * 128 >> 4) << 16)
v_bad = (1 << 62) | (32 << 32) | ((128 * 128 >> 4) << 16)
assert f"value = {v_good} : i64" in text
result = run(text.replace(f"value = {v_good} : i64", f"value = {v_bad} : i64"))
assert not result.ok, "a wrong V descriptor passed"

# Tensor maps encoded without the 128-byte swizzle that wgmma expects.
swizzled = emulate_wgmma.TensorMap


class Unswizzled(swizzled):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.swizzle = "none"


emulate_wgmma.TensorMap = Unswizzled
result = run(text)
emulate_wgmma.TensorMap = swizzled
assert not result.ok, "tiles written without the swizzle passed"

# The mbarrier waits in program order: the producer's on the empty
# barriers of K and V, then the consumers' on Q's barrier (parity constant
# 0) and on the full barriers of K and V.
WAIT = re.compile(r'^ *"nvvm\.mbarrier\.try_wait\.parity"\((%\w+), (%\w+), .*$',
                  re.M)
waits = list(WAIT.finditer(text))
producer_waits, query_wait, full_waits = waits[:2], waits[2], waits[3:]
zero = query_wait.group(2)


def fails(faulty, what):
    """The kernel with a fault: a result outside the bound, or a hang."""
    assert faulty != text
    try:
        result = run(faulty)
    except emulate_wgmma.MbarrierHang as e:
        return str(e)
    assert not result.ok, f"{what} passed"
    return "wrong result"


# Consumers wait for every K and V tile with phase 0: block 2, stage 0's
# second use, is read before it has landed.
faulty = text
for wait in full_waits:
    bar, parity = wait.groups()
    faulty = faulty.replace(f"({bar}, {parity}, ", f"({bar}, {zero}, ")
fails(faulty, "a wrong full-barrier phase")

# The producer refills a stage without waiting for the consumers to release
# it: it overwrites K/V tiles that are still to be read.
faulty = text
for wait in producer_waits:
    faulty = faulty.replace(wait.group(0) + "\n", "")
fails(faulty, "a producer that does not wait for empty stages")

# The consumers never release a stage: the producer waits forever for the
# stage of block 2, and the consumers for block 2.
hang = fails(re.sub(r'^ *"nvvm\.mbarrier\.arrive"\(.*\n', "", text,
                    flags=re.M), "consumers that never release a stage")
assert "warpgroup 0 waits on parity 0" in hang, hang

# Pingpong without consumer 0's head start: each consumer waits for the
# other's turn forever.
head_start = re.search(r'^ *"nvvm\.barrier\.arrive"\(.*\n', text, re.M)
hang = fails(text.replace(head_start.group(0), "", 1),
             "pingpong without a first turn")
assert "bar.sync 1, 256" in hang and "bar.sync 2, 256" in hang, hang

# Each wgmma wait, followed by the release of the tiles it read.
WAIT_RELEASE = re.compile(
    r'^( *"nvvm\.wgmma\.wait\.group\.sync\.aligned"\(\).*\n)'
    r'( *"scf\.if"\(.*\n(?:.*\n)*? *\}\) : \(i1\) -> \(\)\n)', re.M)
# S_0, then S_j and P V of the masked and unmasked loop bodies, and the
# last P V.
assert len(WAIT_RELEASE.findall(text)) == 6, len(WAIT_RELEASE.findall(text))


def wgmma_error(faulty, what):
    """The kernel with a fault the asynchronous wgmma model must report."""
    assert faulty != text
    try:
        run(faulty)
    except AssertionError as e:
        assert "wgmma" in str(e), e
        return str(e)
    raise AssertionError(f"{what} passed")


# The softmax of block j does not wait for S_j (wait_group 2 instead of 1,
# so P V of block j - 1 is not the only group in flight).
early = wgmma_error(text.replace("group = 1 : i64", "group = 2 : i64"),
                    "a softmax that does not wait for S")
assert "reads wgmma accumulators" in early, early

# Every release before the wait it follows: the producer refills a stage
# while wgmmas still read it.
race = wgmma_error(WAIT_RELEASE.sub(r"\2\1", text), "a release before the wait")
assert "changed before the wgmma.wait_group" in race, race

# The epilogue's staging at Dv = 256 (FlashKernelConfig::stagesOutput): the
# gate rows in by one bulk copy a warp on its mbarrier, ldmatrix; the
# output by stmatrix into the same rows, one bulk copy out. Sq = 40: the
# second warp's rows end inside it, the others have none.
WIDE = config.AttentionConfig(b=1, hq=2, hkv=1, sq=40, skv=40, d=256,
                              dv=256, causal=True, dtype="bf16")
wide = generic(WIDE)
assert run(wide, WIDE).ok, "the staged kernel itself must pass"


def staging_fault(faulty, what, message=None):
    """The staged kernel with a fault: an error naming `message`, or (None)
    a result outside the bound."""
    assert faulty != wide
    try:
        result = run(faulty, WIDE)
    except AssertionError as e:
        assert message and message in str(e), e
        return
    assert message is None and not result.ok, f"{what} passed"


# Bulk copies (async proxy) read the stmatrix rows (generic proxy) without
# the fence between them.
FENCE = re.compile(r'^ *"nvvm\.fence\.proxy"\(\).*\n', re.M)
assert len(FENCE.findall(wide)) == 1
staging_fault(FENCE.sub("", wide), "bulk copies without a proxy fence",
              "after the warpgroup's last fence.proxy.async")
# The CTA exits before its bulk copies have read the rows.
staging_fault(re.sub(r'^ *"nvvm\.cp\.async\.bulk\.wait_group".*\n', "",
                     wide, flags=re.M),
              "bulk copies never waited for", "no cp.async.bulk.wait_group")
# stmatrix's blocks in the wrong order (row halves swapped): the rows
# land in each other's place.
STMATRIX = re.compile(r'"nvvm\.stmatrix"\((%\w+), (%\w+), (%\w+), ')
assert len(STMATRIX.findall(wide)) == 16
staging_fault(STMATRIX.sub(r'"nvvm.stmatrix"(\1, \3, \2, ', wide),
              "stmatrix blocks swapped")
# The gate rows waited for with the wrong parity: on the emulator the
# arrival has completed phase 0 by then, and the wait for phase 1 hangs (on
# a GPU it may as well return before the rows land).
last = list(WAIT.finditer(wide))[-1]
one = re.search(r'^ *(%\w+) = "(?:llvm\.mlir|arith)\.constant"\(\) '
                r'<\{value = 1 : i32\}', wide, re.M)
assert one, "no i32 constant 1"
staging_fault(wide[:last.start(2)] + one.group(1) + wide[last.end(2):],
              "a wrong gate-barrier parity", "waits on parity 1")
print("ok")
