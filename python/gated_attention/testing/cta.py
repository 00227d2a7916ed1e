"""The mma.sync kernel's CTA on the CPU: the interpreter that the emulators
share (gated_attention.testing.emulate runs it, emulate_wgmma builds the
sm_90a kernel's warpgroups on it).

`CTA` interprets one `gpu.func` (MLIR's generic form, generic_ir) for one
CTA, all threads in lockstep: every SSA value is a numpy array over the
threads; `Memory` is a buffer the kernel reads and writes.
"""

import re

import numpy as np

from ..accuracy import TANH_APPROX_ERROR
from ..dtypes import from_bits, to_bits
from .generic_ir import _attr_int, _positions, _result_type, _split_types


# ---------------------------------------------------------------------------
# Element types: 16-bit values are kept as float32 values, memory as bits
# ---------------------------------------------------------------------------

def _elem(type_str):
    m = re.search(r"x?(bf16|f16|f32|i32|i1|index|i8)>?$", type_str.strip())
    return m.group(1) if m else type_str


def _vector_width(type_str):
    """The elements of a 1-D vector type (a pair, or the backward
    preprocessing's 16-byte chunks)."""
    return int(re.search(r"vector<(\d+)x", type_str).group(1))


class Memory:
    """A buffer of 16-bit elements (raw bits), shaped; or, with elem "i32",
    of 32-bit integers (the paged kernel's tables and lengths); or, with
    elem "f32", of float32 values."""

    def __init__(self, bits, elem):
        self.bits, self.elem = bits, elem


# ---------------------------------------------------------------------------
# The interpreter
# ---------------------------------------------------------------------------

CMPI = {0: np.equal, 1: np.not_equal, 2: np.less, 3: np.less_equal,
        4: np.greater, 5: np.greater_equal, 6: np.less, 7: np.less_equal,
        8: np.greater, 9: np.greater_equal}
CMPF = {1: np.equal, 2: np.greater, 3: np.greater_equal, 4: np.less,
        5: np.less_equal, 6: np.not_equal}


# The MUFU approximations run at their largest relative error (the bounds
# the error model assumes, gated_attention.accuracy), its sign alternating
# from thread to thread, so that the model, not luck, covers them.
EX2_APPROX_ERROR = 2.0**-22
RCP_APPROX_ERROR = 2.0**-23
# tanh.approx.f32 (LLVM's tanh with afn) runs at the PTX ISA's bound,
# accuracy.TANH_APPROX_ERROR (imported above).


def _approximate(exact, relative, flush=True):
    """`exact` (float64, per thread) off by `relative` in alternating
    directions, rounded to f32 with denormal results flushed to (signed)
    zero where `flush` (.ftz)."""
    sign = np.where(np.arange(exact.shape[0]) % 2 == 0, 1.0, -1.0)
    sign = sign.reshape((-1,) + (1,) * (exact.ndim - 1))
    with np.errstate(invalid="ignore", over="ignore"):
        y = (exact * (1.0 + sign * relative)).astype(np.float32)
        if not flush:
            return y
        return np.where(np.abs(y) < np.finfo(np.float32).tiny,
                        np.float32(0) * y, y).astype(np.float32)


def _round_to(values, type_str):
    """float32 `values` rounded to the element type of `type_str` where it
    is 16-bit (arithmetic on f16 / bf16 vectors rounds once, to nearest
    even)."""
    elem = _elem(type_str)
    if elem in ("bf16", "f16"):
        return from_bits(to_bits(values, elem), elem).reshape(values.shape)
    return values


class CTA:
    """Interprets one gpu.func for one CTA."""

    def __init__(self, kernel, threads, block_id, grid, args, smem_bytes):
        self.kernel, self.t = kernel, threads
        self.block_id, self.grid = block_id, grid
        self.env = {}
        for name, value in zip(kernel.regions[0].args, args):
            self.env[name] = value
        self.smem = np.zeros(smem_bytes, dtype=np.uint8)
        self.mask = np.ones(threads, dtype=bool)

    def uniform(self, x):
        v = np.asarray(x)
        if v.ndim == 0:
            return int(v)
        if not np.all(v == v.flat[0]):
            raise AssertionError("value expected to be uniform across threads")
        return int(v.flat[0])

    def run(self):
        self.block(self.kernel.regions[0])

    def block(self, block):
        for op in block.ops:
            out = self.op(op)
            if op.name in ("scf.yield", "gpu.return"):
                return out
            if op.results:
                if len(op.results) == 1:
                    self.env[op.results[0]] = out
                else:
                    for r, v in zip(op.results, out):
                        self.env[r] = v
        return None

    def op(self, op):
        n = op.name
        get = self.env.__getitem__
        x = [get(o) for o in op.operands]
        rtype = _result_type(op)
        t = self.t
        if n == "arith.constant":
            m = re.search(r"value = ([^:]+) : (\S+?)}", op.attrs)
            text, ty = m.group(1).strip(), m.group(2)
            splat = re.fullmatch(r"dense<([^>]+)>", text)
            if splat and ty.startswith("vector<"):   # a float splat
                shape = [int(d) for d in re.search(r"vector<([\dx]+)x", ty)
                         .group(1).split("x")]
                return np.full((t, *shape), float(splat.group(1)),
                               dtype=np.float32)
            if text.startswith("0x"):
                val = np.array([int(text, 16)], np.uint32).view(np.float32)[0]
            elif ty in ("index", "i32", "i64", "i1"):
                val = {"true": 1, "false": 0}.get(text, None)
                val = int(text) if val is None else val
                return np.full(t, val, dtype=np.int64)
            else:
                val = float(text)
            return np.full(t, val, dtype=np.float32)
        if n in ("gpu.thread_id",):
            return np.arange(t, dtype=np.int64)
        if n in ("gpu.block_id", "gpu.grid_dim"):
            d = "xyz".index(re.search(r"dim (\w)", op.attrs).group(1))
            src = self.block_id if n == "gpu.block_id" else self.grid
            return np.full(t, src[d], dtype=np.int64)
        if n == "arith.addi":
            return x[0] + x[1]
        if n == "arith.subi":
            return x[0] - x[1]
        if n == "arith.muli":
            return x[0] * x[1]
        if n in ("arith.divui", "arith.divsi"):
            return x[0] // x[1]
        if n in ("arith.remui", "arith.remsi"):
            return x[0] % x[1]
        if n in ("arith.ceildivsi", "arith.ceildivui"):
            return -(-x[0] // x[1])
        if n == "arith.minsi":
            return np.minimum(x[0], x[1])
        if n == "arith.maxsi":
            return np.maximum(x[0], x[1])
        if n == "arith.andi":
            return x[0] & x[1]
        if n == "arith.shli":
            y = x[0] << x[1]
            return y & 0xFFFFFFFF if _elem(rtype) == "i32" else y
        if n == "arith.bitcast" and _elem(rtype) == "f32":   # i32 -> f32
            return (x[0] & 0xFFFFFFFF).astype(np.uint32).view(np.float32)
        if n == "arith.ori":
            return x[0] | x[1]
        if n == "arith.xori":
            return x[0] ^ x[1]
        if n == "arith.cmpi":
            return CMPI[_attr_int(op, "predicate")](x[0], x[1])
        if n == "arith.cmpf":
            return CMPF[_attr_int(op, "predicate")](x[0], x[1])
        if n == "arith.select":
            c = x[0]
            while c.ndim < x[1].ndim:
                c = c[..., None]
            return np.where(c, x[1], x[2])
        if n == "arith.addf":
            return (x[0] + x[1]).astype(np.float32)
        if n == "arith.subf":
            with np.errstate(invalid="ignore"):
                return (x[0] - x[1]).astype(np.float32)
        if n == "arith.mulf":
            return _round_to((x[0] * x[1]).astype(np.float32), rtype)
        if n == "arith.divf":
            with np.errstate(divide="ignore", invalid="ignore"):
                return (x[0] / x[1]).astype(np.float32)
        if n == "arith.negf":
            return -x[0]
        if n in ("arith.maxnumf",):
            return np.fmax(x[0], x[1])
        if n == "arith.maximumf":
            return np.maximum(x[0], x[1])
        if n == "math.exp":
            with np.errstate(over="ignore"):
                return np.exp(x[0]).astype(np.float32)
        if n == "math.exp2":
            with np.errstate(over="ignore"):
                return np.exp2(x[0]).astype(np.float32)
        if n == "llvm.intr.fma":
            # One rounding: the f32 product is exact in float64.
            prod = x[0].astype(np.float64) * x[1]
            with np.errstate(invalid="ignore"):
                return (prod + x[2]).astype(np.float32)
        if n == "llvm.call_intrinsic" and \
                '"llvm.nvvm.ex2.approx.ftz.f32"' in op.attrs:
            with np.errstate(over="ignore"):
                return _approximate(np.exp2(x[0].astype(np.float64)),
                                    EX2_APPROX_ERROR)
        if n == "nvvm.rcp.approx.ftz.f":
            with np.errstate(divide="ignore"):
                return _approximate(1.0 / x[0].astype(np.float64),
                                    RCP_APPROX_ERROR)
        if n == "llvm.intr.tanh" and "afn" in op.attrs:
            # tanh.approx.f32, subnormal results kept.
            return _approximate(np.tanh(x[0].astype(np.float64)),
                                TANH_APPROX_ERROR, flush=False)
        if n == "math.tanh":
            return np.tanh(x[0]).astype(np.float32)
        if n == "arith.extf":
            return x[0].astype(np.float32)
        if n == "arith.truncf":
            return from_bits(to_bits(x[0], _elem(rtype)), _elem(rtype))
        if n == "vector.from_elements":
            shape = [int(s) for s in re.search(r"vector<([\dx]+)x", rtype)
                     .group(1).split("x")]
            return np.stack(x, axis=-1).reshape((t, *shape))
        if n == "vector.extract":
            pos = _positions(op, "static_position")
            v = x[0]
            for p in pos:
                v = v[:, p]
            return v
        if n == "vector.broadcast":
            shape = [int(s) for s in re.search(r"vector<([\dx]+)x", rtype)
                     .group(1).split("x")]
            return np.broadcast_to(x[0].reshape((t,) + (1,) * len(shape)),
                                   (t, *shape)).copy()
        if n == "vector.bitcast":
            src_t = _split_types(op.types.split("->")[0])[0]
            src, dst = _elem(src_t), _elem(rtype)
            if dst == "i32":   # vector<2xT> -> vector<1xi32>
                bits = to_bits(x[0], src).astype(np.int64)
                return (bits[:, 0] | (bits[:, 1] << 16))[:, None]
            word = x[0][:, 0].astype(np.int64)   # vector<1xi32> -> vector<2xT>
            lo, hi = word & 0xFFFF, (word >> 16) & 0xFFFF
            return np.stack([from_bits(lo.astype(np.uint16), dst),
                             from_bits(hi.astype(np.uint16), dst)], axis=-1)
        if n == "llvm.extractvalue":
            return x[0][:, _positions(op, "position")[0]]
        if n == "gpu.shuffle":
            offset = self.uniform(x[1])
            lanes = np.arange(t)
            if "shuffle_mode idx" in op.attrs:   # every lane reads `offset`
                src = (lanes & ~31) | offset
            elif "shuffle_mode xor" in op.attrs:
                src = (lanes & ~31) | ((lanes & 31) ^ offset)
            else:
                raise NotImplementedError(op.attrs)
            return x[0][src], np.ones(t, dtype=bool)
        if n in ("gpu.barrier", "nvgpu.device_async_wait"):
            return None
        if n == "nvgpu.device_async_create_group":
            return np.zeros(t)
        if n == "gpu.dynamic_shared_memory":
            return "smem"
        if n == "memref.view":
            offset = self.uniform(x[1])
            shape = [int(s) for s in re.search(r"memref<([\dx]+)x", rtype)
                     .group(1).split("x")]
            elem = _elem(rtype.split(",")[0])
            # 16-bit tiles hold bits; an f32 view (the dK/dV kernel's
            # exchange of S^T and dP^T) holds values, as f32 buffers do.
            word = np.float32 if elem == "f32" else np.uint16
            size = int(np.prod(shape)) * np.dtype(word).itemsize
            view = self.smem[offset:offset + size].view(word).reshape(shape)
            return Memory(view, elem)
        if n == "nvgpu.device_async_copy":
            return self.async_copy(op, x)
        if n == "nvgpu.ldmatrix":
            return self.ldmatrix(op, x)
        if n == "nvvm.mma.sync":
            return self.mma(op, x)
        if n == "arith.index_cast":
            return x[0].astype(np.int64)
        if n in ("math.log2", "math.log"):
            f = np.log2 if n == "math.log2" else np.log
            with np.errstate(divide="ignore", invalid="ignore"):
                return f(x[0]).astype(np.float32)
        if n in ("memref.load", "vector.load") and x[0].elem == "f32":
            mem = x[0]
            width = _vector_width(rtype) if n == "vector.load" else 1
            i = np.clip(x[1][:, None] + np.arange(width), 0,
                        max(mem.bits.size - 1, 0))
            vals = mem.bits[i].astype(np.float32)
            return vals if n == "vector.load" else vals[:, 0]
        if n in ("memref.store", "vector.store") and x[1].elem == "f32":
            val, mem, idx = x
            active = np.nonzero(self.mask)[0]
            if n == "memref.store":
                mem.bits[idx[active]] = val[active]
            else:
                mem.bits[idx[active][:, None] + np.arange(val.shape[1])] = \
                    val[active]
            return None
        if n == "memref.load" and x[0].elem == "i32":
            # A table read past its end is a kernel bug, not a value.
            mem, idx = x[0], x[1][self.mask]
            if idx.size and (idx.min() < 0 or idx.max() >= mem.bits.size):
                raise AssertionError(
                    f"i32 load at {idx.min()}..{idx.max()} outside a buffer "
                    f"of {mem.bits.size}")
            return mem.bits[np.clip(x[1], 0, max(mem.bits.size - 1, 0))] \
                .astype(np.int64)
        if n in ("vector.load", "memref.load"):
            mem, idx = x[0], x[1]
            width = _vector_width(rtype) if n == "vector.load" else 1
            self._check_alignment(op, idx, 2)
            i = np.clip(idx[:, None] + np.arange(width), 0, mem.bits.size - 1)
            vals = from_bits(mem.bits[i], mem.elem)
            return vals if n == "vector.load" else vals[:, 0]
        if n == "vector.store":
            val, mem, idx = x
            active = np.nonzero(self.mask)[0]
            self._check_alignment(op, idx, 2)
            i = idx[active][:, None] + np.arange(val.shape[1])
            mem.bits[i] = to_bits(val[active], mem.elem)
            return None
        if n == "memref.store":   # one 16-bit element (the backward's)
            val, mem, idx = x
            active = np.nonzero(self.mask)[0]
            mem.bits[idx[active]] = to_bits(val[active], mem.elem)
            return None
        if n == "scf.for":
            # Bounds may differ between threads (a thread's first row): a
            # thread whose trips are done idles under the mask, as a
            # diverged warp does (loops that carry values keep lockstep).
            lb, ub, step = (np.broadcast_to(np.asarray(v, np.int64), (t,))
                            for v in x[:3])
            trips = np.maximum(0, -(-(ub - lb) // step))
            active = trips[self.mask] if self.mask.any() else trips[:1]
            state = x[3:]
            if state and active.size and active.min() != active.max():
                raise AssertionError("a loop that carries values with trip "
                                     "counts that differ between threads")
            body = op.regions[0]
            saved = self.mask
            for k in range(int(active.max(initial=0))):
                self.mask = saved & (k < trips)
                self.env[body.args[0]] = lb + k * step
                for a, v in zip(body.args[1:], state):
                    self.env[a] = v
                state = self.block(body) or []
            self.mask = saved
            return state if len(op.results) != 1 else state[0]
        if n == "scf.if":
            cond = x[0] & self.mask
            branches = []
            saved = self.mask
            for region, m in ((op.regions[0], cond), (op.regions[1] if len(op.regions) > 1 else None, ~x[0] & saved)):
                if region is None or not m.any():
                    branches.append(None)
                    continue
                self.mask = m
                branches.append(self.block(region))
                self.mask = saved
            if not op.results:
                return None
            then, other = branches
            if then is None:
                out = other
            elif other is None:
                out = then
            else:
                out = [np.where(cond.reshape((t,) + (1,) * (a.ndim - 1)), a, b)
                       for a, b in zip(then, other)]
            return out if len(op.results) != 1 else out[0]
        if n == "scf.yield":
            return x
        if n == "gpu.return":
            return None
        raise NotImplementedError(n)

    def _check_alignment(self, op, idx, element_bytes):
        """A vector access's `alignment` attribute holds for the active
        lanes' element offsets (buffers start 16-byte aligned): a wider
        access than its address allows faults on the device."""
        m = re.search(r"alignment = (\d+)", op.attrs)
        if not m:
            return
        offsets = idx[self.mask] * element_bytes
        if offsets.size and np.any(offsets % int(m.group(1))):
            raise AssertionError(f"{op.name} at a byte offset that is not a "
                                 f"multiple of its alignment {m.group(1)}")

    def _collective(self):
        # The .aligned collectives need their warp converged, not the CTA:
        # a branch uniform per warp may hold them (the dK/dV kernel's warp
        # pairs compute one product each); the idle warps' results are
        # discarded where the branch merges.
        warps = self.mask.reshape(-1, 32)
        if not np.all(warps.all(axis=1) | ~warps.any(axis=1)):
            raise AssertionError("warp-collective op under a divergent branch")

    def async_copy(self, op, x):
        dst = x[0]
        ndst = dst.bits.ndim
        dst_idx = x[1:1 + ndst]
        src = x[1 + ndst]
        src_idx = x[2 + ndst]
        n = _attr_int(op, "dstElements")
        count = x[3 + ndst] if len(x) > 3 + ndst else np.full(self.t, n)
        active = self.mask
        i = np.clip(src_idx[:, None] + np.arange(n), 0, max(src.bits.size - 1, 0))
        data = src.bits[i] if src.bits.size else np.zeros((self.t, n), np.uint16)
        data = np.where(np.arange(n)[None, :] < count[:, None], data, 0)
        lead = tuple(d[active] for d in dst_idx[:-1])
        cols = dst_idx[-1][active][:, None] + np.arange(n)
        dst.bits[tuple(l[:, None] for l in lead) + (cols,)] = data[active]
        return np.zeros(self.t)

    def ldmatrix(self, op, x):
        self._collective()
        mem = x[0]
        idx = x[1:]
        tiles = _attr_int(op, "numTiles")
        trans = "transpose = true" in op.attrs
        lanes = np.arange(self.t)
        # Row addresses: lane 8m + r gives row r of matrix m.
        lead = tuple(d[:, None] for d in idx[:-1])
        rows = mem.bits[lead + (idx[-1][:, None] + np.arange(8),)]  # (T, 8)
        vals = from_bits(rows, mem.elem)
        warp0 = lanes & ~31
        lane = lanes & 31
        g, q = lane // 4, lane % 4
        out = np.zeros((self.t, tiles, 2), dtype=np.float32)
        for m in range(tiles):
            for e in range(2):
                if trans:   # element (2q + e, g) of matrix m
                    out[:, m, e] = vals[warp0 + 8 * m + 2 * q + e, g]
                else:       # element (g, 2q + e)
                    out[:, m, e] = vals[warp0 + 8 * m + g, 2 * q + e]
        return out

    def mma(self, op, x):
        self._collective()
        bf16 = "mma_type<bf16>" in op.attrs
        elem = "bf16" if bf16 else "f16"

        def pair(v):   # a b32 register (i32 bits or vector<2xT>) -> (T, 2)
            if v.ndim == 1:
                w = v.astype(np.int64)
                return np.stack([from_bits((w & 0xFFFF).astype(np.uint16), elem),
                                 from_bits(((w >> 16) & 0xFFFF).astype(np.uint16), elem)],
                                axis=-1)
            return v
        a = [pair(v) for v in x[0:4]]
        b = [pair(v) for v in x[4:6]]
        c = x[6:10]
        lanes = np.arange(self.t)
        warps = self.t // 32
        lane = lanes & 31
        warp = lanes // 32
        g, q = lane // 4, lane % 4
        A = np.zeros((warps, 16, 16))
        B = np.zeros((warps, 16, 8))
        C = np.zeros((warps, 16, 8))
        for e in range(2):
            A[warp, g, 2 * q + e] = a[0][:, e]
            A[warp, g + 8, 2 * q + e] = a[1][:, e]
            A[warp, g, 2 * q + 8 + e] = a[2][:, e]
            A[warp, g + 8, 2 * q + 8 + e] = a[3][:, e]
            B[warp, 2 * q + e, g] = b[0][:, e]
            B[warp, 2 * q + 8 + e, g] = b[1][:, e]
            C[warp, g, 2 * q + e] = c[e]
            C[warp, g + 8, 2 * q + e] = c[2 + e]
        D = (A @ B + C).astype(np.float32)
        return np.stack([D[warp, g, 2 * q], D[warp, g, 2 * q + 1],
                         D[warp, g + 8, 2 * q], D[warp, g + 8, 2 * q + 1]],
                        axis=-1)
