# REQUIRES: torch
# RUN: %PYTHON %s
# With torch-mlir, the same on modules exported now:
# RUN: %PYTHON %s --reexport
"""Real frontends, end to end: each module of Inputs/modules.py (SDPA with
GQA and a sigmoid gate, the paper's headwise / shared / additive gates,
SiLU, HF transformers' Qwen3NextAttention, a block with a GELU
feed-forward after the gated attention, HF's eager attention with its
finfo.min mask, the paper's headwise gate in [B, S, H, D], nanoGPT-style
masked_fill on a computed or a buffered triangle, GPT-2's bool buffer) exported by torch-mlir's FX
importer (checked in as Inputs/<name>.mlir; --reexport exports afresh),
raised by --gated-attention-raise into one gated_attention.attention
carrying its gate (nothing of the unfused softmax left), compiled by
--gated-attention-to-llvm and run: the result matches the torch module run
in float64."""

import os
import re
import sys

import numpy as np
import torch

from gated_attention import native, runner

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "Inputs"))
import modules  # noqa: E402

# name -> what the raised op must say: its gate operand, attributes.
EXPECTED = {
    "sdpa_gqa": ("%arg3", "causal"),
    "headwise": ("1x4x16x1xf32", "causal"),
    "shared": ("1x1x16x32xf32", "causal"),
    "additive": ("%arg3", "combine = #gated_attention.combine<add>"),
    "silu": ("%arg3", "gate = #gated_attention.gate<silu>"),
    "qwen3_next": ("1x4x16x32xf32", "causal"),
    "einsum": ("%arg3", "scale"),
    "gelu_block": ("%arg3", "causal"),
    "eager": ("1x4x16x32xf32", "causal"),
    "paper_headwise": ("1x4x16x1xf32", "causal"),
    "masked_fill": ("%arg3", "causal"),
    "buffer_mask": ("%arg3", "causal"),
    "gpt2_mask": ("%arg3", "causal"),
    "top_left": None,   # not the op's mask: not raised
}



def check_raised(name, ops, raised):
    assert len(ops) == 1, (name, ops)
    operands, attrs = EXPECTED[name]
    # Four operands: the gate was folded in, with its activation.
    assert ops[0].count("%") == 4, (name, ops[0])
    # 1/sqrt(D) in f32, to an ulp: torch divides by sqrt(D) where SDPA
    # multiplies by its inverse.
    scale = float(re.search(r"scale = ([0-9.e+-]+)", ops[0]).group(1))
    assert attrs in ops[0] and abs(scale * 32 ** 0.5 - 1) < 2e-7, \
        (name, ops[0])
    assert operands in ops[0] or operands in raised, (name, ops[0])
    for unfused in ("linalg.batch_matmul", "math.exp", "linalg.softmax"):
        assert unfused not in raised, (name, unfused)


reexport = "--reexport" in sys.argv
if reexport:
    try:
        import torch_mlir  # noqa: F401
    except ImportError:
        print("no torch-mlir here: nothing re-exported")
        sys.exit(0)

for name in sorted(modules.MODULES):
    if reexport:
        text = modules.export(name)
    else:
        with open(os.path.join(HERE, "Inputs", name + ".mlir")) as f:
            text = f.read()
    raised = runner.compile_module(text, ["--gated-attention-raise",
                                          "--canonicalize"])
    ops = re.findall(r"gated_attention\.attention .*", raised)
    if EXPECTED[name] is None:
        assert not ops, (name, ops)
        ops = ["(not raised)"]
    else:
        check_raised(name, ops, raised)

    module, args = modules.MODULES[name]()
    with torch.no_grad():
        expected = module.double()(*(a.double() for a in args)).numpy()
    text = re.sub(r"(func\.func @forward\([^)]*\) -> [^{]*)\{",
                  r"\1attributes {llvm.emit_c_interface} {", text, count=1)
    lib = native.SharedLibrary(text, ("--gated-attention-to-llvm",),
                               openmp=True)
    out = lib.call("forward", [a.float().numpy() for a in args],
                   expected.ndim, np.float32)
    err = np.abs(out - expected).max()
    # f32 through projections, norms and the fused kernel, O(1) values.
    assert err < 2e-4, (name, err)
    print(f"{name}: {ops[0][:60]}, max |err| {err:.2e}")
print("frontends: ok")
