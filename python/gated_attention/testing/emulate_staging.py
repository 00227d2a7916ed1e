"""The sm_90a epilogue's staging of gate and output rows on the emulator,
byte for byte by the PTX ISA (emulate_wgmma's warpgroups dispatch these
ops here):

- stmatrix.sync.aligned.m8n8.x{1,2,4}.shared.b16: lanes 8i..8i + 7 give the
  row addresses of matrix i (16 bytes each), and register i of lane 4j + q
  holds its row j, elements 2q and 2q + 1 (low half first). It writes
  through the generic proxy. ldmatrix (the same layout) reads them.
- cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes: like
  a TMA load, it lands at issue and counts its bytes against the mbarrier.
- cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size: a
  multiple of 16 bytes between 16-byte aligned addresses, read through the
  async proxy, so bytes that a generic-proxy write (stmatrix, cp.async) put
  there after the warpgroup's last fence.proxy.async are an error. The copy
  happens at issue; cp.async.bulk.commit_group and wait_group(.read) track
  it, and a warpgroup that ends with copies it did not wait for is an error
  (the CTA's exit may free the shared memory they read).
- bar.warp.sync with the full mask: the warpgroup runs in lockstep already.
"""

import numpy as np

OPS = frozenset((
    "nvvm.stmatrix", "nvvm.ldmatrix", "nvvm.bar.warp.sync",
    "nvvm.cp.async.bulk.shared.cluster.global",
    "nvvm.cp.async.bulk.global.shared.cta", "nvvm.cp.async.bulk.commit.group",
    "nvvm.cp.async.bulk.wait_group"))


def run(wg, op, x, smem_base):
    """The value of staging op `op` on operand values `x` in warpgroup
    `wg` (an emulate_wgmma.Warpgroup)."""
    n = op.name
    if n == "nvvm.stmatrix":
        return _stmatrix(wg, op, x, smem_base)
    if n == "nvvm.ldmatrix":
        return _ldmatrix(wg, op, x, smem_base)
    if n == "nvvm.cp.async.bulk.shared.cluster.global":
        return _bulk_load(wg, op, x, smem_base)
    if n == "nvvm.bar.warp.sync":
        if np.any((x[0][wg.mask] & 0xFFFFFFFF) != 0xFFFFFFFF):
            raise NotImplementedError("bar.warp.sync of part of a warp")
        return None
    if n == "nvvm.cp.async.bulk.global.shared.cta":
        return _bulk_store(wg, op, x, smem_base)
    counts = wg.__dict__.setdefault("bulk", {"uncommitted": 0, "groups": []})
    if n == "nvvm.cp.async.bulk.commit.group":
        counts["groups"].append(counts["uncommitted"])
        counts["uncommitted"] = 0
        return None
    # wait_group N: every bulk group but the newest N has completed.
    keep = int(op.attrs.split("group = ")[1].split(" ")[0].rstrip(":,}"))
    del counts["groups"][:max(0, len(counts["groups"]) - keep)]
    return None


def outstanding(wg):
    """The bulk copies of warpgroup `wg` not yet waited for."""
    counts = wg.__dict__.get("bulk", {"uncommitted": 0, "groups": []})
    return counts["uncommitted"] + sum(counts["groups"])


def _warps(wg, what):
    """The warps of `wg` executing collective `what`: all of their lanes."""
    active = np.asarray(wg.mask).reshape(-1, 32)
    if np.any(active.any(axis=1) != active.all(axis=1)):
        raise AssertionError(f"{what} under a branch that splits a warp")
    return np.nonzero(active.all(axis=1))[0]


def _rows(wg, op, x, num, smem_base):
    """(warp, matrix i, row j, shared offset) of an ldmatrix / stmatrix of
    `num` 8 x 8 matrices of 16-bit elements, rows addressed by x[0]."""
    what = op.name.split(".")[1]
    if "m = 8, n = 8" not in op.attrs or "b16" not in op.attrs:
        raise NotImplementedError(f"{what} {op.attrs}")
    if "mma_layout<row>" not in op.attrs:
        raise NotImplementedError(f"{what} .trans")
    if num not in (1, 2, 4):
        raise AssertionError(f"{what} of {num} matrices")
    for warp in _warps(wg, what):
        for i in range(num):
            for j in range(8):
                at = int(x[0][32 * warp + 8 * i + j]) - smem_base
                if at % 16 or not 0 <= at <= wg.smem.size - 16:
                    raise AssertionError(
                        f"{what} row at shared offset {at}: not a 16-byte "
                        "row of the CTA's shared memory")
                yield warp, i, j, at


def _stmatrix(wg, op, x, smem_base):
    cta = wg.cta
    cta.landed += 1
    for warp, i, j, at in _rows(wg, op, x, len(x) - 1, smem_base):
        lanes = 32 * warp + 4 * j + np.arange(4)
        words = np.asarray(x[1 + i])[lanes].astype(np.int64) & 0xFFFFFFFF
        wg.smem[at:at + 16] = words.astype("<u4").view(np.uint8)
        cta.generic_writes[at:at + 16] = cta.landed
    return None


def _ldmatrix(wg, op, x, smem_base):
    num = int(op.attrs.split("num = ")[1].split(" ")[0].rstrip(":,}"))
    out = np.zeros((wg.t, num), dtype=np.int64)
    for warp, i, j, at in _rows(wg, op, x, num, smem_base):
        words = wg.smem[at:at + 16].copy().view("<u4").astype(np.int64)
        out[32 * warp + 4 * j + np.arange(4), i] = words
    return out


def _bulk_copies(wg, op, shared, pointer, size, smem_base):
    """(thread, bytes, shared offset, global buffer bits, global byte) of
    each active thread's bulk copy, checked: a positive multiple of 16
    bytes between 16-byte aligned addresses, inside both memories."""
    what = op.name
    for thread in np.nonzero(wg.mask)[0]:
        n, at = int(size[thread]), int(shared[thread]) - smem_base
        byte, bits = int(pointer.offset[thread]), pointer.mem.bits
        if n <= 0 or n % 16 or at % 16 or byte % 16:
            raise AssertionError(
                f"{what} of {n} bytes, shared offset {at}, global byte "
                f"{byte}: not a positive multiple of 16 between 16-byte "
                "aligned addresses")
        if not (0 <= at <= wg.smem.size - n and 0 <= byte // 2
                and byte // 2 + n // 2 <= bits.size):
            raise AssertionError(
                f"{what} of {n} bytes, shared offset {at}, global byte "
                f"{byte} of a buffer of {bits.size} elements: outside them")
        yield thread, n, at, bits, byte // 2


def _bulk_load(wg, op, x, smem_base):
    if "multicast_mask" in op.attrs or "l2_cache_hint" in op.attrs:
        raise NotImplementedError("bulk copies with multicast or a hint")
    dst, src, bar, size = x[0], x[1], x[2], x[3]
    for thread, n, at, bits, first in _bulk_copies(wg, op, dst, src, size,
                                                   smem_base):
        data = np.asarray(bits[first:first + n // 2]).astype("<u2")
        wg.smem[at:at + n] = data.view(np.uint8)
        barrier = wg._barrier(int(bar[thread]))
        barrier["tx"] -= n
        wg.cta.version += 1
        wg._complete(barrier)
    return None


def _bulk_store(wg, op, x, smem_base):
    if "l2_cache_hint" in op.attrs or "byte_mask" in op.attrs:
        raise NotImplementedError("bulk copies with a cache hint or mask")
    dst, src, size = x[0], x[1], x[2]
    counts = wg.__dict__.setdefault("bulk", {"uncommitted": 0, "groups": []})
    for _, n, at, bits, first in _bulk_copies(wg, op, src, dst, size,
                                              smem_base):
        if wg.cta.generic_writes[at:at + n].max(initial=0) > wg.fenced:
            raise AssertionError(
                "a bulk copy reads shared memory written through the generic "
                "proxy (stmatrix) after the warpgroup's last "
                "fence.proxy.async")
        data = wg.smem[at:at + n].copy().view("<u2")
        bits[first:first + n // 2] = data.astype(bits.dtype)
        counts["uncommitted"] += 1
    return None
