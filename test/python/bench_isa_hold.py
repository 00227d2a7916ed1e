# REQUIRES: avx2
# RUN: %PYTHON %s %gated_attention_src_root
# bench/cpu_attention.py --isa avx2 holds every peer to AVX2. torch runs
# three libraries that each pick their own instructions (ATen, oneDNN, MKL);
# MKL's sgemm, which torch's f32 SDPA calls, took AVX-512 on an Intel Xeon
# until MKL_ENABLE_INSTRUCTIONS joined the hold. Checked by what MKL says it
# runs; and a held figure above the held FMA peak stops the run.
import os
import subprocess
import sys
import types

BENCH = os.path.join(sys.argv[1], "bench")
sys.path.insert(0, BENCH)
import cpu_attention  # noqa: E402

hold = cpu_attention.ISAS["avx2"]

# The guard: a held figure over the held width's peak is refused.
cpu_attention.ISA = hold
args = types.SimpleNamespace(fma_peak=100.0, isa="avx2")
assert cpu_attention.check_held(args, "torch", 104.0) == 104.0
try:
    cpu_attention.check_held(args, "torch", 120.0)
    raise AssertionError("a figure above the held peak was accepted")
except SystemExit as e:
    assert "not held to --isa avx2" in str(e), e
cpu_attention.ISA = cpu_attention.ISAS["native"]
assert cpu_attention.check_held(args, "torch", 500.0) == 500.0

# MKL under the hold, where torch is installed and has MKL.
probe = ("import torch; a = torch.ones(64, 64); "
         "print('mkl', torch.backends.mkl.is_available(), flush=True); "
         "torch.mm(a, a)")
env = dict(os.environ, MKL_VERBOSE="1", **hold["env"])
try:
    import torch  # noqa: F401
except ImportError:
    print("no torch: the MKL hold is not checked")
    sys.exit(0)
out = subprocess.run([sys.executable, "-c", probe], env=env,
                     capture_output=True, text=True, check=True).stdout
if "mkl True" not in out.splitlines():
    print("torch without MKL: nothing to hold")
    sys.exit(0)
banner = next((line for line in out.splitlines() if "oneMKL" in line), None)
assert banner, f"MKL_VERBOSE printed no banner:\n{out}"
assert "AVX2" in banner and "AVX-512" not in banner, banner
print("ok")
