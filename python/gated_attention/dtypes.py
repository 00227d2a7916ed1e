"""Element types of the op: rounding from float64, raw little-endian bits,
the numpy types results come back in, and each type's floating-point
parameters. f64 is the CPU's reference-precision type: the op accumulates
in f64 there (the wider of f32 and the element type, ACCUMULATOR), which
is what gradient checks by finite differences need."""

import numpy as np

DTYPES = ("f32", "f16", "bf16", "f64")
# The type each element type's sums are accumulated in and the
# log-sum-exp is kept in (the dialect's getAccumulatorType).
ACCUMULATOR = {"f32": "f32", "f16": "f32", "bf16": "f32", "f64": "f64"}

# Unit roundoff (half an ulp of 1: round to nearest), the smallest positive
# (subnormal) value and the largest finite value of each element type.
UNIT_ROUNDOFF = {"f32": 2.0**-24, "f16": 2.0**-11, "bf16": 2.0**-8,
                 "f64": 2.0**-53}
SMALLEST_SUBNORMAL = {"f32": 2.0**-149, "f16": 2.0**-24, "bf16": 2.0**-133,
                      "f64": 2.0**-1074}
LARGEST = {"f32": float(np.finfo(np.float32).max), "f16": 65504.0,
           "bf16": (2.0 - 2.0**-7) * 2.0**127,
           "f64": float(np.finfo(np.float64).max)}

# Tolerances of a result against the float64 reference when the inputs are
# unknown (|out - ref| <= atol + rtol * |ref|); with them, comparisons use
# accuracy.error_bound, derived from an error model.
TOLERANCES = {
    "f32": (2e-5, 2e-5),
    "f16": (1e-3, 1e-3),
    "bf16": (8e-3, 8e-3),
    "f64": (1e-12, 1e-12),
}


def check_dtype(dtype):
    """Raises ValueError unless `dtype` is an element type of the op."""
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; valid: "
                         f"{', '.join(DTYPES)}")
    return dtype


def arithmetic_unit(dtype):
    """The unit roundoff of the arithmetic inside the op for element type
    `dtype`: its accumulator type's (2^-24; 2^-53 for f64)."""
    return UNIT_ROUNDOFF[ACCUMULATOR[check_dtype(dtype)]]


def numpy_dtype(dtype):
    """The numpy dtype of results in element type `dtype`: float32,
    float64, float16, or ml_dtypes.bfloat16 (PyPI's ml_dtypes, imported here on first
    use so that the rest of the package works without it)."""
    check_dtype(dtype)
    if dtype == "f32":
        return np.dtype(np.float32)
    if dtype == "f64":
        return np.dtype(np.float64)
    if dtype == "f16":
        return np.dtype(np.float16)
    try:
        import ml_dtypes
    except ImportError:
        raise ImportError(
            "dtype='bf16' results are ml_dtypes.bfloat16 arrays and the "
            "ml_dtypes package is not installed: `pip install ml_dtypes` "
            "(scripts/setup installs it into the repository's .venv; run "
            "with .venv/bin/python), or use dtype='f16' or 'f32'") from None
    return np.dtype(ml_dtypes.bfloat16)


def from_bits_as(bits, dtype):
    """Raw uint16 bits of f16 or bf16 values as an array of numpy_dtype
    (exact: a reinterpretation, no rounding)."""
    return np.asarray(bits, dtype=np.uint16).view(numpy_dtype(dtype))


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
    if dtype == "f64":
        return x.copy()
    if dtype == "f32":
        return x.astype(np.float32).astype(np.float64)
    if dtype == "f16":
        return x.astype(np.float16).astype(np.float64)
    if dtype == "bf16":
        bits = np.atleast_1d(_bf16_bits(x)).astype(np.uint32) << np.uint32(16)
        return bits.view(np.float32).astype(np.float64).reshape(x.shape)
    raise ValueError(f"unknown element type {dtype!r}")


def to_bits(x, dtype):
    """Raw uint16 bits of values in f16 or bf16 (rounded to nearest even);
    a view, not a conversion, of an array already in that type (numpy's
    float16, ml_dtypes' bfloat16): a serving engine's cache is."""
    a = np.asarray(x)
    if a.dtype.itemsize == 2 and a.dtype.kind in "fV" and \
            a.dtype.name == {"bf16": "bfloat16", "f16": "float16"}.get(dtype):
        return a.view(np.uint16)
    if dtype == "bf16":
        return _bf16_bits(x)
    if dtype == "f16":
        return np.asarray(x, dtype=np.float32).astype(np.float16).view(np.uint16)
    raise ValueError(f"{dtype!r} is not a 16-bit element type")


def storage_type(dtype):
    """The numpy type a compiled CPU kernel's buffers hold for `dtype`:
    float32, float64, or the raw uint16 bits of f16 / bf16."""
    return {"f32": np.float32, "f64": np.float64}.get(dtype, np.uint16)


def kernel_operand(x, dtype):
    """`x` as a compiled CPU kernel takes it (storage_type(dtype))."""
    if dtype in ("f32", "f64"):
        return np.asarray(x, storage_type(dtype))
    return to_bits(x, dtype)


def kernel_result(raw, dtype):
    """A compiled CPU kernel's result (storage_type(dtype)) as an array of
    numpy_dtype(dtype)."""
    return raw if dtype in ("f32", "f64") else from_bits_as(raw, dtype)


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
    if dtype in ("f32", "f64"):
        values = np.frombuffer(raw, "<f4" if dtype == "f32" else "<f8")
    else:
        values = from_bits(np.frombuffer(raw, "<u2"), dtype)
    return values.astype(np.float64).reshape(shape)


def to_bytes(x, dtype):
    """Little-endian raw bytes of `x` (already representable) in `dtype`."""
    x = np.asarray(x, dtype=np.float64)
    if dtype in ("f32", "f64"):
        return x.astype("<f4" if dtype == "f32" else "<f8").tobytes()
    if dtype in ("f16", "bf16"):
        return to_bits(x, dtype).astype("<u2").tobytes()
    raise ValueError(f"unknown element type {dtype!r}")
