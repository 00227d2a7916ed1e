# RUN: %PYTHON %s
# setmaxnreg draws on the CTA's own register pool (what it was launched
# with: 384 threads x 168 registers), not on the whole 64K file. The D 256
# dK/dV kernel once gave its producer 32 registers beside two 240-register
# consumers, 128 x (32 + 2 x 240) = 65536 > 64512: one consumer's
# setmaxnreg.inc waited forever and the backward hung on an H200, while the
# emulator, which checked the 64K file, passed it. The kernel as built must
# fit the pool and run; the same kernel with that split must deadlock in
# the emulator, naming setmaxnreg.
import re

from gated_attention import config
from gated_attention.testing import emulate_backward, emulate_wgmma

CFG = config.parse_cases(
    "dtype=bf16,d=256,dv=256,hq=4,hkv=2,sq=40,skv=70,causal=1")[0]
OPTIONS = "chip=sm_90a kernel=wgmma"


def setmaxnreg_ops(op):
    if op.name == "nvvm.setmaxregister":
        yield op
    for region in op.regions:   # (a region: its one block)
        for inner in region.ops:
            yield from setmaxnreg_ops(inner)


def run(split=None):
    """Runs the backward, optionally with the dK/dV kernel's setmaxnreg
    counts replaced ({"decrease": n, "increase": m})."""
    compiled = emulate_backward.compile_backward(CFG, options=OPTIONS)
    kernel, _ = compiled["backward-kv"]
    counts = {}
    for op in setmaxnreg_ops(kernel):
        action = "increase" if "increase" in op.attrs else "decrease"
        counts[action] = int(re.search(r"regCount = (\d+)", op.attrs)[1])
        if split:
            op.attrs = re.sub(r"regCount = \d+",
                              f"regCount = {split[action]}", op.attrs)
    assert set(counts) == {"increase", "decrease"}, counts
    emulate_backward.run_case(CFG, 1, compiled=compiled)
    return counts


counts = run()
# Three warpgroups of 168 registers: the split as built fits.
assert 128 * (counts["decrease"] + 2 * counts["increase"]) <= 384 * 168, counts
try:
    run({"decrease": 32, "increase": 240})
except emulate_wgmma.MbarrierHang as e:
    assert "setmaxnreg.inc 240" in str(e), e
    assert "pool 64512" in str(e), e
else:
    raise AssertionError("a setmaxnreg split beyond the CTA's pool ran")
print("ok", counts)
