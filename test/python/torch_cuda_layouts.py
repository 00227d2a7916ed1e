# REQUIRES: torch
# RUN: %PYTHON %s
"""Which tensors the torch op's CUDA path hands to the kernel as they are
and which it copies first (checked here on CPU tensors, which have the same
strides and addresses; the launch itself is the device check's): q and the
gate as halves of one [B, S, H, 2D] projection, [B, S, H, D] tensors and
broadcast (stride 0) dims go in place; a strided last dim, overlapping
rows and rows not aligned for the kernel's 16-byte copies are copied.
Strides are (B, H, S) of the [B, H, S, D] view; a dim of size 1 has B and
H stride 0 and S stride the row's width (so a decode step, Sq = 1, needs
no kernel of its own). The layouts' row strides compile kernels that the
emulator runs in test/Integration/Emulated/strided.py."""

import torch

from gated_attention import config
from gated_attention.testing import emulate
from gated_attention.torch._cuda import packed_rows, readable, strides_of

cfg = config.parse_cases("dtype=bf16,d=64,dv=64,hq=4,hkv=2,sq=32,skv=32")[0]
_, desc = emulate.compile_case(cfg)
assert desc["version"] == 4 and desc["layout"] == "dense"

# [q | gate] per head: [B, S, H, 2D] split, seen as [B, H, S, D].
proj = torch.zeros(2, 32, 4, 128, dtype=torch.bfloat16)
q = proj[..., :64].transpose(1, 2)
g = proj[..., 64:].transpose(1, 2)
for name, x in (("q", q), ("gate", g)):
    assert readable(desc, name, x) is x, name
assert strides_of(q) == {"B": 32 * 4 * 128, "H": 128, "S": 4 * 128}
assert g.data_ptr() - proj.data_ptr() == 64 * 2

# [B, S, H, D] K; a K broadcast over the batch (stride 0).
k = torch.zeros(2, 32, 2, 64, dtype=torch.bfloat16).transpose(1, 2)
assert readable(desc, "k", k) is k
kb = torch.zeros(1, 2, 32, 64, dtype=torch.bfloat16).expand(2, 2, 32, 64)
assert readable(desc, "k", kb) is kb and strides_of(kb)["B"] == 0
# A dim of size 1 is never stepped over, whatever stride torch put there.
assert strides_of(torch.zeros(1, 2, 1, 64).as_strided(
    (1, 2, 1, 64), (7, 64, 3, 1))) == {"B": 0, "H": 64, "S": 64}

# Copied: a strided last dim; rows 68 elements (136 bytes) apart; a start
# 2 bytes past an aligned address.
strided_d = torch.zeros(2, 4, 32, 128, dtype=torch.bfloat16)[..., ::2]
odd_rows = torch.zeros(2, 4, 32, 68, dtype=torch.bfloat16)[..., :64]
shifted = torch.zeros(2 * 4 * 32 * 64 + 8, dtype=torch.bfloat16)[1:][
    :2 * 4 * 32 * 64].view(2, 4, 32, 64)
overlapping = torch.zeros(2 * 4 * 40 * 8, dtype=torch.bfloat16).as_strided(
    (2, 4, 32, 64), (4 * 40 * 8, 40 * 8, 8, 1))
for x in (strided_d, odd_rows, shifted, overlapping):
    y = readable(desc, "q", x)
    assert y is not x and y.is_contiguous() and torch.equal(x, y)
# The gate needs 4 bytes only: rows 66 elements apart are read in place.
g66 = torch.zeros(2, 4, 32, 66, dtype=torch.bfloat16)[..., :64]
assert readable(desc, "gate", g66) is g66

# Whole launches: Qwen3-Next's layout (q | gate halves, [B, S, H, D] K, V
# and output) goes in place with rows (2D, H*D...) to compile for; K and V
# laid out differently (D = Dv) are both made contiguous.
from gated_attention.torch._cuda import plan

qwen = config.parse_cases("dtype=bf16,d=64,dv=64,hq=4,hkv=2,sq=32,skv=32")[0]
kk = torch.zeros(2, 32, 2, 64, dtype=torch.bfloat16).transpose(1, 2)
vv = torch.zeros(2, 32, 2, 64, dtype=torch.bfloat16).transpose(1, 2)
out = torch.empty(2, 32, 4, 64, dtype=torch.bfloat16).transpose(1, 2)
buffers, strides, rows = plan(desc, qwen, q, kk, vv, g, out)
assert all(buffers[n] is x for n, x in (("q", q), ("k", kk), ("v", vv),
                                        ("gate", g), ("out", out)))
assert rows == {"q": 512, "gate": 512, "k": 128, "v": 128, "out": 256}, rows
assert strides["k"] == strides["v"] == {"B": 32 * 128, "H": 64, "S": 128}
vc = torch.zeros(2, 2, 32, 64, dtype=torch.bfloat16)
buffers, strides, rows = plan(desc, qwen, q, kk, vc, None, out)
assert buffers["k"] is not kk and buffers["k"].is_contiguous()
assert buffers["v"] is vc and "gate" not in buffers
assert rows == {"q": 512, "out": 256}, rows
# Row-major everything: the row-major kernel.
row_major = [torch.zeros(2, h, 32, 64, dtype=torch.bfloat16)
             for h in (4, 2, 2, 4, 4)]
assert plan(desc, qwen, *row_major)[2] == {}

# A decode step (Sq = 1) runs split-KV when its gate and output are packed
# [B x H, W] rows, as the merge kernel reads and writes them: the output in
# either layout and a separate gate are; q's gate half of a projection is
# not (it keeps the one-kernel launch).
out = torch.zeros(2, 4, 1, 64, dtype=torch.bfloat16)
assert packed_rows(out) and packed_rows(out.transpose(1, 2).contiguous()
                                        .transpose(1, 2))
proj = torch.zeros(2, 1, 4, 128, dtype=torch.bfloat16)
assert not packed_rows(proj[..., 64:].transpose(1, 2))
assert not packed_rows(torch.zeros(2, 4, 2, 64))   # not a decode step
assert packed_rows(torch.zeros(1, 1, 1, 64))
print("torch CUDA layouts: ok")
