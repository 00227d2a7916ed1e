# RUN: %PYTHON %s
# The emulator's model of the sm_90a backward kernels' TMA copies (K and V:
# resident in the dK/dV kernel, streamed in the dQ kernel) must be able to
# fail: each fault injected here into a kernel is one it could have, and
# the emulator must report it, as a gradient outside the error model's
# bound (accuracy_backward, as backward-wgmma.test) or as an error.
import re

from gated_attention import accuracy_backward, config, launcher, runner
from gated_attention import ptx as ptx_tools
from gated_attention.testing import emulate, emulate_backward, emulate_wgmma

# Three key blocks of dQ (stage 0 used twice), two dK/dV CTAs, GQA 2.
CFG = config.AttentionConfig(b=1, hq=2, hkv=1, sq=100, skv=150, d=64, dv=64,
                             causal=False, dtype="bf16")
TEXT = runner.compile_module(
    emulate_backward.backward_module(CFG),
    ["--convert-gated-attention-to-nvgpu=chip=sm_90a kernel=wgmma",
     "--canonicalize", "--cse", "--mlir-print-op-generic"])


def run(text):
    """{gradient: within the bound} of the kernels in `text`."""
    compiled = {desc["layout"]: (emulate.find_kernel(text, name), desc)
                for name, desc in ptx_tools.launch_descriptions(text).items()}
    assert set(compiled) == set(launcher.BACKWARD_LAYOUTS), sorted(compiled)
    grads, x, dout, _ = emulate_backward.run_case(CFG, 0, compiled=compiled)
    results = accuracy_backward.compare_backward(CFG, grads, x, dout,
                                                 gpu=True)
    return {n: r.ok for n, r in results.items()}


def kernel(text, layout):
    """The span of `text` of the gpu.module of the `layout` kernel."""
    suffix = {"backward-kv": "_bwd_kv_sm90a", "backward-q": "_bwd_q_sm90a"}
    start = re.search(r'"gpu\.module"\(\) <\{sym_name = "\w+' +
                      suffix[layout] + '"', text).start()
    end = text.find('"gpu.module"()', start + 1)
    return start, len(text) if end < 0 else end


def in_kernel(layout, edit):
    """TEXT with `edit` applied to the `layout` kernel's text only."""
    start, end = kernel(TEXT, layout)
    changed = edit(TEXT[start:end])
    assert changed != TEXT[start:end], f"nothing to change in {layout}"
    return TEXT[:start] + changed + TEXT[end:]


assert all(run(TEXT).values()), "the kernels themselves must pass"

TMA = re.compile(r'^( *)("nvvm\.cp\.async\.bulk\.tensor\.shared\.cluster\.'
                 r'global"\(%\w+, %\w+, %\w+, )(%\w+)', re.M)


def off_by_one_row(text):
    """Every TMA box one row further: its row coordinate + 1."""
    count = iter(range(1000))

    def shift(m):
        n = next(count)
        indent = m.group(1)
        return (f'{indent}%fault_one{n} = "arith.constant"() <{{value = 1 : '
                f'i32}}> : () -> i32\n'
                f'{indent}%fault_row{n} = "arith.addi"({m.group(3)}, '
                f'%fault_one{n}) <{{overflowFlags = #arith.overflow<none>}}>'
                f' : (i32, i32) -> i32\n'
                f'{indent}{m.group(2)}%fault_row{n}')
    return TMA.sub(shift, text)


EXPECT = re.compile(r'"nvvm\.mbarrier\.arrive\.expect_tx"\((%\w+), %\w+\) '
                    r'<\{[^}]*\}> : \(!llvm\.ptr<3>, i32\) -> \(\)')


def dropped_expect_tx(text):
    """The TMA thread arrives without announcing the copies' bytes."""
    return EXPECT.sub(r'"nvvm.mbarrier.arrive"(\1) <{relaxed = false, '
                      r'scope = #nvvm.mem_scope<cta>}> : (!llvm.ptr<3>) -> ()',
                      text)


# K and V one row off: the resident tiles of the dK/dV kernel give wrong dK
# and dV (dQ, from its own kernel, stays right); the streamed blocks of
# the dQ kernel a wrong dQ.
ok = run(in_kernel("backward-kv", off_by_one_row))
assert not ok["key"] and not ok["value"] and ok["query"], ok
ok = run(in_kernel("backward-q", off_by_one_row))
assert not ok["query"] and ok["key"] and ok["value"], ok

# An arrival without expect_tx completes the phase before the copies land
# (on a GPU the consumers may read the tiles first), and the copies' bytes
# count against the next phase, which then never completes: the dK/dV
# kernel exits with its resident barrier's next phase begun, and the dQ
# kernel's consumers wait forever for block 2 (stage 0's second use).
def reported(layout):
    try:
        run(in_kernel(layout, dropped_expect_tx))
    except AssertionError as e:
        return e
    raise AssertionError(f"{layout}: a dropped expect_tx passed")


error = reported("backward-kv")
assert "exits with a phase" in str(error) and "bytes outstanding" in \
    str(error), error
error = reported("backward-q")
assert isinstance(error, emulate_wgmma.MbarrierHang), error
assert "waits on parity 1" in str(error), error
print("ok")
