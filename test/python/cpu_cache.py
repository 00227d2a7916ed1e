# RUN: %PYTHON %s
"""The numpy entry points' CPU kernels are kept in the disk cache
(kernel_cache), like the torch op's: a process compiles ga.attention,
ga.CpuAttention and ga.paged_attention once, another process running the
same calls does not run the tool at all (a stand-in for it counts its
runs) and gets the same results; without a disk cache every process
compiles."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

from gated_attention import runner

WORKER = r"""
import json, sys
import numpy as np
import gated_attention as ga
rng = np.random.default_rng(1)
q, g = rng.standard_normal((1, 4, 5, 16)), rng.standard_normal((1, 4, 5, 16))
k, v = rng.standard_normal((1, 2, 7, 16)), rng.standard_normal((1, 2, 7, 16))
dense = ga.attention(q, k, v, g, causal=True)
cpu = ga.CpuAttention(ga.config_for(q, k, v, causal=True))(q, k, v)
pages = rng.standard_normal((2, 16, 2, 16))
paged = ga.paged_attention(q[0].transpose(1, 0, 2), pages, pages,
                           [[1, 0]], [20], [0, 5], gate="silu",
                           g=g[0].transpose(1, 0, 2))
print(json.dumps([float(np.asarray(x, np.float64).sum())
                  for x in (dense, cpu, paged)]))
"""

with tempfile.TemporaryDirectory() as tmp:
    # The tool, through a script that counts its runs; llvm-paths.json
    # beside it as beside the real one (the LLVM tools it was built with).
    real = shutil.which(runner.opt_path()) or runner.opt_path()
    os.makedirs(os.path.join(tmp, "bin"))
    os.makedirs(os.path.join(tmp, "share", "gated-attention"))
    shutil.copy(os.path.join(os.path.dirname(os.path.realpath(real)), "..",
                             "share", "gated-attention", "llvm-paths.json"),
                os.path.join(tmp, "share", "gated-attention"))
    runs = os.path.join(tmp, "runs")
    tool = os.path.join(tmp, "bin", "gated-attention-opt")
    with open(tool, "w") as f:
        f.write(f"#!/bin/sh\necho run >> '{runs}'\nexec '{real}' \"$@\"\n")
    os.chmod(tool, 0o755)

    def process(cache):
        """(the tool's runs, the results) of a process running WORKER."""
        open(runs, "w").close()
        env = dict(os.environ, GATED_ATTENTION_OPT=tool,
                   GATED_ATTENTION_CACHE_DIR=cache)
        proc = subprocess.run([sys.executable, "-c", WORKER], env=env,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        with open(runs) as f:
            return len(f.readlines()), json.loads(proc.stdout)

    cache = os.path.join(tmp, "cache")
    first, expected = process(cache)
    assert first == 3, first   # one compile per kernel (two dense, paged)
    entries = [f for f in os.listdir(cache) if f.endswith(".so")]
    assert len(entries) == 3, entries
    again, results = process(cache)
    assert again == 0 and results == expected, (again, results, expected)
    print("PASS a second process runs no compile")
    off, results = process("off")
    assert off == 3 and results == expected, (off, results)
    print("PASS without a disk cache every process compiles")
print("cpu cache: ok")
