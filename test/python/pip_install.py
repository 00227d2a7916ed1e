# RUN: %PYTHON %s
"""`pip install ./python`: the wheel holds the package (the user API, the
torch op, the testing tools apart in gated_attention.testing) and, installed
elsewhere and imported with no environment pointing at the repository, it
finds this build's tool (recorded at install time) and the LLVM that built
it (CMake's llvm-paths.json beside the tool), and runs the op."""

import glob
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

CHECK = r"""
import numpy as np, os, sys
import gated_attention as ga
from gated_attention import runner
assert ga.__file__.startswith(sys.argv[1]), ga.__file__
print(runner.opt_path())
q = np.random.default_rng(0).standard_normal((1, 2, 5, 16))
y = ga.attention(q, q[:, :1], q[:, :1], causal=True)
ref = ga.attention_reference(q, q[:, :1], q[:, :1], causal=True)
assert np.abs(y - ref).max() < 1e-5
import gated_attention.testing.emulate, gated_attention.torch
"""

with tempfile.TemporaryDirectory() as tmp:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "-w", tmp,
                    os.path.join(ROOT, "python")], check=True)
    wheel, = glob.glob(os.path.join(tmp, "gated_attention-*.whl"))
    site = os.path.join(tmp, "site")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--target", site, wheel], check=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GATED_ATTENTION", "MLIR_", "LIBOMP"))}
    env["PYTHONPATH"] = site
    env["PATH"] = "/usr/bin:/bin"
    out = subprocess.run([sys.executable, "-c", CHECK, site], cwd=tmp,
                         env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    opt = out.stdout.split()[0]
    assert opt == os.path.realpath(os.path.join(
        ROOT, "build", "bin", "gated-attention-opt")), opt
print("pip install: ok")
