"""The emulator's sm_90a layer: TMA, mbarriers and wgmma, byte for byte.

`emulate.CTA` runs the mma.sync kernel; `WgmmaCTA`, a CTA, adds what the wgmma
kernel (`kernel=wgmma`) is made of, modelled on the PTX ISA rather than on
the compiler's own conventions, so that a wrong descriptor, swizzle,
stage or barrier phase in the kernel shows as a wrong result or an error:

- Shared memory is bytes; shared pointers are byte addresses, the array
  starting at SMEM_BASE (1024-aligned, as the hardware's).
- TMA (cp.async.bulk.tensor) reads a box through the tensor map (dims
  innermost first, zero fill out of bounds) and writes it with the 128-byte
  swizzle (16-byte chunk c of 128-byte row r at chunk c ^ (r % 8), as
  address bits [4:6] ^ [7:9]); it completes at issue and counts its bytes
  against its mbarrier's transaction count.
- An mbarrier completes its phase when the expected arrivals have arrived
  and the transaction count is back to 0; try_wait.parity on a phase that
  has not completed raises MbarrierHang: on a GPU the kernel would hang,
  since nothing else can complete it here (one warpgroup, lockstep).
- wgmma reads its shared operands by decoding the 64-bit matrix
  descriptors (start address, leading and stride byte offsets, 128B
  swizzle) in the canonical K-major and MN-major layouts; the register-A
  form (inline PTX) takes A from the fragment layout of the PTX ISA; the
  accumulators are distributed in wgmma's D layout.
"""

import re

import numpy as np

from .dtypes import from_bits
from .emulate import CTA

SMEM_BASE = 1024
SWIZZLE_128B = 1


class MbarrierHang(AssertionError):
    """A wait on an mbarrier phase that nothing will complete."""


class TensorMap:
    """A TMA map: a 16-bit tensor (flat bits) with dims innermost first,
    boxes of `box`, written to shared memory with `swizzle` ("128B", or
    "none" to model a map encoded without it)."""

    def __init__(self, bits, elem, dims, box, swizzle="128B"):
        self.bits, self.elem, self.dims, self.box = bits, elem, dims, box
        self.swizzle = swizzle


def swizzle128(address):
    """The 128-byte swizzle of shared byte addresses."""
    return address ^ (((address >> 7) & 7) << 4)


def decode_descriptor(desc):
    """(start address, leading byte offset, stride byte offset) of a wgmma
    matrix descriptor with the 128-byte swizzle."""
    desc = int(desc)
    if (desc >> 62) & 3 != SWIZZLE_128B:
        raise NotImplementedError(f"descriptor {desc:#x}: only the 128B "
                                  "swizzle is modelled")
    if (desc >> 49) & 7:
        raise NotImplementedError(f"descriptor {desc:#x}: base offset")
    return ((desc & 0x3FFF) << 4, ((desc >> 16) & 0x3FFF) << 4,
            ((desc >> 32) & 0x3FFF) << 4)


def k_major_addresses(desc, rows, k=16):
    """Byte addresses of a rows x k K-major operand (A, or B stored N x K):
    8-row core groups `stride` bytes apart, rows of 128 bytes."""
    start, _, stride = decode_descriptor(desc)
    r, c = np.meshgrid(np.arange(rows), np.arange(k), indexing="ij")
    return start + (r // 8) * stride + (r % 8) * 128 + c * 2


def mn_major_addresses(desc, n, k=16):
    """Byte addresses of a k x n MN-major B operand: 64-element column
    atoms `leading` bytes apart, 8-row core groups along K `stride` apart."""
    start, leading, stride = decode_descriptor(desc)
    kk, nn = np.meshgrid(np.arange(k), np.arange(n), indexing="ij")
    return (start + (nn // 64) * leading + (kk // 8) * stride
            + (kk % 8) * 128 + (nn % 64) * 2)


def accumulator_index(threads, n):
    """(rows, cols) of each thread's registers in wgmma's m64 x n D layout:
    warp w holds rows 16w..16w+15; register 4j + 2h + c of lane (g, q) is
    (16w + g + 8h, 8j + 2q + c)."""
    t = np.arange(threads)[:, None]
    w, g, q = t // 32, (t % 32) // 4, t % 4
    i = np.arange(n // 2)[None, :]
    j, h, c = i // 4, (i % 4) // 2, i % 2
    return 16 * w + g + 8 * h, 8 * j + 2 * q + c


class WgmmaCTA(CTA):
    """A CTA of the sm_90a kernel: emulate.CTA's ops and the sm_90a ones."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.barriers = {}

    def op(self, op):
        if op.name not in SM90_OPS:
            return super().op(op)
        return self.sm90_op(op, [self.env[o] for o in op.operands])

    def smem_read(self, addresses, elem):
        a = swizzle128(np.asarray(addresses)) - SMEM_BASE
        lo = self.smem[a].astype(np.uint16)
        hi = self.smem[a + 1].astype(np.uint16)
        return from_bits(lo | (hi << 8), elem).astype(np.float64)

    # -- mbarriers --------------------------------------------------------
    def _complete(self, bar):
        if bar["pending"] == 0 and bar["tx"] == 0:
            bar["phase"] += 1
            bar["pending"] = bar["count"]

    def _barrier(self, address):
        key = int(address)
        if key not in self.barriers:
            raise AssertionError(f"mbarrier at {key:#x} used before init")
        return self.barriers[key]

    def mbarrier_op(self, n, x):
        active = np.nonzero(self.mask)[0]
        if not active.size:
            return None
        address = self.uniform(x[0][active])
        if n == "nvvm.mbarrier.init":
            count = self.uniform(x[1][active])
            self.barriers[address] = {"count": count, "pending": count,
                                      "tx": 0, "phase": 0}
            return None
        bar = self._barrier(address)
        if n == "nvvm.mbarrier.arrive.expect_tx":
            for _ in active:
                bar["tx"] += self.uniform(x[1][active])
                bar["pending"] -= 1
                self._complete(bar)
            return None
        # try_wait.parity: returns once the phase of that parity completed.
        parity = self.uniform(x[1][active])
        if bar["phase"] % 2 == parity:
            raise MbarrierHang(
                f"wait on parity {parity} of the mbarrier at {address:#x}, "
                f"whose phase {bar['phase']} has {bar['pending']} arrivals "
                f"and {bar['tx']} bytes outstanding")
        return None

    def tma_load(self, op, x):
        active = np.nonzero(self.mask)[0]
        # Operands: dst, map, coordinates..., mbar, then optional ones.
        sizes = [int(v) for v in re.search(
            r"operandSegmentSizes = array<i32: ([\d, ]+)>", op.attrs)
            .group(1).split(",")]
        if any(sizes[4:]):
            raise NotImplementedError("im2col, multicast, cache hints")
        dst, tmap = x[0], x[1]
        coords = x[2:2 + sizes[2]]
        bar = x[2 + sizes[2]]
        for thread in active:
            c = [int(v[thread]) for v in coords]
            bw, bh, bd = tmap.box
            if bd != 1 or len(c) != 3:
                raise NotImplementedError("TMA boxes of depth 1, rank 3")
            w, s, slabs = tmap.dims
            rows = c[1] + np.arange(bh)
            cols = c[0] + np.arange(bw)
            valid = ((rows[:, None] < s) & (cols[None, :] < w)
                     & (0 <= c[2]) & (c[2] < slabs)
                     & (rows[:, None] >= 0) & (cols[None, :] >= 0))
            index = (c[2] * s + rows[:, None]) * w + cols[None, :]
            values = np.where(valid, tmap.bits[np.where(valid, index, 0)], 0)
            base = int(dst[thread])
            r, col = np.meshgrid(np.arange(bh), np.arange(bw), indexing="ij")
            a = base + r * (bw * 2) + col * 2
            if tmap.swizzle == "128B":
                a = swizzle128(a)
            a = a - SMEM_BASE
            self.smem[a] = (values & 0xFF).astype(np.uint8)
            self.smem[a + 1] = (values >> 8).astype(np.uint8)
            barrier = self._barrier(int(bar[thread]))
            barrier["tx"] -= bw * bh * bd * 2
            self._complete(barrier)
        return None

    # -- wgmma ------------------------------------------------------------
    def wgmma(self, a, b_addresses, acc, accumulate, elem, n):
        """D = A B (+ acc): A 64 x 16 (float64), B addresses 16 x n."""
        self._collective()
        B = self.smem_read(b_addresses, elem)
        D = a @ B
        rows, cols = accumulator_index(self.t, n)
        out = D[rows, cols].astype(np.float64)
        if accumulate:
            out = out + acc
        return out.astype(np.float32)

    def wgmma_ss(self, op, x):
        m = re.search(r"shape = #nvvm.shape<m = (\d+), n = (\d+), k = (\d+)>",
                      op.attrs)
        mm, n, k = (int(v) for v in m.groups())
        assert (mm, k) == (64, 16), (mm, k)
        elem = re.search(r"typeA = #nvvm.wgmma_type<(\w+)>", op.attrs).group(1)
        zero = "wgmma_scale_out<zero>" in op.attrs
        layout_a = re.search(r"layoutA = #nvvm.mma_layout<(\w+)>", op.attrs)
        layout_b = re.search(r"layoutB = #nvvm.mma_layout<(\w+)>", op.attrs)
        if layout_a.group(1) != "row":
            raise NotImplementedError("M-major A")
        desc_a, desc_b = self.uniform(x[1]), self.uniform(x[2])
        A = self.smem_read(k_major_addresses(desc_a, 64), elem)
        if layout_b.group(1) == "col":   # K-major B: stored N x K
            b_addr = k_major_addresses(desc_b, n).T
        else:
            b_addr = mn_major_addresses(desc_b, n)
        return self.wgmma(A, b_addr, x[0], not zero, elem, n)

    def wgmma_rs(self, op, x):
        asm = re.search(r'asm_string = "((?:[^"\\]|\\.)*)"', op.attrs).group(1)
        m = re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16\."
                      r"f32\.(\w+)\.\w+ .*?, p, 1, 1, (\d);", asm)
        if not m:
            raise NotImplementedError(f"inline asm: {asm[:80]}")
        n, elem, trans_b = int(m.group(1)), m.group(2), int(m.group(3))
        nd = n // 2
        acc = np.stack(x[:nd], axis=-1)
        regs = [np.asarray(v).astype(np.int64) for v in x[nd:nd + 4]]
        desc, scale_d = self.uniform(x[nd + 4]), self.uniform(x[nd + 5])
        # A from registers, the PTX ISA's fragment layout for m64k16: warp w
        # holds rows 16w..; a0 (g, 2q..), a1 (g + 8, 2q..), a2 (g, 2q + 8..),
        # a3 (g + 8, 2q + 8..), each two elements, low half first.
        t = np.arange(self.t)
        w, g, q = t // 32, (t % 32) // 4, t % 4
        A = np.zeros((64, 16))
        for i, (dr, dk) in enumerate(((0, 0), (8, 0), (0, 8), (8, 8))):
            for e in range(2):
                bits = ((regs[i] >> (16 * e)) & 0xFFFF).astype(np.uint16)
                A[16 * w + g + dr, 2 * q + dk + e] = from_bits(bits, elem)
        if trans_b:
            b_addr = mn_major_addresses(desc, n)
        else:
            b_addr = k_major_addresses(desc, n).T
        return self.wgmma(A, b_addr, acc, scale_d != 0, elem, n)

    def sm90_op(self, op, x):
        """The value of `op`, one of SM90_OPS, on operand values `x`."""
        n = op.name
        t = self.t
        if n == "llvm.mlir.addressof":
            return np.full(t, SMEM_BASE, dtype=np.int64)
        if n == "llvm.getelementptr":
            const = re.search(r"rawConstantIndices = array<i32: (-?\d+)>",
                              op.attrs)
            index = int(const.group(1))
            if index == -2**31:
                return x[0] + x[1]
            return x[0] + index
        if n in ("llvm.addrspacecast", "llvm.ptrtoint", "arith.index_cast"):
            return x[0]
        if n == "llvm.mlir.constant":
            value = re.search(r"value = (-?\d+) : i\d+", op.attrs).group(1)
            return np.full(t, int(value), dtype=np.int64)
        if n == "llvm.and":
            return x[0] & x[1]
        if n == "llvm.or":
            return x[0] | x[1]
        if n == "llvm.lshr":
            return x[0] >> x[1]
        if n == "llvm.add":
            return x[0] + x[1]
        if n == "llvm.mlir.undef":
            count = op.types.count("f32")
            return np.zeros((t, count), dtype=np.float32)
        if n in ("nvvm.mbarrier.init", "nvvm.mbarrier.arrive.expect_tx",
                 "nvvm.mbarrier.try_wait.parity"):
            return self.mbarrier_op(n, x)
        if n == "nvvm.cp.async.bulk.tensor.shared.cluster.global":
            return self.tma_load(op, x)
        if n in ("nvvm.fence.mbarrier.init", "nvvm.wgmma.fence.aligned",
                 "nvvm.wgmma.commit.group.sync.aligned",
                 "nvvm.wgmma.wait.group.sync.aligned"):
            return None
        if n == "nvvm.wgmma.mma_async":
            return self.wgmma_ss(op, x)
        if n == "llvm.inline_asm":
            return self.wgmma_rs(op, x)
        raise NotImplementedError(n)


SM90_OPS = frozenset((
    "llvm.mlir.addressof", "llvm.getelementptr", "llvm.addrspacecast",
    "llvm.ptrtoint", "arith.index_cast", "llvm.mlir.constant", "llvm.and",
    "llvm.or", "llvm.lshr", "llvm.add", "llvm.mlir.undef",
    "nvvm.mbarrier.init", "nvvm.mbarrier.arrive.expect_tx",
    "nvvm.mbarrier.try_wait.parity",
    "nvvm.cp.async.bulk.tensor.shared.cluster.global",
    "nvvm.fence.mbarrier.init", "nvvm.wgmma.fence.aligned",
    "nvvm.wgmma.commit.group.sync.aligned",
    "nvvm.wgmma.wait.group.sync.aligned", "nvvm.wgmma.mma_async",
    "llvm.inline_asm"))
