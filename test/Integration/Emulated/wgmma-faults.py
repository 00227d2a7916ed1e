# RUN: %PYTHON %s
# The emulator's model of the sm_90a kernel must be able to fail: each
# fault injected here into the kernel (or its tensor maps) is one the
# kernel could have, and the emulator must report it, as a result outside
# the error model's bound or as a hang.
import re

from gated_attention import accuracy, config, emulate, emulate_wgmma, mlir
from gated_attention import ptx, runner
from gated_attention.dtypes import from_bits, to_bits

import numpy as np

# Four key blocks of 128 keys: both stages, two phases of each barrier.
CFG = config.AttentionConfig(b=1, hq=2, hkv=1, sq=70, skv=500, d=64, dv=64,
                             causal=False, dtype="bf16")


def generic():
    return runner.compile_module(
        mlir.attention_function(CFG, "case"),
        ["--convert-gated-attention-to-nvgpu=chip=sm_90a kernel=wgmma",
         "--canonicalize", "--cse", "--mlir-print-op-generic"])


def run(text):
    (name, desc), = ptx.launch_descriptions(text).items()
    kernel = emulate.find_kernel(text, name)
    inputs = CFG.inputs(seed=3)
    bits = {arg: to_bits(inputs[op].astype(np.float32).ravel(), CFG.dtype)
            for op, arg in (("query", "q"), ("key", "k"), ("value", "v"),
                            ("gate", "gate"))}
    out = emulate.launch(kernel, desc, bits, CFG.b, CFG.sq, CFG.skv)
    result = from_bits(out, CFG.dtype).astype(np.float64).reshape(
        CFG.shapes()["result"])
    return accuracy.compare(CFG, result, CFG.reference(inputs), inputs)


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

# Every key block waited for with phase 0: block 2 (stage 0's second use,
# phase 1) would wait forever.
waits = re.findall(r'"nvvm\.mbarrier\.try_wait\.parity"\((%[\w]+), (%[\w]+), ',
                   text)
query_phase = waits[0][1]          # Q's wait: phase 0
loop_phase = waits[1][1]
faulty = text.replace(f"({waits[1][0]}, {loop_phase}, ",
                      f"({waits[1][0]}, {query_phase}, ")
assert faulty != text
try:
    run(faulty)
    raise AssertionError("a wrong mbarrier phase did not hang")
except emulate_wgmma.MbarrierHang as e:
    assert "parity 0" in str(e), e
print("ok")
