# RUN: rm -rf %t && mkdir -p %t && %PYTHON %s %gated_attention_src_root %t
# bench/gpu_report.py: the README's GPU table and the plot come from the
# device check's CSVs, one per kernel; a kernel without a CSV has no column,
# the speedup is the best fused kernel's over SDPA + gate, and a README
# without the table's markers is an error that leaves it untouched.
import os
import subprocess
import sys

src, tmp = sys.argv[1], sys.argv[2]
HEAD = ("date,gpu,b,hq,hkv,s,d,causal,fused_ms,fused_tflops,fused_nogate_ms,"
        "fused_nogate_tflops,sdpa_then_gate_ms,sdpa_then_gate_tflops,sdpa_ms,"
        "sdpa_tflops,gate_cost_pct,speedup_vs_sdpa_then_gate")
mma = os.path.join(tmp, "gpu.csv")
with open(mma, "w") as f:   # a CSV from before the kernel column
    f.write(HEAD + "\n")
    f.write("2026-12-01,GPU X,1,16,2,16384,256,1,1,300.0,1,310.0,1,600.0,1,"
            "620.0,3.3,0.5\n")
    f.write("2026-12-01,GPU X,16,16,16,1024,128,0,1,250.0,1,280.0,1,450.0,1,"
            "580.0,12.0,0.55\n")
wgmma = os.path.join(tmp, "gpu-wgmma.csv")
with open(wgmma, "w") as f:
    f.write("date,gpu,kernel," + HEAD.split(",", 2)[2] + "\n")
    f.write("2026-12-01,GPU X,wgmma,1,16,2,16384,256,1,1,660.0,1,670.0,1,"
            "601.0,1,621.0,1.5,1.1\n")
readme = os.path.join(tmp, "README.md")
with open(readme, "w") as f:
    f.write("intro\n<!-- gpu-table:begin -->\nold\n<!-- gpu-table:end -->\n"
            "outro\n")
png = os.path.join(tmp, "gpu.png")
report = os.path.join(src, "bench", "gpu_report.py")
subprocess.run([sys.executable, report, mma, wgmma, "--readme", readme,
                "--png", png], check=True)
text = open(readme).read()
lines = text.splitlines()
assert lines[0] == "intro" and lines[-1] == "outro" and "old" not in lines
assert ("| D | causal | S | mma.sync fused | mma.sync no gate | wgmma fused "
        "| wgmma no gate |") in text, text
# 16k tokens first; baselines from the first CSV; 660 / 600 = 1.10.
assert "| 256, GQA 16/2 | yes | 16384 | 300.0 | 310.0 | 660.0 | 670.0 | " \
    "600.0 | 620.0 | 1.10 |" in text, text
# No wgmma row for the second shape: dashes, the ratio from mma.sync.
assert "| 128 | no | 1024 | 250.0 | 280.0 | – | – | 450.0 | 580.0 | 0.56 |" \
    in text, text
assert lines.index("| 128 | no | 1024 | 250.0 | 280.0 | – | – | 450.0 | "
                   "580.0 | 0.56 |") > lines.index(
    "| 256, GQA 16/2 | yes | 16384 | 300.0 | 310.0 | 660.0 | 670.0 | "
    "600.0 | 620.0 | 1.10 |")
with open(png, "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n"
# Without the markers: an error, the file unchanged.
plain = os.path.join(tmp, "plain.md")
with open(plain, "w") as f:
    f.write("no table here\n")
proc = subprocess.run([sys.executable, report, mma, "--readme", plain],
                      capture_output=True, text=True)
assert proc.returncode == 1 and "gpu-table:begin" in proc.stderr, proc
assert open(plain).read() == "no table here\n"
print("ok")
