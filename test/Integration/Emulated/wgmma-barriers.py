# RUN: %PYTHON %s
# The emulator's warpgroup scheduler and barrier model on small hand-written
# kernels (the kernel tests exercise them only as the kernel uses them):
# named barriers meet over their thread count or hang, a CTA must not exit
# with a barrier phase begun, and setmaxnreg must fit the CTA's register
# pool.
import numpy as np

from gated_attention import runner
from gated_attention.testing import emulate, emulate_wgmma

TEMPLATE = """
gpu.module @m {
  llvm.mlir.global external @gated_attention_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
  gpu.func @k() kernel {
    %tid = gpu.thread_id x
    %c128 = arith.constant 128 : index
    %wg = arith.divui %tid, %c128 : index
    %c0 = arith.constant 0 : index
    %first = arith.cmpi eq, %wg, %c0 : index
    %lead = arith.cmpi eq, %tid, %c0 : index
    %id = arith.constant 1 : i32
    %n = arith.constant 256 : i32
    %one = arith.constant 1 : i32
    %two = arith.constant 2 : i32
    %smem = llvm.mlir.addressof @gated_attention_smem : !llvm.ptr<3>
    BODY
    gpu.return
  }
}
"""


def run(body, threads=256, schedule=None):
    text = runner.compile_module(TEMPLATE.replace("BODY", body),
                                 ["--mlir-print-op-generic"])
    kernel = emulate.find_kernel(text, "k")
    emulate_wgmma.WgmmaCTA(kernel, threads, (0, 0, 0), (1, 1, 1), [],
                           1024, schedule=schedule).run()


def error(body, words, threads=256, kind=AssertionError):
    try:
        run(body, threads)
    except kind as e:
        assert words in str(e), (words, e)
        return
    raise AssertionError(f"no error for: {body}")


# Both warpgroups meet at barrier 1.
run("nvvm.barrier id = %id number_of_threads = %n")
# Warpgroup 0 arrives, warpgroup 1 waits: they meet.
run("""scf.if %first {
      nvvm.barrier.arrive id = %id number_of_threads = %n
    } else {
      nvvm.barrier id = %id number_of_threads = %n
    }""")
# The same under random interleavings (a waiter that is scheduled first,
# or last, or gives way).
for seed in range(8):
    run("""scf.if %first {
      nvvm.barrier.arrive id = %id number_of_threads = %n
    } else {
      nvvm.barrier id = %id number_of_threads = %n
    }""", schedule=seed)
# Only warpgroup 0 waits: 128 of 256 threads, forever.
error("""scf.if %first {
      nvvm.barrier id = %id number_of_threads = %n
    }""", "bar.sync 1, 256 (128 threads arrived)",
      kind=emulate_wgmma.MbarrierHang)
# An arrival nobody waits for: the CTA exits with a phase begun.
error("""scf.if %first {
      nvvm.barrier.arrive id = %id number_of_threads = %n
    }""", "exits with 128 threads arrived at barrier 1")
# An mbarrier expecting two arrivals gets one (every thread that executes
# an arrive arrives: here thread 0 only).
error("""scf.if %lead {
      nvvm.mbarrier.init %smem, %two : !llvm.ptr<3>, i32
      nvvm.mbarrier.arrive %smem : !llvm.ptr<3>
    }""", "exits with a phase of the mbarrier")
# ... and two: complete.
run("""scf.if %lead {
      nvvm.mbarrier.init %smem, %two : !llvm.ptr<3>, i32
      nvvm.mbarrier.arrive %smem : !llvm.ptr<3>
      nvvm.mbarrier.arrive %smem : !llvm.ptr<3>
    }""")
# A waiter on a phase no one completes hangs; one that another warpgroup
# completes later does not.
error("""scf.if %lead {
      nvvm.mbarrier.init %smem, %one : !llvm.ptr<3>, i32
    }
    gpu.barrier
    %p = arith.constant 0 : i32
    %t = arith.constant 100 : i32
    nvvm.mbarrier.try_wait.parity %smem, %p, %t : !llvm.ptr<3>, i32, i32""",
      "waits on parity 0", kind=emulate_wgmma.MbarrierHang)
run("""scf.if %lead {
      nvvm.mbarrier.init %smem, %one : !llvm.ptr<3>, i32
    }
    gpu.barrier
    %p = arith.constant 0 : i32
    %t = arith.constant 100 : i32
    %c128i = arith.constant 128 : index
    %other = arith.cmpi eq, %tid, %c128i : index
    scf.if %first {
      nvvm.mbarrier.try_wait.parity %smem, %p, %t : !llvm.ptr<3>, i32, i32
    } else {
      scf.if %other {
        nvvm.mbarrier.arrive %smem : !llvm.ptr<3>
      }
    }""")
# setmaxnreg draws on the CTA's pool, 384 threads x 168 registers: 24 +
# 240 x 2 fits, under any order of the warpgroups (an increase that comes
# first waits for the decrease); 32 + 240 x 2 is within the 64K file but
# not the pool, and an increase waits forever (the D 256 dK/dV kernel's
# hang on an H200); 240 x 3 as well.
for seed in (None, 0, 1, 2, 3):
    run("""scf.if %first {
      nvvm.setmaxregister decrease 24
    } else {
      nvvm.setmaxregister increase 240
    }""", threads=384, schedule=seed)
error("""scf.if %first {
      nvvm.setmaxregister decrease 32
    } else {
      nvvm.setmaxregister increase 240
    }""", "the CTA's pool 64512", threads=384,
      kind=emulate_wgmma.MbarrierHang)
error("nvvm.setmaxregister increase 240", "setmaxnreg.inc 240",
      threads=384, kind=emulate_wgmma.MbarrierHang)
# A decrease above the 168 registers at entry.
error("nvvm.setmaxregister decrease 200", "setmaxnreg.dec 200 from 168",
      threads=384)
print("ok")
