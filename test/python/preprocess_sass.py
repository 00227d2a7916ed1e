# RUN: %PYTHON %s %gated_attention_src_root
# bench/preprocess_sass.py's reading of SASS, on a listing written by hand
# (no ptxas needed): a valid row's path skips a predicated EXIT, takes a
# reciprocal's fast path (not the slow-path call), runs the guarded store
# and takes a loop's back edge as often as its counter says (bound over
# step); the sectors a warp access touches follow the lanes' layout.
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "bench"))
import preprocess_sass  # noqa: E402

LISTING = """
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/               @P0 EXIT ;
        /*0020*/                   MOV R17, RZ ;
.L_x_3:
        /*0030*/                   LDG.E.U16 R20, desc[UR10][R20.64] ;
        /*0040*/                   ISETP.GT.U32.AND P0, PT, R0, 0x1ffffff, PT ;
        /*0050*/               @P0 BRA `(.L_x_1) ;
        /*0060*/                   MOV R0, R23 ;
        /*0070*/                   MOV R2, 0x90 ;
        /*0080*/                   CALL.REL.NOINC `($slowpath) ;
        /*0090*/                   BRA `(.L_x_2) ;
.L_x_1:
        /*00a0*/                   MUFU.RCP R0, R23 ;
.L_x_2:
        /*00b0*/                   STG.E.U16 desc[UR10][R22.64], R2 ;
        /*00c0*/                   IADD3 R17, P0, R17, 0x2, RZ ;
        /*00d0*/                   ISETP.NE.U32.AND P0, PT, R17, 0x8, PT ;
        /*00e0*/               @P0 BRA `(.L_x_3) ;
        /*00f0*/              @!P1 BRA `(.L_x_4) ;
        /*0100*/                   STG.E desc[UR10][R14.64], R16 ;
.L_x_4:
        /*0110*/                   EXIT ;
        /*0120*/                   RET.REL.NODEC R20 `(k) ;
"""

insns, labels = preprocess_sass.parse_sass(LISTING)
assert len(insns) == 19 and labels[".L_x_3"] == 3, (len(insns), labels)
path = preprocess_sass.walk(insns, labels)
# 3 before the loop; 4 trips of LDG, ISETP, BRA, MUFU.RCP, STG, IADD3,
# ISETP, BRA; then the guard, the store and EXIT.
assert len(path) == 3 + 4 * 8 + 3, path
assert sum(t.startswith("MUFU.RCP") for t in path) == 4
assert not any("CALL" in t for t in path)
assert sum(t.startswith(("LDG", "STG")) for t in path) == 4 * 2 + 1
assert path[-1] == "EXIT"

# A thread a row of 128 bf16 columns: 32 rows, a sector each.
assert preprocess_sass.sectors(2, 1, 256, 32) == 32
# 16 lanes of 16 bytes a row, 2 rows a warp: 16 whole sectors.
assert preprocess_sass.sectors(16, 16, 256, 2) == 16
# D: 4 bytes a row, rows adjacent: 32 rows in 4 sectors.
assert preprocess_sass.sectors(4, 1, 4, 32) == 4
print("ok")
