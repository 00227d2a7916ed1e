# RUN: %PYTHON %s %gated_attention_src_root
# bench/fma_peak.py builds its probe in a temporary directory that is gone
# once the process has exited (every benchmark run used to leave one in
# /tmp), and a run reports a positive figure.
import os
import subprocess
import sys

BENCH = os.path.join(sys.argv[1], "bench")
sys.path.insert(0, BENCH)
import fma_peak  # noqa: E402

if not fma_peak.widths():
    print("no AVX2 FMA here: nothing to measure")
    sys.exit(0)

child = subprocess.run(
    [sys.executable, "-c",
     "import sys; sys.path.insert(0, sys.argv[1]); import fma_peak; "
     "b = fma_peak.binary(); "
     "print(b); print(fma_peak.measure(1, fma_peak.widths()[0], repeat=1, "
     "seconds=0.01))", BENCH],
    capture_output=True, text=True, check=True)
path, gflops = child.stdout.split()
assert os.path.basename(os.path.dirname(path)).startswith("ga-fma-peak-"), path
assert not os.path.exists(os.path.dirname(path)), \
    f"{os.path.dirname(path)} outlived its process"
assert float(gflops) > 0, gflops
print("ok")
