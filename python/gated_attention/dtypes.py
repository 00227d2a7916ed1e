"""Element types of the op: rounding from float64 and raw little-endian bits."""

import numpy as np

DTYPES = ("f32", "f16", "bf16")

# Tolerances of a result against the float64 reference computed on the same
# (rounded) inputs: |out - ref| <= atol + rtol * |ref|. f32 covers f32
# accumulation and the 6 significant digits printMemrefF32 writes; f16 and
# bf16 cover one rounding of the result (half an ulp: 2^-11 and 2^-8).
TOLERANCES = {
    "f32": (2e-5, 2e-5),
    "f16": (1e-3, 1e-3),
    "bf16": (8e-3, 8e-3),
}


def _bf16_bits(x):
    """Rounds values to bf16 (nearest even, through f32, as hardware
    converts f32 to bf16); returns uint16 bits."""
    f = np.atleast_1d(np.asarray(x, dtype=np.float32))
    bits = f.view(np.uint32).astype(np.uint64)
    sixteen = np.uint64(16)
    rounded = (bits + np.uint64(0x7FFF) + ((bits >> sixteen) & np.uint64(1))) >> sixteen
    return rounded.astype(np.uint16).reshape(np.shape(x))


def round_to(x, dtype):
    """Rounds float64 values to `dtype`; returns them as float64."""
    x = np.asarray(x, dtype=np.float64)
    if dtype == "f32":
        return x.astype(np.float32).astype(np.float64)
    if dtype == "f16":
        return x.astype(np.float16).astype(np.float64)
    if dtype == "bf16":
        bits = np.atleast_1d(_bf16_bits(x)).astype(np.uint32) << np.uint32(16)
        return bits.view(np.float32).astype(np.float64).reshape(x.shape)
    raise ValueError(f"unknown element type {dtype!r}")


def to_bits(x, dtype):
    """Raw uint16 bits of values in f16 or bf16 (rounded to nearest even)."""
    if dtype == "bf16":
        return _bf16_bits(x)
    if dtype == "f16":
        return np.asarray(x, dtype=np.float32).astype(np.float16).view(np.uint16)
    raise ValueError(f"{dtype!r} is not a 16-bit element type")


def from_bits(bits, dtype):
    """float32 values of raw uint16 f16 or bf16 bits."""
    bits = np.asarray(bits, dtype=np.uint16)
    if dtype == "bf16":
        return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
    if dtype == "f16":
        return bits.view(np.float16).astype(np.float32)
    raise ValueError(f"{dtype!r} is not a 16-bit element type")


def from_bytes(raw, dtype, shape):
    """float64 values of little-endian raw bytes in `dtype`."""
    if dtype == "f32":
        values = np.frombuffer(raw, "<f4")
    else:
        values = from_bits(np.frombuffer(raw, "<u2"), dtype)
    return values.astype(np.float64).reshape(shape)


def to_bytes(x, dtype):
    """Little-endian raw bytes of `x` (already representable) in `dtype`."""
    x = np.asarray(x, dtype=np.float64)
    if dtype == "f32":
        return x.astype("<f4").tobytes()
    if dtype in ("f16", "bf16"):
        return to_bits(x, dtype).astype("<u2").tobytes()
    raise ValueError(f"unknown element type {dtype!r}")
