# RUN: rm -rf %t && mkdir -p %t && %PYTHON %s %gated_attention_src_root %t
# bench/sass_report.py's reading of SASS, on a listing written by hand (no
# ptxas needed): the steady-state iteration is the shortest path through the
# HGMMA loop that issues every HGMMA (the masked branch and the mbarrier
# retry stub after EXIT left out), its keys the P.V HGMMAs' K extent, the
# tail runs from the wait that retires the P.V group around the back edge
# to the next Q.K^T HGMMA, the epilogue is the longest path to the final
# EXIT that avoids the reciprocal's slow-path call; --max-per-key and
# --max-tail fail above their bounds.
import os
import subprocess
import sys

src, tmp = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(src, "bench"))
import sass_report  # noqa: E402

LISTING = """
.text.k:
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_1:
        /*0010*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R2+URZ], R3 ;
        /*0020*/              @!P0 BRA `(.L_x_5) ;
.L_x_6:
        /*0030*/                   IADD3 R4, R4, 0x1, RZ ;
        /*0040*/                   WARPGROUP.ARRIVE ;
        /*0050*/                   HGMMA.64x64x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT ;
        /*0060*/                   HGMMA.64x64x16.F32.BF16 R24, gdesc[UR8], R24, gsb0 ;
        /*0070*/                   WARPGROUP.ARRIVE ;
        /*0080*/                   HGMMA.64x128x16.F32.BF16 R88, R152, gdesc[UR12].tnspB, R88 ;
        /*0090*/                   HGMMA.64x128x16.F32.BF16 R88, R156, gdesc[UR12].tnspB, R88, gsb0 ;
        /*00a0*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;
        /*00b0*/                   MUFU.EX2 R5, R5 ;
        /*00c0*/               @P1 BRA `(.L_x_2) ;
        /*00d0*/                   FSEL R6, R6, -INF , P2 ;
        /*00e0*/                   FSEL R7, R7, -INF , P2 ;
.L_x_2:
        /*00f0*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0100*/                   MUFU.EX2 R8, R8 ;
        /*0110*/                   FMUL R9, R9, R10 ;
        /*0120*/                   UIADD3 UR4, UR4, 0x80, URZ ;
        /*0130*/               @P3 BRA `(.L_x_1) ;
        /*0140*/                   FADD R0, R0, R1 ;
        /*0150*/               @P4 BRA `(.L_x_3) ;
        /*0160*/                   MOV R0, R5 ;
        /*0170*/                   CALL.REL.NOINC `($__internal_0_$__cuda_sm20_rcp_rn_f32_slowpath) ;
        /*0180*/                   BRA `(.L_x_4) ;
.L_x_3:
        /*0190*/                   MUFU.RCP R0, R5 ;
        /*01a0*/                   FFMA R2, R5, R0, -1 ;
.L_x_4:
        /*01b0*/               @P5 EXIT ;
        /*01c0*/                   STG.E desc[UR8][R4.64], R0 ;
        /*01d0*/                   EXIT ;
.L_x_5:
        /*01e0*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R2+URZ], R3 ;
        /*01f0*/              @!P0 BRA `(.L_x_5) ;
        /*0200*/                   BRA `(.L_x_6) ;
"""

r = sass_report.analyze(LISTING)
expected = dict(kernel="k", instructions=33, keys=32, total=17, masked=19,
                tail=8, ex2_before=1, ex2=2, mufu=2, fmul=1, ffma=0, fadd=0,
                int_vector=1, int_uniform=1, epilogue=7,
                qk_hgmma="HGMMA.64x64x16.F32.BF16")
for key, value in expected.items():
    assert r[key] == value, (key, r[key], value)

path = os.path.join(tmp, "k.sass")
with open(path, "w") as f:
    f.write(LISTING)
script = os.path.join(src, "bench", "sass_report.py")


def report(bound, flag="--max-per-key"):
    return subprocess.run(
        [sys.executable, script, "--case", "d128", "--sass", f"d128={path}",
         flag, f"d128={bound}"], capture_output=True, text=True)


ok = report(0.54)   # 17 instructions / 32 keys = 0.53
assert ok.returncode == 0, ok.stdout + ok.stderr
assert "| **instructions per key** | **0.53** | **3.30** |" in ok.stdout, \
    ok.stdout
assert "PASS: d128 instructions per key 0.53 <= 0.54" in ok.stdout
low = report(0.5)
assert low.returncode == 1, low.stdout + low.stderr
assert "FAIL: d128 instructions per key 0.53 > 0.5" in low.stdout
# The serial tail: 8 instructions.
ok = report(8, "--max-tail")
assert ok.returncode == 0, ok.stdout + ok.stderr
assert "PASS: d128 serial tail 8 <= 8" in ok.stdout, ok.stdout
low = report(7, "--max-tail")
assert low.returncode == 1, low.stdout + low.stderr
assert "FAIL: d128 serial tail 8 > 7" in low.stdout, low.stdout
print("sass_report: ok")
