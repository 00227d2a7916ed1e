"""The emulator's sm_90a layer: TMA, mbarriers and wgmma, byte for byte.

`cta.CTA` runs the mma.sync kernel; `WgmmaCTA`, a CTA, adds what the wgmma
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
  and the transaction count is back to 0; try_wait.parity returns once the
  phase of the other parity has completed (a fresh barrier counts as having
  completed the phase before its first).
- Warpgroups run as coroutines: each warpgroup's 128 threads in lockstep
  (an interpreter of its own), one warpgroup at a time, each until it waits
  on an mbarrier phase or a CTA barrier that has not completed; then the
  next. A producer thus runs as far ahead as its barriers let it, which is
  the schedule that exposes a missing wait. With a `schedule` seed, the
  order of the warpgroups is shuffled every round and a warpgroup also
  gives way at random after its waits and arrivals: other interleavings,
  reproducibly. When no warpgroup can move, the kernel would hang on a
  GPU: MbarrierHang names the waits.
- cp.async (the paged kernel's row copies: 16 bytes from a global pointer,
  zero-filled past its src-size) does not land at issue: a thread's copies
  are in flight from its cp.async.mbarrier.arrive on (.noinc: that arrival
  counts against the barrier; without, the barrier's count is raised
  first) and land, with the arrival, only when the warpgroup gives way,
  and under a `schedule` at random later ones. A consumer that reads a
  stage without waiting for its arrival thus reads what was there before;
  copies that no arrival tracks, or still in flight when the CTA exits,
  are errors. Global pointers (memref.extract_aligned_pointer_as_index,
  inttoptr, getelementptr) are a buffer and byte offsets. cp.async writes
  through the generic proxy and wgmma reads through the async one: a
  wgmma that reads bytes landed after its warpgroup's last
  fence.proxy.async is an error (TMA writes through the async proxy).
- Named barriers (bar.sync / bar.arrive with an id and a thread count)
  complete when that many threads have arrived; bar.sync waits for it.
- setmaxnreg: multiples of 8 in [24, 256], decreases below and increases
  above the current count, drawing on the CTA's pool (PTX ISA): its
  threads x the count at entry, not the register file. An increase waits
  for room, so a split the pool cannot hold deadlocks, as on the GPU.
- wgmma is asynchronous: its accumulators are pending until a
  wgmma.wait_group covers its commit group, and any other instruction that
  reads them before is an error (on a GPU it reads garbage, or ptxas
  serializes the pipeline). It reads shared memory at issue and again when
  it completes: a change in between (a stage refilled while a wgmma still
  reads it) is an error.
- wgmma reads its shared operands by decoding the 64-bit matrix
  descriptors (start address, leading and stride byte offsets, 128B
  swizzle) in the canonical K-major and MN-major layouts; the register-A
  form (inline PTX) takes A from the fragment layout of the PTX ISA; the
  accumulators are distributed in wgmma's D layout.
"""

import random
import re
import threading

import numpy as np

from ..dtypes import from_bits
from . import emulate_staging
from .cta import CTA
from .generic_ir import _attr_int, _positions
from .wgmma_layouts import (accumulator_index, k_major_addresses,
                            mn_major_addresses, swizzle128)

SMEM_BASE = 1024


class MbarrierHang(AssertionError):
    """Every warpgroup waits on a barrier that nothing will complete."""


class _Abort(BaseException):
    """Unwinds a warpgroup's thread when its CTA gives up."""


REGISTER_FILE = 65536


class Pending:
    """The accumulators of an issued wgmma: computed when a wait_group
    covers it (or a later wgmma of its chain completes)."""

    def __init__(self, compute):
        self.compute, self.value = compute, None

    def resolve(self):
        if self.value is None:
            self.value = self.compute()
        return self.value


class PendingElement:
    """Register `index` of a pending accumulator struct."""

    def __init__(self, of, index):
        self.of, self.index = of, index


# Ops that may hold pending accumulators without reading them: wgmmas (the
# accumulator chain), moves out of the struct, and structured control flow
# that carries values.
_CARRIERS = frozenset(("nvvm.wgmma.mma_async", "llvm.inline_asm",
                       "llvm.extractvalue", "scf.yield", "scf.for", "scf.if"))


def _complete_phase(bar):
    """Completes the mbarrier's phase once its arrivals and bytes are in."""
    if bar["pending"] == 0 and bar["tx"] == 0:
        bar["phase"] += 1
        bar["pending"] = bar["count"]


class GlobalPointer:
    """An address in global memory: byte offsets (per thread) into the
    elements of a buffer (cta.Memory)."""

    def __init__(self, mem, offset):
        self.mem, self.offset = mem, offset

    def __add__(self, byte_offset):
        return GlobalPointer(self.mem, self.offset + byte_offset)


class TensorMap:
    """A TMA map: a 16-bit tensor (flat bits) with dims innermost first,
    boxes of `box`, written to shared memory with `swizzle` ("128B", or
    "none" to model a map encoded without it)."""

    def __init__(self, bits, elem, dims, box, swizzle="128B"):
        self.bits, self.elem, self.dims, self.box = bits, elem, dims, box
        self.swizzle = swizzle


class WgmmaCTA:
    """A CTA of the sm_90a kernel: shared memory, mbarriers and the CTA
    barrier, shared by its warpgroups, which run as coroutines."""

    def __init__(self, kernel, threads, block_id, grid, args, smem_bytes,
                 schedule=None):
        # A random interleaving, seeded by the schedule and the CTA.
        self.rng = (None if schedule is None else
                    random.Random(f"{schedule}/{block_id}"))
        if threads % 128:
            raise ValueError(f"{threads} threads: not whole warpgroups")
        self.smem = np.zeros(smem_bytes, dtype=np.uint8)
        self.barriers = {}
        # Barriers (0: the CTA's, then named ones): id -> threads arrived,
        # phases completed.
        self.named = {}
        # The registers per thread at entry, what ptxas gives a kernel of
        # one CTA per SM: the file split over the threads, in multiples of
        # 8, at most 255.
        self.entry_registers = min(255, REGISTER_FILE // threads // 8 * 8)
        # The pool setmaxnreg draws on: the registers the CTA holds, each
        # thread's allocated in units of 8.
        self.register_pool = threads * -(-self.entry_registers // 8) * 8
        self.warpgroups = [Warpgroup(self, w, kernel, block_id, grid, args)
                           for w in range(threads // 128)]
        self.back = threading.Event()
        # Bumped by every change of a barrier's state.
        self.version = 0
        # cp.async copies in flight, each thread's with the arrival that
        # tracks them: (barrier address, [(smem offset, 16 bytes)], noinc).
        self.inflight = []
        # When each byte of shared memory was last written through the
        # generic proxy (a count of landings; 0: never).
        self.landed = 0
        self.generic_writes = np.zeros(smem_bytes, dtype=np.int64)

    def land(self, everything=False):
        """Lands copies in flight (with a schedule, some of them) and their
        arrivals."""
        keep = []
        for address, copies, noinc in self.inflight:
            if not everything and self.rng and self.rng.random() < 0.5:
                keep.append((address, copies, noinc))
                continue
            self.landed += 1
            for offset, data in copies:
                self.smem[offset:offset + 16] = data
                self.generic_writes[offset:offset + 16] = self.landed
            bar = self.barriers[address]
            bar["pending"] -= 1
            if bar["pending"] < 0:
                raise AssertionError(
                    f"mbarrier at {address:#x}: more arrivals than its "
                    f"count {bar['count']}")
            self.version += 1
            _complete_phase(bar)
        self.inflight = keep

    def run(self):
        threads = [threading.Thread(target=wg.main, daemon=True)
                   for wg in self.warpgroups]
        for t in threads:
            t.start()
        live = list(self.warpgroups)
        try:
            while live:
                version = self.version
                order = list(live)
                if self.rng:
                    self.rng.shuffle(order)
                for wg in order:
                    self.back.clear()
                    wg.go.set()
                    self.back.wait()
                    if wg.error is not None:
                        raise wg.error
                    if wg.done:
                        live.remove(wg)
                    self.land()
                # A round in which every warpgroup waited and no barrier
                # changed: nothing will ever change one, once every copy
                # has landed.
                if live and self.version == version and all(
                        wg.blocked for wg in live):
                    if self.inflight:
                        self.land(everything=True)
                        continue
                    raise MbarrierHang("; ".join(
                        f"warpgroup {wg.index} waits on {wg.waiting()}"
                        for wg in live))
        finally:
            for wg in live:
                wg.abort = True
                wg.go.set()
            for t in threads:
                t.join()
        if self.inflight or any(any(wg.untracked) for wg in
                                self.warpgroups):
            raise AssertionError("the CTA exits with cp.async copies in "
                                 "flight or never tracked by an mbarrier")
        if any(emulate_staging.outstanding(wg) for wg in self.warpgroups):
            raise AssertionError("the CTA exits with bulk copies that no "
                                 "cp.async.bulk.wait_group waited for")
        # Every phase begun is completed: no copy in flight, no arrival
        # that nothing waits for.
        for address, bar in self.barriers.items():
            if bar["pending"] != bar["count"] or bar["tx"]:
                raise AssertionError(
                    f"the CTA exits with a phase of the mbarrier at "
                    f"{address:#x} begun ({bar['count'] - bar['pending']} "
                    f"arrivals, {bar['tx']} bytes outstanding)")
        for ident, bar in self.named.items():
            if bar["arrived"]:
                raise AssertionError(
                    f"the CTA exits with {bar['arrived']} threads arrived at "
                    f"barrier {ident}")
        registers = [wg.registers for wg in self.warpgroups]
        if 128 * sum(registers) > self.register_pool:
            raise AssertionError(f"setmaxnreg: warpgroups hold {registers} "
                                 "registers per thread, more than the "
                                 f"CTA's pool of {self.register_pool}")


class Warpgroup(CTA):
    """The 128 threads of one warpgroup in lockstep: cta.CTA's ops and
    the sm_90a ones, on its CTA's shared state."""

    def __init__(self, cta, index, kernel, block_id, grid, args):
        args = [a[:128] if isinstance(a, np.ndarray) else a for a in args]
        super().__init__(kernel, 128, block_id, grid, args, 0)
        self.cta, self.index = cta, index
        self.smem, self.barriers = cta.smem, cta.barriers
        self.registers = cta.entry_registers
        self.go = threading.Event()
        self.error, self.done, self.abort = None, False, False
        self.blocked, self.waiting = False, None
        # Issued wgmmas not yet committed, and the commit groups in order.
        self.uncommitted, self.groups = [], []
        # Each thread's cp.async copies that no arrival tracks yet.
        self.untracked = [[] for _ in range(128)]
        # The generic-proxy writes its fence.proxy.async has ordered before
        # its async-proxy reads (CTA.landed at the fence).
        self.fenced = 0

    def main(self):
        """The warpgroup's thread: runs the kernel when first scheduled."""
        try:
            self.resume()
            self.run()
        except _Abort:
            return
        except BaseException as e:     # reported by WgmmaCTA.run
            self.error = e
        self.done = True
        self.cta.back.set()

    def resume(self):
        self.go.wait()
        self.go.clear()
        if self.abort:
            raise _Abort()

    def wait_until(self, ready, what):
        """Returns once `ready()`, the other warpgroups running meanwhile;
        `what()` describes the wait."""
        while not ready():
            self.waiting, self.blocked = what, True
            self.cta.back.set()
            self.resume()
        self.blocked = False
        self.maybe_yield()

    def maybe_yield(self):
        """With a random schedule: sometimes let the others run first."""
        if self.cta.rng and self.cta.rng.random() < 0.3:
            self.yield_now()

    def yield_now(self):
        """Lets the other warpgroups run first (as far as they can)."""
        self.cta.back.set()
        self.resume()

    def op(self, op):
        self.settle_operands(op)
        if op.name == "llvm.extractvalue" and isinstance(
                self.env[op.operands[0]], Pending):
            return PendingElement(self.env[op.operands[0]],
                                  _positions(op, "position")[0])
        if op.name == "gpu.thread_id":
            return 128 * self.index + np.arange(self.t, dtype=np.int64)
        if op.name == "gpu.barrier":
            return self.cta_barrier()
        if op.name not in SM90_OPS:
            return super().op(op)
        return self.sm90_op(op, [self.env[o] for o in op.operands])

    def settle_operands(self, op):
        """Replaces completed accumulators among `op`'s operands by their
        values; an operand still pending is an error unless `op` only
        carries it."""
        for name in op.operands:
            v = self.env[name]
            if not isinstance(v, (Pending, PendingElement)):
                continue
            pending = v if isinstance(v, Pending) else v.of
            if pending.value is None:
                if op.name in _CARRIERS:
                    continue
                raise AssertionError(
                    f"{op.name} reads wgmma accumulators ({name}) before a "
                    "wgmma.wait_group covers their wgmma")
            self.env[name] = (pending.value if isinstance(v, Pending)
                              else pending.value[:, v.index])

    def cta_barrier(self):
        """bar.sync 0: every thread of the CTA must arrive."""
        self.meet("bar.sync", 0, 128 * len(self.cta.warpgroups))

    def named_barrier(self, n, x):
        """bar.sync (`nvvm.barrier`) or bar.arrive on barrier x[0] of x[1]
        threads."""
        ident, count = self.uniform(x[0]), self.uniform(x[1])
        if ident == 0 or count % 32 or count > 128 * len(self.cta.warpgroups):
            raise AssertionError(f"{n} {ident}, {count}: not a named barrier "
                                 "of whole warps of this CTA")
        self.meet("bar.sync" if n == "nvvm.barrier" else "bar.arrive", ident,
                  count)

    def meet(self, kind, ident, count):
        """The warpgroup's threads arrive at barrier `ident` of `count`
        threads; bar.sync also waits for the phase to complete."""
        if not self.mask.all():
            raise AssertionError(f"{kind} {ident} under a divergent branch")
        bar = self.cta.named.setdefault(
            ident, {"count": count, "arrived": 0, "generation": 0})
        if bar["count"] != count:
            raise AssertionError(f"barrier {ident} used with {count} and "
                                 f"{bar['count']} threads")
        generation = bar["generation"]
        bar["arrived"] += self.t
        self.cta.version += 1
        if bar["arrived"] > count:
            raise AssertionError(f"barrier {ident}: more than {count} threads "
                                 "arrived")
        if bar["arrived"] == count:
            bar["arrived"], bar["generation"] = 0, generation + 1
        if kind == "bar.sync":
            self.wait_until(
                lambda: bar["generation"] != generation,
                lambda: f"bar.sync {ident}, {count} ({bar['arrived']} "
                "threads arrived)")
        return None

    def setmaxnreg(self, op):
        self._collective()
        count = _attr_int(op, "regCount")
        increase = "action = #nvvm<action increase>" in op.attrs
        if count % 8 or not 24 <= count <= 256:
            raise AssertionError(f"setmaxnreg {count}: not a multiple of 8 "
                                 "in [24, 256]")
        if increase != (count > self.registers):
            raise AssertionError(
                f"setmaxnreg.{'inc' if increase else 'dec'} {count} from "
                f"{self.registers} registers")
        if increase:
            cta = self.cta

            def held():
                return 128 * sum(count if wg is self else wg.registers
                                 for wg in cta.warpgroups)
            self.wait_until(
                lambda: held() <= cta.register_pool,
                lambda: f"setmaxnreg.inc {count}: the warpgroups would hold "
                f"{held()} registers, the CTA's pool "
                f"{cta.register_pool}")
        self.registers = count
        # (A decrease may let a waiting increase through.)
        self.cta.version += 1
        return None

    def smem_read(self, addresses, elem):
        a = swizzle128(np.asarray(addresses)) - SMEM_BASE
        if self.cta.generic_writes[a].max(initial=0) > self.fenced:
            raise AssertionError(
                "wgmma reads shared memory that cp.async wrote (the generic "
                "proxy) after the warpgroup's last fence.proxy.async")
        lo = self.smem[a].astype(np.uint16)
        hi = self.smem[a + 1].astype(np.uint16)
        return from_bits(lo | (hi << 8), elem).astype(np.float64)

    # -- mbarriers --------------------------------------------------------
    def _complete(self, bar):
        _complete_phase(bar)

    def _barrier(self, address):
        key = int(address)
        if key not in self.barriers:
            raise AssertionError(f"mbarrier at {key:#x} used before init")
        return self.barriers[key]

    def mbarrier_op(self, n, x):
        active = np.nonzero(self.mask)[0]
        if not active.size:
            return None
        addresses = np.unique(x[0][active])
        if addresses.size > 1:
            # One barrier per warp (the epilogue's gate rows): each in turn.
            mask = self.mask
            try:
                for a in addresses:
                    self.mask = mask & (x[0] == a)
                    self.mbarrier_op(n, x)
            finally:
                self.mask = mask
            return None
        address = int(addresses[0])
        if n == "nvvm.mbarrier.init":
            self.cta.version += 1
            count = self.uniform(x[1][active])
            self.barriers[address] = {"count": count, "pending": count,
                                      "tx": 0, "phase": 0}
            return None
        bar = self._barrier(address)
        if n in ("nvvm.mbarrier.arrive.expect_tx", "nvvm.mbarrier.arrive"):
            self.cta.version += 1
            for _ in active:
                if n == "nvvm.mbarrier.arrive.expect_tx":
                    bar["tx"] += self.uniform(x[1][active])
                bar["pending"] -= 1
                if bar["pending"] < 0:
                    raise AssertionError(
                        f"mbarrier at {address:#x}: more arrivals than its "
                        f"count {bar['count']}")
                self._complete(bar)
            if n == "nvvm.mbarrier.arrive":
                # A release: the warpgroups waiting for it run first, which
                # exposes a stage released before its last read.
                self.yield_now()
            else:
                self.maybe_yield()
            return None
        # try_wait.parity: returns once the phase of that parity completed.
        # (Under a branch, the warpgroup's other threads wait too: fine
        # while no thread waits for another of its own warpgroup.)
        parity = self.uniform(x[1][active])
        self.wait_until(
            lambda: bar["phase"] % 2 != parity,
            lambda: f"parity {parity} of the mbarrier at {address:#x} (phase "
            f"{bar['phase']}, {bar['pending']} arrivals and {bar['tx']} "
            "bytes outstanding)")
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
            self.cta.version += 1
            self._complete(barrier)
        return None

    def cp_async(self, op, x):
        """cp.async.cg.shared.global [dst], [src], 16, src-size: read now
        (zero past src-size), written when it lands."""
        if _attr_int(op, "size") != 16:
            raise NotImplementedError("cp.async of other than 16 bytes")
        dst, src = x[0], x[1]
        size = x[2] if len(x) > 2 else np.full(self.t, 16)
        for thread in np.nonzero(self.mask)[0]:
            n, to = int(size[thread]), int(dst[thread]) - SMEM_BASE
            if n not in (0, 16) or to % 16 or not (
                    0 <= to <= self.smem.size - 16):
                raise AssertionError(
                    f"cp.async of {n} bytes to shared offset {to}: not a "
                    "16-byte chunk of the CTA's shared memory")
            data = np.zeros(16, np.uint8)
            if n:
                at = int(src.offset[thread])
                bits = src.mem.bits
                if at % 16 or not 0 <= at // 2 <= bits.size - 8:
                    raise AssertionError(
                        f"cp.async from byte {at} of a buffer of "
                        f"{bits.size} elements: misaligned or outside it")
                data = bits[at // 2:at // 2 + 8].astype("<u2").view(np.uint8)
            self.untracked[thread].append((to, data.copy()))
        return None

    def cp_async_arrive(self, op, x):
        """cp.async.mbarrier.arrive(.noinc): the thread's copies so far
        go in flight with an arrival on the barrier when they land."""
        noinc = re.search(r"noinc = true", op.attrs) is not None
        for thread in np.nonzero(self.mask)[0]:
            address = int(x[0][thread])
            bar = self._barrier(address)
            if not noinc:
                bar["pending"] += 1
            self.cta.inflight.append((address, self.untracked[thread],
                                      noinc))
            self.untracked[thread] = []
        return None

    # -- wgmma ------------------------------------------------------------
    def wgmma(self, a, b_addresses, acc, accumulate, elem, n,
              a_addresses=None):
        """Issues D = A B (+ acc): A 64 x 16 (float64, or read from
        `a_addresses`), B read from addresses 16 x n; returns the pending
        accumulators."""
        self._collective()
        shared = [b_addresses] + ([a_addresses] if a_addresses is not None
                                  else [])
        at_issue = [self.smem_read(addr, elem) for addr in shared]

        def complete():
            for addr, before in zip(shared, at_issue):
                if not np.array_equal(self.smem_read(addr, elem), before,
                                      equal_nan=True):
                    raise AssertionError(
                        "shared memory that an in-flight wgmma reads changed "
                        "before the wgmma.wait_group that covers it")
            B = at_issue[0]
            A = a if a_addresses is None else at_issue[1]
            D = A @ B
            rows, cols = accumulator_index(self.t, n)
            out = D[rows, cols].astype(np.float64)
            if accumulate:
                out = out + self.accumulator_value(acc)
            return out.astype(np.float32)

        pending = Pending(complete)
        self.uncommitted.append(pending)
        return pending

    @staticmethod
    def accumulator_value(acc):
        """The value of an accumulator operand: registers, a pending struct,
        or the registers of one (completing it)."""
        if isinstance(acc, Pending):
            return acc.resolve()
        if isinstance(acc, list):
            if any(isinstance(v, PendingElement) for v in acc):
                owners = {id(v.of) for v in acc
                          if isinstance(v, PendingElement)}
                if (len(owners) != 1 or not all(
                        isinstance(v, PendingElement) and v.index == i
                        for i, v in enumerate(acc))):
                    raise AssertionError("a wgmma's accumulators mix "
                                         "registers of several wgmmas")
                return acc[0].of.resolve()
            return np.stack(acc, axis=-1)
        return acc

    def commit_group(self):
        self._collective()
        self.groups.append(self.uncommitted)
        self.uncommitted = []

    def wait_group(self, op):
        """Completes every commit group but the newest N."""
        self._collective()
        keep = _attr_int(op, "group")
        while len(self.groups) > keep:
            for pending in self.groups.pop(0):
                pending.resolve()

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
        if layout_b.group(1) == "col":   # K-major B: stored N x K
            b_addr = k_major_addresses(desc_b, n).T
        else:
            b_addr = mn_major_addresses(desc_b, n)
        return self.wgmma(None, b_addr, x[0], not zero, elem, n,
                          a_addresses=k_major_addresses(desc_a, 64))

    def wgmma_rs(self, op, x):
        asm = re.search(r'asm_string = "((?:[^"\\]|\\.)*)"', op.attrs).group(1)
        m = re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16\."
                      r"f32\.(\w+)\.\w+ .*?, p, 1, 1, (\d);", asm)
        if not m:
            raise NotImplementedError(f"inline asm: {asm[:80]}")
        n, elem, trans_b = int(m.group(1)), m.group(2), int(m.group(3))
        nd = n // 2
        acc = list(x[:nd])
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
        if n in ("llvm.addrspacecast", "llvm.ptrtoint", "arith.index_cast",
                 "llvm.inttoptr"):
            return x[0]
        if n == "memref.extract_aligned_pointer_as_index":
            return GlobalPointer(x[0], np.zeros(t, dtype=np.int64))
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
        if n == "llvm.trunc":   # i64 -> i32 (a descriptor's low word)
            return x[0] & 0xFFFFFFFF
        if n == "llvm.mlir.undef":
            count = op.types.count("f32")
            return np.zeros((t, count), dtype=np.float32)
        if n in ("nvvm.mbarrier.init", "nvvm.mbarrier.arrive.expect_tx",
                 "nvvm.mbarrier.arrive", "nvvm.mbarrier.try_wait.parity"):
            return self.mbarrier_op(n, x)
        if n == "nvvm.setmaxregister":
            return self.setmaxnreg(op)
        if n in ("nvvm.barrier", "nvvm.barrier.arrive"):
            return self.named_barrier(n, x)
        if n == "nvvm.cp.async.bulk.tensor.shared.cluster.global":
            return self.tma_load(op, x)
        if n == "nvvm.cp.async.shared.global":
            return self.cp_async(op, x)
        if n == "nvvm.cp.async.mbarrier.arrive":
            return self.cp_async_arrive(op, x)
        if n in emulate_staging.OPS:
            return emulate_staging.run(self, op, x, SMEM_BASE)
        if n == "nvvm.fence.proxy":
            if "proxy_kind<async" not in op.attrs:
                raise NotImplementedError(f"fence.proxy {op.attrs}")
            self.fenced = self.cta.landed
            return None
        if n in ("nvvm.fence.mbarrier.init", "nvvm.wgmma.fence.aligned"):
            return None
        if n == "nvvm.wgmma.commit.group.sync.aligned":
            return self.commit_group()
        if n == "nvvm.wgmma.wait.group.sync.aligned":
            return self.wait_group(op)
        if n == "nvvm.wgmma.mma_async":
            return self.wgmma_ss(op, x)
        if n == "llvm.inline_asm":
            if '"mov.b64 $0, {$1, $2};"' in op.attrs:
                # A descriptor from its low and high words (WgmmaAtom).
                return (x[1] << 32) | (x[0] & 0xFFFFFFFF)
            if '"mov.u32 $0, %tid.x;"' in op.attrs:
                # The thread index read again (the staged epilogue's).
                return 128 * self.index + np.arange(t, dtype=np.int64)
            if '"mov.b32 $0, $1;"' in op.attrs:
                # A value pinned below the side effects before it
                # (WgmmaFlashKernel's O rescale factors).
                return x[0]
            return self.wgmma_rs(op, x)
        raise NotImplementedError(n)


SM90_OPS = frozenset((
    "llvm.mlir.addressof", "llvm.getelementptr", "llvm.addrspacecast",
    "llvm.ptrtoint", "arith.index_cast", "llvm.mlir.constant", "llvm.and",
    "llvm.inttoptr", "memref.extract_aligned_pointer_as_index",
    "nvvm.cp.async.shared.global", "nvvm.cp.async.mbarrier.arrive",
    "nvvm.fence.proxy",
    "llvm.or", "llvm.lshr", "llvm.add", "llvm.trunc", "llvm.mlir.undef",
    "nvvm.mbarrier.init", "nvvm.mbarrier.arrive.expect_tx",
    "nvvm.mbarrier.arrive", "nvvm.mbarrier.try_wait.parity",
    "nvvm.setmaxregister", "nvvm.barrier", "nvvm.barrier.arrive",
    "nvvm.cp.async.bulk.tensor.shared.cluster.global",
    "nvvm.fence.mbarrier.init", "nvvm.wgmma.fence.aligned",
    "nvvm.wgmma.commit.group.sync.aligned",
    "nvvm.wgmma.wait.group.sync.aligned", "nvvm.wgmma.mma_async",
    "llvm.inline_asm")) | emulate_staging.OPS
