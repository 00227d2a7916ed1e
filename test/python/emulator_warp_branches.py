# RUN: %PYTHON %s
# The mma.sync emulator (gated_attention.testing.cta) runs a CTA's threads
# in lockstep under a mask. A warp-collective op (ldmatrix, mma.sync) needs
# its warp converged, not the whole CTA: under a branch uniform per warp
# (the dK/dV kernel's column-split pairs, one warp computing S^T and the
# other dP^T) it runs; under one that splits a warp it is an error. An f32
# view of shared memory (where the pairs trade the products) holds values.
from types import SimpleNamespace

import numpy as np

from gated_attention.testing.cta import CTA

cta = CTA(SimpleNamespace(regions=[SimpleNamespace(args=[])]), 128, (0, 0, 0),
          (1, 1, 1), [], 1024)

# Warps 1 and 3 active: allowed.
cta.mask = np.repeat(np.array([False, True, False, True]), 32)
cta._collective()
cta.mask = np.ones(128, dtype=bool)
cta._collective()

# Half of warp 2 active: rejected.
cta.mask = np.zeros(128, dtype=bool)
cta.mask[64:80] = True
try:
    cta._collective()
except AssertionError as e:
    assert "divergent" in str(e)
else:
    raise AssertionError("a branch inside a warp held a collective")


def op(name, operands, types, attrs=""):
    return SimpleNamespace(name=name, operands=operands, types=types,
                           attrs=attrs, results=["r"])


cta.mask = np.ones(128, dtype=bool)
cta.env = {"smem": "smem", "off": np.int64(512),
           "i": np.arange(128, dtype=np.int64),
           "v": (np.arange(128) * 0.25 + 1e-3).astype(np.float32)}
view = cta.op(op("memref.view", ["smem", "off"],
                 "(memref<?xi8, 3>, index) -> memref<128xf32, 3>"))
cta.env["x"] = view
cta.op(op("memref.store", ["v", "x", "i"], "(f32, memref<128xf32, 3>, index) -> ()"))
got = cta.op(op("memref.load", ["x", "i"], "(memref<128xf32, 3>, index) -> f32"))
assert got.dtype == np.float32 and np.array_equal(got, cta.env["v"]), got
# The values sit at the view's bytes: 512 onwards, 4 bytes each.
assert np.array_equal(cta.smem[512:1024].view(np.float32), cta.env["v"])
print("ok")
