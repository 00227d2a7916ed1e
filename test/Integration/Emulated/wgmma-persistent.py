# RUN: %PYTHON %s | FileCheck %s
# The persistent sm_90a kernel (convert-gated-attention-to-nvgpu persistent=1):
# each CTA loops over tiles, longest first, its copy pipeline running on
# across them. On the emulator with small grids (two or three CTAs for 6 to 16
# tiles: each CTA computes several, in both parities), against the float64
# reference within the error model; then faults the model must catch: the
# producer not waiting for the consumers to release Q, the pipeline's count
# of blocks restarting at each tile, Q's or the staged gate's barrier waited
# with the first tile's parity at every tile, no phase of Q's barrier after
# the last tile (the consumers wait for a next Q before the loop's test).
# And launch.grid for persistent and one-tile kernels.
import re

from gated_attention import accuracy, config, launch, mlir, ptx, runner
from gated_attention.testing import emulate, emulate_wgmma

OPTIONS = "chip=sm_90a kernel=wgmma persistent=1"


def generic(cfg):
    return runner.compile_module(
        mlir.attention_function(cfg, "case"),
        [f"--convert-gated-attention-to-nvgpu={OPTIONS}", "--canonicalize",
         "--cse", "--mlir-print-op-generic"])


def run(text, cfg, sm_count):
    return emulate.check_text(text, cfg, 5, sm_count)


def case(text):
    return config.parse_cases(text)[0]


# Tiles: ceildiv(Sq, 128) x Hq x B. Causal and not, D 64 / 128 / 256 (the
# staged epilogue, both consumers: Sq 140 fills the second), GQA, B > 1,
# rows that see no key (Sq > Skv, causal), no keys at all.
CASES = [
    ("b=2,hq=4,hkv=2,sq=150,skv=150,d=64,dv=64,causal=1,dtype=bf16", 3),
    ("b=2,hq=4,hkv=2,sq=150,skv=150,d=64,dv=64,causal=0,dtype=f16", 2),
    ("b=1,hq=2,hkv=1,sq=140,skv=200,d=128,dv=128,causal=1,dtype=bf16", 2),
    ("b=2,hq=2,hkv=1,sq=140,skv=140,d=256,dv=256,causal=1,dtype=bf16", 2),
    ("b=2,hq=2,hkv=1,sq=140,skv=100,d=256,dv=256,causal=0,dtype=bf16", 3),
    ("b=1,hq=2,hkv=1,sq=300,skv=45,d=64,dv=64,causal=1,dtype=bf16", 2),
    ("b=2,hq=2,hkv=1,sq=140,skv=0,d=64,dv=64,causal=1,dtype=bf16", 3),
]
for spec, sms in CASES:
    cfg = case(spec)
    result = run(generic(cfg), cfg, sms)
    print(f"{'PASS' if result.ok else 'FAIL'} {spec} sms={sms} "
          f"{accuracy.describe(result)}")
# CHECK-NOT: FAIL
# CHECK-COUNT-7: PASS


def fails(text, cfg, what):
    """The kernel with a fault: a result outside the bound, a hang or an
    error of the model."""
    try:
        result = run(text, cfg, 2)
    except (AssertionError, emulate_wgmma.MbarrierHang) as e:
        return str(e)
    assert not result.ok, f"{what} passed"
    return "wrong result"


CFG = case("b=2,hq=2,hkv=1,sq=140,skv=300,d=64,dv=64,causal=0,dtype=bf16")
text = generic(CFG)
assert run(text, CFG, 2).ok, "the kernel itself must pass"
WAIT = re.compile(r'^ *"nvvm\.mbarrier\.try_wait\.parity"\((%\w+), (%\w+), '
                  r'.*\n', re.M)
waits = list(WAIT.finditer(text))
# The producer's waits: K's stage for the tile's first block, then Q's
# release (the parity flipped from the tile's), then the loop's.
q_empty = waits[1]
# The producer loads the next tile's Q while the consumers still read the
# last one's.
print("Q not released:",
      fails(text.replace(q_empty.group(0), "", 1), CFG, "no Q-empty wait"))
# CHECK: Q not released: {{.+}}

# Each tile's blocks counted from 0 again (the tile loops' yields of the
# block count replaced by 0): stages and phases of the next tile's blocks
# disagree with the barriers'.
YIELD = re.compile(r'"scf\.yield"\((%\w+), (%\w+)\) : \(i32, i32\)')
assert len(YIELD.findall(text)) == 2, YIELD.findall(text)
zero = re.search(r'^ *(%\w+) = "arith\.constant"\(\) <\{value = 0 : i32\}>',
                 text, re.M).group(1)
print("block count restarts:",
      fails(YIELD.sub(rf'"scf.yield"({zero}, \2) : (i32, i32)', text), CFG,
            "a pipeline count that restarts per tile"))
# CHECK: block count restarts: {{.+}}

# The consumers wait for every tile's Q with parity 0. They wait for the
# first tile's before the tile loop (parity 0) and for each next tile's at
# the end of the previous one, on the same barrier.
zero32 = re.search(r'^ *(%\w+) = "arith\.constant"\(\) <\{value = 0 : i32\}>',
                   text, re.M).group(1)
first_query = next(w for w in waits if w.group(2) == zero32)
query_wait = next(w for w in waits if w.group(1) == first_query.group(1)
                  and w.group(2) != zero32)
faulty = text.replace(query_wait.group(0),
                      query_wait.group(0).replace(
                          f", {query_wait.group(2)}, ", f", {zero32}, "), 1)
print("Q parity fixed:", fails(faulty, CFG, "Q waited with parity 0"))
# CHECK: Q parity fixed: {{.+}}

# After its last tile the producer completes one more phase of Q's barrier
# (the consumers' wait for a next tile's Q, before the tile loop's test);
# without that arrival they wait forever.
END = re.compile(r'^ *"nvvm\.mbarrier\.try_wait\.parity"\(%\w+, (%\w+),.*\n'
                 r'(?: *%\w+ = "llvm\.getelementptr".*\n)'
                 r'( *"nvvm\.mbarrier\.arrive"\(%\w+\).*\n)', re.M)
ends = [m for m in END.finditer(text)
        if re.search(rf'^ *{m.group(1)} = "arith\.xori"\(%\w+#1, ', text,
                     re.M)]
assert len(ends) == 1, ends
print("no last Q phase:",
      fails(text.replace(ends[0].group(2), "", 1), CFG, "no last Q arrival"))
# CHECK: no last Q phase: {{.*}}waits on parity

# D 256 with an elementwise gate: each warp's gate rows come by a bulk copy
# on its mbarrier, once a tile; waited with parity 0 at every tile.
WIDE = case("b=2,hq=2,hkv=1,sq=140,skv=140,d=256,dv=256,causal=1,"
            "dtype=bf16")
wide = generic(WIDE)
assert run(wide, WIDE, 2).ok, "the staged kernel itself must pass"
# The gate's wait is the one that takes the tile's parity itself (the end of
# the tile's wait for the next Q takes it flipped).
gate_waits = [w for w in WAIT.finditer(wide) if w.group(2).startswith("%arg")]
assert len(gate_waits) == 1, [w.group(0) for w in gate_waits]
gate_wait = gate_waits[0]
zero32 = re.search(r'^ *(%\w+) = "arith\.constant"\(\) <\{value = 0 : i32\}>',
                   wide, re.M).group(1)
faulty = (wide[:gate_wait.start(2)] + zero32 + wide[gate_wait.end(2):])
assert faulty != wide
print("gate parity fixed:", fails(faulty, WIDE, "gate waited with parity 0"))
# CHECK: gate parity fixed: {{.+}}

# launch.grid: one CTA per tile, or for the persistent kernel on a device of
# N SMs min(tiles, N x ctas_per_sm) along x.
(_, desc), = ptx.launch_descriptions(text).items()
assert desc["persistent"] is True and desc["ctas_per_sm"] == 1, desc
assert "B" in [a["name"] for a in desc["arguments"] if a["kind"] == "index"]
assert launch.grid(desc, 2, 140, 300) == (2, 2, 2)
assert launch.grid(desc, 2, 140, 300, sm_count=3) == (3, 1, 1)
assert launch.grid(desc, 2, 140, 300, sm_count=132) == (8, 1, 1)
assert launch.grid(desc, 2, 0, 300, sm_count=132) == (0, 1, 1)
one_tile = dict(desc)
del one_tile["persistent"], one_tile["ctas_per_sm"]
assert launch.grid(one_tile, 2, 140, 300, sm_count=3) == (2, 2, 2)
bad = dict(desc, ctas_per_sm=0)
try:
    launch.validate(bad)
    raise AssertionError("ctas_per_sm 0 validated")
except launch.LaunchDescriptionError as e:
    assert "ctas_per_sm" in str(e), e
# Without the option the kernel is the one-tile one.
plain = runner.compile_module(
    mlir.attention_function(CFG, "case"),
    ["--convert-gated-attention-to-nvgpu=chip=sm_90a kernel=wgmma"])
(_, plain_desc), = ptx.launch_descriptions(plain).items()
assert "persistent" not in plain_desc, plain_desc
print("grid ok")
# CHECK: grid ok
