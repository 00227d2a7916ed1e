"""The PTX ISA's sm_90a layouts the wgmma emulator (emulate_wgmma) reads
shared memory and registers through: the 128-byte swizzle, wgmma matrix
descriptors and the canonical K-major / MN-major operand layouts they
describe, and the accumulators' D layout."""

import numpy as np

SWIZZLE_128B = 1


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
