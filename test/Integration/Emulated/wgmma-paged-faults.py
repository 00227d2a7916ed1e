# RUN: %PYTHON %s
# The emulator's model of the paged sm_90a kernel's row copies must be able
# to fail: each fault injected here into the kernel is one its producer (or
# its consumers' proxy fence) could have, and the emulator must report it (a result outside the bound,
# a hang, or an error naming the copies), under an interleaving of the
# warpgroups and of the copies' landing that a GPU could run.
import dataclasses
import re

import numpy as np

from gated_attention import launcher, paged, ptx, runner
from gated_attention.dtypes import from_bits
from gated_attention.testing import emulate, emulate_wgmma, paged_cases

# Decode over 70, 3, 128 and 64 keys in 64-token pages, 4 query heads per
# K/V head packed: 32-key blocks give a CTA up to four blocks (both
# stages, two phases of each barrier), each copied in two passes.
CASE = dataclasses.replace(paged_cases.MATRIX[2], dtype="bf16")
OPTIONS = "chip=sm_90a kernel=wgmma key-block=32"
ARRAYS = paged_cases.build(CASE, np.random.default_rng(5))


def generic():
    return runner.compile_module(
        paged.paged_ir(CASE.dense_config(), CASE.page),
        [f"--convert-gated-attention-to-nvgpu={OPTIONS}", "--canonicalize",
         "--cse", "--mlir-print-op-generic"])


def run(text, schedule=7):
    descs = ptx.launch_descriptions(text)
    kernels = emulate.Emulator(schedule).kernels(
        {d["layout"]: (emulate.find_kernel(text, name), d)
         for name, d in descs.items()})
    inputs, sizes = emulate.paged_inputs(ARRAYS, CASE.dtype)
    out = launcher.run(kernels, inputs, **sizes)
    result = from_bits(out, CASE.dtype).astype(np.float64).reshape(
        len(ARRAYS["q"]), CASE.hq, CASE.dv)
    return paged_cases.check(CASE, ARRAYS, result)


text = generic()
assert "_sm90a" in text
for schedule in (None, 7, 8):
    run(text, schedule)


def fails(faulty, what):
    """The kernel with a fault: outside the bound, a hang, or an error."""
    assert faulty != text, what
    try:
        run(faulty)
    except (AssertionError, emulate_wgmma.MbarrierHang) as e:
        print(f"{what}: {str(e)[:160]}")
        return str(e)
    raise AssertionError(f"{what} passed")


# The full barriers count one arrival instead of the producer's 128 threads:
# a stage is read once the first thread's copies have landed.
INIT = re.compile(r'^( *)"nvvm\.mbarrier\.init"\((%\w+), (%\w+)\)', re.M)
counts = {}
for m in INIT.finditer(text):
    value = re.search(rf'^ *{m.group(3)} = "arith\.constant"\(\) '
                      r'<\{value = (\d+) : i32\}>', text, re.M).group(1)
    counts.setdefault(int(value), m.group(3))
assert set(counts) == {128, 8}, counts
first = INIT.search(text)
faulty = text.replace(first.group(0), first.group(1) +
                      '%fault_one = "arith.constant"() <{value = 1 : i32}> : '
                      '() -> i32\n' + first.group(0), 1)
faulty = faulty.replace(f", {counts[128]}) : (!llvm.ptr<3>, i32)",
                        ", %fault_one) : (!llvm.ptr<3>, i32)")
fails(faulty, "full barriers of one arrival")

# Chunks written without the 128-byte swizzle that wgmma reads.
COPY = re.compile(r'^ *(%\w+) = "arith\.xori"\((%\w+), (%\w+)\) : '
                  r'\(index, index\) -> index\n(?=(?:.*\n){0,12}? *"nvvm\.cp'
                  r'\.async\.shared\.global")', re.M)
swizzles = COPY.findall(text)
assert len(swizzles) == 3, swizzles   # Q, K and V
faulty = text
for result, column, phase in swizzles:
    faulty = faulty.replace(f'{result} = "arith.xori"({column}, {phase})',
                            f'{result} = "arith.ori"({column}, {phase})')
fails(faulty, "copies without the swizzle")

# No thread arrives once its copies landed: the consumers wait forever, or
# the copies are never tracked.
ARRIVE = re.compile(r'^ *"nvvm\.cp\.async\.mbarrier\.arrive"\(.*\n', re.M)
assert len(ARRIVE.findall(text)) == 3
fails(ARRIVE.sub("", text), "copies without arrivals")

# The copies of a tile issued after its arrival: the stage reads as what it
# held before (or the copies ride on the next tile's arrival).
LOOP_ARRIVE = re.compile(
    r'^( *"scf\.for"\(.*\n(?:(?! *"scf\.for").*\n)*? *\}\) : '
    r'\(index, index, index\) -> \(\)\n)'
    r'( *"nvvm\.cp\.async\.mbarrier\.arrive"\(.*\n)', re.M)
assert len(LOOP_ARRIVE.findall(text)) == 3
fails(LOOP_ARRIVE.sub(r"\2\1", text), "arrivals before the copies")
# The consumers' proxy fence left out: wgmma (the async proxy) reads what
# cp.async wrote (the generic proxy) unordered.
FENCE = re.compile(r'^ *"nvvm\.fence\.proxy"\(.*\n', re.M)
assert FENCE.search(text)
unfenced = fails(FENCE.sub("", text), "wgmma reads without a proxy fence")
assert "fence.proxy.async" in unfenced, unfenced
print("ok")
