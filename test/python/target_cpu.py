# REQUIRES: avx2
# RUN: %PYTHON %s
"""Code compiled for another CPU (--gated-attention-to-llvm's target-cpu):
native.SharedLibrary hands the CPU the pipeline names to llc, the object
then holds no instruction that CPU lacks, and it computes the right
values. Compiled for x86-64-v3 (any AVX2 machine) on whatever runs the
test: no 512-bit register, no AVX-512 register beyond the 16 of AVX2
(xmm/ymm16-31) and no mask register, in f32 and bf16 (bf16 on FMAs there),
within the error model."""

import re
import subprocess

import ml_dtypes
import numpy as np

from gated_attention import accuracy, config, mlir, native, reference, runner

# Which -mcpu a pipeline gives llc: its last target-cpu, host = native.
for pipeline, cpu in (
        (["--gated-attention-to-llvm"], "native"),
        (["--gated-attention-to-llvm=target-cpu=host"], "native"),
        (["--gated-attention-to-llvm=reference=1 target-cpu=znver4"], "znver4"),
        (["--pass-pipeline=builtin.module(gated-attention-to-llvm"
          "{openmp=0 target-cpu=x86-64-v3})"], "x86-64-v3"),
        (["--gated-attention-to-llvm=target-cpu=haswell",
          "--gated-attention-to-llvm=target-cpu=x86-64-v4"], "x86-64-v4")):
    assert native.target_cpu(pipeline) == cpu, (pipeline, cpu)
print("PASS target_cpu")

# native.host_matrix_units mirrors what matrix-units=host resolves to on this
# CPU (the accuracy models read it to know whether bf16 products flush
# subnormals): it must name what the pipeline runs.
dump = subprocess.run([runner.opt_path(), "--gated-attention-to-llvm",
                       "--dump-pass-pipeline", "-o", "/dev/null"],
                      input="", capture_output=True, text=True, check=True).stderr
resolved = re.search(r"gated-attention-vectorize-tiles\{[^}]*matrix-units=([\w-]+)",
                     dump).group(1)
assert resolved == native.host_matrix_units(), (resolved, native.host_matrix_units())
print(f"PASS host matrix units {resolved}")

AVX512_ONLY = re.compile(r"%zmm|%[xy]mm(1[6-9]|2[0-9]|3[01])\b|%k[0-7]\b")


def check(dtype, np_dtype):
    cfg = config.AttentionConfig(b=1, hq=4, hkv=2, sq=70, skv=90, d=64, dv=64,
                                 causal=True, dtype=dtype)
    text = mlir.attention_function(cfg, "attn", c_interface=True)
    lib = native.SharedLibrary(
        text, ["--gated-attention-to-llvm=target-cpu=x86-64-v3"], openmp=True)
    llvm_bin = runner.llvm_dirs()[0]
    asm = subprocess.run([f"{llvm_bin}/llvm-objdump", "-d", "--no-show-raw-insn",
                          lib.object_path], capture_output=True, text=True,
                         check=True).stdout
    assert "vfmadd" in asm, "no FMA in the object"
    bad = AVX512_ONLY.search(asm)
    assert bad is None, f"{dtype}: AVX-512 register {bad.group(0)} in code for x86-64-v3"
    rng = np.random.default_rng(7)
    x = {o: rng.standard_normal(cfg.shapes()[o]).astype(np_dtype)
         for o in mlir.OPERANDS}
    out = lib.call("attn", [x[o] for o in mlir.OPERANDS], 4, np_dtype)
    wide = {o: x[o].astype(np.float64) for o in x}
    ref = reference.gated_attention_reference(
        wide["query"], wide["key"], wide["value"], wide["gate"], causal=True)
    result = accuracy.compare(cfg, out, ref, wide)
    assert result.ok, (dtype, result)
    print(f"PASS x86-64-v3 {dtype} {accuracy.describe(result)}")


check("f32", np.float32)
check("bf16", ml_dtypes.bfloat16)
