# RUN: %PYTHON %s
# The launcher (gated_attention.launcher): from each kind of kernel's launch
# description (dense mma.sync, dense wgmma with TMA maps, paged, paged-split,
# dense-split, split-merge) it builds the parameter list in the
# description's order, the grid, block and shared memory, and hands them to
# a backend; here a fake one that records what it was asked to launch
# (ptx_tools.py runs the CUDA backend on a recording stand-in for libcuda).
import numpy as np

from gated_attention import config, cuda, launcher


class Recorder:
    """A backend that records its launches; buffers are ints (addresses),
    memory is host arrays by address."""

    def __init__(self):
        self.launches, self.memory, self.freed = [], {}, []

    def load(self, code, desc):
        return ("loaded", code)

    def address(self, buffer):
        return buffer

    def launch(self, handle, planned, stream):
        self.launches.append((handle, planned, stream))

    def upload(self, array, element_type):
        address = 0x1000 * (len(self.memory) + 1)
        self.memory[address] = (np.array(array), element_type)
        return address

    def empty(self, elements, element_type):
        return self.upload(np.zeros(elements, launcher.STORAGE[element_type]),
                           element_type)

    def read(self, buffer, elements, element_type):
        array, stored = self.memory[buffer]
        assert (array.size, stored) == (elements, element_type)
        return array

    def free(self, buffer):
        self.freed.append(buffer)

    def synchronize(self):
        pass


def fails(call, words):
    try:
        call()
    except ValueError as e:
        assert words in str(e), (words, e)
        return
    raise AssertionError(f"no error: {words}")


def names(planned):
    return [a.name for a in planned.arguments]


cfg = config.AttentionConfig(hq=4, hkv=2, d=64, dv=64, causal=True,
                             dtype="bf16")
backend = Recorder()
OPERANDS = ("q", "k", "v", "gate", "out")
buffers = {n: (0x100 * (i + 1), 1000 + i) for i, n in enumerate(OPERANDS)}

# Dense, mma.sync: five memrefs, Sq and Skv, then the (B, H) strides of q,
# k and v together (D = Dv), the gate and out; grid (ceildiv(Sq, rows),
# Hq, B). Strides default to [B, H, S, D]-contiguous; given ones are passed.
_, ptx, desc = cuda.compile_kernel(cfg)
dense = launcher.Kernel(backend, ptx, desc)
assert dense.handle == ("loaded", ptx)
planned = dense.launch(buffers, stream=7, b=3, sq=130, skv=70)
assert backend.launches[-1] == (("loaded", ptx), planned, 7)
assert names(planned) == [a["name"] for a in desc["arguments"]]
assert names(planned)[:7] == list(OPERANDS) + ["Sq", "Skv"], names(planned)
for arg, name in zip(planned.arguments, OPERANDS):
    assert isinstance(arg, launcher.Memref)
    assert (arg.buffer, arg.elements) == buffers[name], arg
values = {a.name: a.value for a in planned.arguments
          if isinstance(a, launcher.Scalar)}
assert values == {"Sq": 130, "Skv": 70, "q.B": 4 * 130 * 64, "q.H": 130 * 64,
                  "k+v.B": 2 * 70 * 64, "k+v.H": 70 * 64,
                  "gate.B": 4 * 130 * 64, "gate.H": 130 * 64,
                  "out.B": 4 * 130 * 64, "out.H": 130 * 64}, values
rows = desc["rows_per_block"]
assert planned.grid == (-(-130 // rows), 4, 3), planned.grid
assert planned.block == tuple(desc["block"])
assert planned.shared_memory == desc["dynamic_shared_memory"]
bshd = {"B": 70 * 2 * 64, "H": 64, "S": 2 * 64}
fails(lambda: dense.launch(buffers, {"k": bshd, "v": bshd}, b=3, sq=130,
                           skv=70),
      "rows 128 elements apart; the kernel was compiled for 64")
kv = {"B": 0, "H": 70 * 64, "S": 64}
planned = dense.plan(buffers, {"k": kv, "v": kv}, b=3, sq=130, skv=70)
assert [a.value for a in planned.arguments if a.name.startswith("k+v")] == \
    [0, 70 * 64]
# Addresses are checked against the rows' alignment; sizes the kernel
# needs must be given; an empty grid launches nothing.
fails(lambda: dense.plan(dict(buffers, k=(0x108, 1)), b=3, sq=130, skv=70),
      "operand 'k' needs its address and row starts aligned to 16 bytes")
fails(lambda: dense.plan(buffers, b=3, sq=130), "a dense launch needs Skv")
count = len(backend.launches)
assert dense.launch(buffers, b=3, sq=0, skv=70).grid[0] == 0
assert len(backend.launches) == count

# Dense, wgmma: Q, K and V are TMA maps over (D, S, B x H), boxes from
# the description; the gate and out memrefs and their strides follow.
_, ptx, desc = cuda.compile_kernel(cfg, chip="sm_90a", kernel="wgmma")
hopper = launcher.Kernel(backend, ptx, desc)
planned = hopper.launch(buffers, b=3, sq=130, skv=70)
maps = [a for a in planned.arguments if isinstance(a, launcher.TensorMap)]
assert [(m.name, m.buffer, m.dims) for m in maps] == [
    ("q", 0x100, (64, 130, 12)), ("k", 0x200, (64, 70, 6)),
    ("v", 0x300, (64, 70, 6))], maps
assert all(m.element_type == "bf16" and m.swizzle == "128B" for m in maps)
assert maps[0].box == (64, desc["rows_per_block"], 1), maps[0].box
assert names(planned) == [a["name"] for a in desc["arguments"]]
assert names(planned)[3:7] == ["gate", "out", "Sq", "Skv"], names(planned)
fails(lambda: hopper.plan(buffers, {"q": {"B": 0, "H": 128, "S": 64}},
                          b=3, sq=130, skv=70),
      "operand 'q' must be [B, H, S, D]-contiguous")

# Paged: q, k, v, gate, out, the int32 tables, then B and MB; grid
# (ceildiv(T, rows) + B, Hq / row_group, 1); no strides.
compiled = cuda.compile_paged_kernel(cfg, 16)
kernels = {layout: launcher.Kernel(backend, ptx, desc)
           for layout, (_, ptx, desc) in compiled.items()}
TABLES = ("block_table", "seq_lens", "cu_seqlens_q")
pbuffers = {n: (0x100 * (i + 1), 10 + i)
            for i, n in enumerate(OPERANDS + TABLES)}
pbuffers.update(o_partial=(0xa000, 7), lse_partial=(0xb000, 3))
planned = kernels["paged"].launch(pbuffers, b=3, mb=5, t=130)
desc = kernels["paged"].desc
assert names(planned) == list(OPERANDS + TABLES) + ["B", "MB"], names(planned)
assert [a.value for a in planned.arguments[-2:]] == [3, 5]
assert planned.grid == (-(-130 // (desc["rows_per_block"] //
                                   desc["row_group"])) + 3,
                        4 // desc["row_group"], 1), planned.grid
fails(lambda: kernels["paged"].plan(pbuffers, {"q": bshd}, b=3, mb=5, t=130),
      "takes packed operands, not strides (q)")
fails(lambda: kernels["paged"].plan(dict(pbuffers, v=(0x108, 1)), b=3, mb=5,
                                    t=130),
      "operand 'v' needs its address aligned to 16 bytes, got 0x108")
fails(lambda: kernels["paged"].plan(pbuffers, b=3, t=130),
      "a paged launch needs MB")

# Sizes are non-negative ints; the kernels compare rows in 32 bits, so a
# launch's rows (packed query heads and a page table's capacity counted)
# stay below 2^30, as the compiler checks static sizes
# (Conversion/GatedAttentionToNVGPU/size-limits.mlir); grids stay within
# CUDA's limits, and a persistent kernel's tiles within its 32-bit count.
fails(lambda: dense.plan(buffers, b=3, sq=-1, skv=70),
      "size Sq must be a non-negative int, got -1")
fails(lambda: dense.plan(buffers, b=3, sq=130.0, skv=70),
      "size Sq must be a non-negative int, got 130.0")
fails(lambda: dense.plan(buffers, b=True, sq=130, skv=70),
      "size B must be a non-negative int, got True")
fails(lambda: dense.plan(buffers, b=3, sq=130, skv=2**30),
      "Skv = 1073741824 rows; the kernels index rows in 32 bits and take "
      "fewer than 2^30")
fails(lambda: dense.plan(buffers, b=3, sq=2**31, skv=70),
      "Sq = 2147483648 rows")
largest = dense.plan(buffers, b=1, sq=np.int64(2**30 - 1), skv=2**30 - 1)
assert largest.grid == (-(-(2**30 - 1) // rows), 4, 1), largest.grid
fails(lambda: dense.plan(buffers, b=65536, sq=130, skv=70),
      "the grid's z is 65536 CTAs, more than CUDA's 65535")
group = desc["row_group"]
assert group > 1, group
fails(lambda: kernels["paged"].plan(pbuffers, b=3, mb=5, t=2**30 // group),
      f"T x row_group = {2**30 // group} x {group} = 1073741824 rows")
kernels["paged"].plan(pbuffers, b=3, mb=5, t=2**30 // group - 1)
fails(lambda: kernels["paged"].plan(pbuffers, b=3, mb=2**26, t=130),
      "MB x P = 67108864 x 16 = 1073741824 rows")
_, ptx, pdesc = cuda.compile_kernel(cfg, chip="sm_90a", kernel="wgmma",
                                    persistent=True)
persistent = launcher.Kernel(backend, ptx, pdesc)
tiles = -(-(2**30 - 1) // pdesc["rows_per_block"]) * 4 * 64
assert tiles > 2**31 - 1, tiles
fails(lambda: persistent.plan(buffers, b=64, sq=2**30 - 1, skv=70,
                              sm_count=132),
      f"{tiles} tiles, more than the persistent kernel numbers")
assert persistent.plan(buffers, b=3, sq=130, skv=70,
                       sm_count=132).grid[1:] == (1, 1)

# Paged split-KV: the split kernel (the partials, splits and T after the
# paged arguments; grid z = splits), then the merge (gate, out, partials,
# T and splits; a CTA per (token, head)).
del backend.launches[:]
launcher.launch_op(kernels, pbuffers, 6, stream=9, b=3, mb=5, t=130)
(_, split, s1), (_, merge, s2) = backend.launches
assert split.desc["layout"] == "paged-split" and s1 == s2 == 9
assert names(split) == list(OPERANDS + TABLES) + [
    "B", "MB", "o_partial", "lse_partial", "splits", "T"], names(split)
assert [a.value for a in split.arguments[-2:]] == [6, 130]
assert split.grid[2] == 6, split.grid
assert merge.desc["layout"] == "split-merge"
assert names(merge) == ["gate", "out", "o_partial", "lse_partial", "T",
                        "splits"], names(merge)
assert [a.value for a in merge.arguments[-2:]] == [130, 6]
assert merge.grid == (130, 4, 1), merge.grid
assert launcher.partials(kernels, 6, b=3, mb=5, t=130) == {
    "o_partial": ("f32", 6 * 130 * 4 * 64), "lse_partial": ("f32", 6 * 130 * 4)}
assert launcher.partials(kernels, 1, b=3, mb=5, t=130) == {}
fails(lambda: kernels["paged-split"].plan(
    dict(pbuffers, o_partial=(0xa004, 7)), b=3, mb=5, t=130, splits=6),
    "'o_partial' needs its address aligned to 8 bytes")
# One split: the direct kernel alone.
del backend.launches[:]
launcher.launch_op(kernels, pbuffers, 1, b=3, mb=5, t=130)
assert [p.desc["layout"] for _, p, _ in backend.launches] == ["paged"]

# Dense split-KV (a decode step, Sq = 1): the dense-split kernel takes the
# dense arguments, then the partials, splits and T = B; grid (splits,
# Hq / row_group, B); the merge as the paged one's, on T = B rows.
compiled = cuda.compile_decode_kernels(cfg)
kernels = {layout: launcher.Kernel(backend, ptx, desc)
           for layout, (_, ptx, desc) in compiled.items()}
dbuffers = dict(buffers, o_partial=(0xa000, 7), lse_partial=(0xb000, 3))
del backend.launches[:]
launcher.launch_op(kernels, dbuffers, 9, {"k": kv, "v": kv}, b=3, sq=1,
                   skv=5000)
(_, split, _), (_, merge, _) = backend.launches
desc = split.desc
assert desc["layout"] == "dense-split"
assert names(split)[:7] == list(OPERANDS) + ["Sq", "Skv"]
assert names(split)[-4:] == ["o_partial", "lse_partial", "splits", "T"]
values = {a.name: a.value for a in split.arguments
          if isinstance(a, launcher.Scalar)}
assert (values["Sq"], values["Skv"], values["splits"], values["T"]) == \
    (1, 5000, 9, 3), values
assert (values["k+v.B"], values["k+v.H"]) == (0, 70 * 64), values
assert split.grid == (9, 4 // desc["row_group"], 3), split.grid
assert [a.value for a in merge.arguments[-2:]] == [3, 9]
assert merge.grid == (3, 4, 1), merge.grid
assert launcher.partials(kernels, 9, b=3, sq=1, skv=5000) == {
    "o_partial": ("f32", 9 * 3 * 4 * 64), "lse_partial": ("f32", 9 * 3 * 4)}

# launcher.run on host arrays: uploads the operands, allocates the output
# (its strides' extent) and the partials, aliases a missing gate to the
# output, launches, reads the output back and frees what it allocated.
backend = Recorder()
kernels = {layout: launcher.Kernel(backend, ptx, desc)
           for layout, (_, ptx, desc) in compiled.items()}
arrays = {n: np.arange(n_, dtype=np.uint16) for n, n_ in
          (("q", 3 * 4 * 64), ("k", 3 * 2 * 50 * 64), ("v", 3 * 2 * 50 * 64))}
out = launcher.run(kernels, arrays, 2, b=3, sq=1, skv=50)
assert out.shape == (3 * 4 * 64,) and out.dtype == np.uint16
(_, split, _), (_, merge, _) = backend.launches
buffers = {a.name: a.buffer for a in split.arguments
           if isinstance(a, launcher.Memref)}
assert buffers["gate"] == buffers["out"], buffers
assert backend.memory[buffers["o_partial"]][1] == "f32"
assert backend.memory[buffers["o_partial"]][0].size == 2 * 3 * 4 * 64
assert sorted(backend.freed) == sorted(backend.memory), backend.freed
out = launcher.run(kernels["dense"], arrays, b=3, sq=1, skv=50,
                   strides={"out": {"B": 4 * 128, "H": 128, "S": 64}})
assert out.size == 2 * 4 * 128 + 3 * 128 + 64, out.size
fails(lambda: launcher.run(kernels["dense"], {"x": arrays["q"]}, b=3, sq=1,
                           skv=50), "no buffer argument named x")

print("ok")
