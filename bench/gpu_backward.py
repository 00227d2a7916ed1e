"""The torch op's forward + backward on the GPU, against what a PyTorch user
trains with today: F.scaled_dot_product_attention then * sigmoid(g), under
autograd.

Two phases, because the GPU machine has torch but no MLIR:

  prepare (here):
    .venv/bin/python bench/gpu_backward.py prepare build/device-check/torch-kernels
      compiles the forward's and the backward's kernels of every shape
      below for sm_90 into that disk cache (gated_attention.torch.warmup(
      chip="sm_90", backward=True): those the op runs by default, wgmma
      where they fit, and with GATED_ATTENTION_CUDA_KERNEL=mma-sync; a
      shape whose backward has no kernels is noted and skipped).
  run (on the GPU machine):
    GATED_ATTENTION_CACHE_DIR=build/device-check/torch-kernels \\
        python3 bench/gpu_backward.py run --out bench/results
      bf16, causal: D 128 (Hq = Hkv = 16, B x S = 16k tokens, S 1k to 16k,
      FlashAttention-3's backward benchmark shape) and Qwen3-Next (Hq 16 /
      Hkv 2, D 256, q | gate halves of one projection, "bshd"), S 1k to
      16k. Per shape and implementation: the forward alone and forward +
      backward (ms, CUDA events), the backward as their difference, its
      TFLOP/s at 2.5 times the forward's FLOP count (causal: half of 4 B Hq
      S^2 D), and op / baseline ratios. The op's backward is
      deterministic (dQ in a kernel of its own, no atomics): there is no
      other mode to time, and the run checks that two backwards give
      bitwise-identical gradients (column `bitwise`). The op's forward
      tensor-core kernels do not save the log-sum-exp yet, so its
      backward computes L first (`lse` column: "computed"); that Q K^T is
      in its time. A shape whose backward has no CUDA kernels (head dims
      above what the kernels take) gets the baseline's figures and the
      reason. The op's backward is also timed kernel by kernel (CUDA events
      recorded on the launch stream between its three launches, mean of 5
      steps): op_pre_ms (the preprocessing: D, dY, dG), op_kv_ms (dK, dV)
      and op_q_ms (dQ); what op_bwd_ms has besides them is L, copies and
      autograd. Rows are appended to gpu-backward-<date>-<gpu>.csv as each
      shape ends, so a run cut short keeps the finished ones (with
      GATED_ATTENTION_CUDA_KERNEL=mma-sync, or wgmma,
      gpu-backward-mma-sync-<date>-<gpu>.csv: both runs are kept).

Both compute bottom-right causal; with Sq = Skv it is SDPA's is_causal.
The check before timing compares the op's gradients with the baseline's:
a sanity check against a wrong launch (relative max error under 5e-2, far
above bf16 rounding, far below an error of the kernels' logic); the
numerics are tested against float64 on the emulator
(test/python/torch_cuda_backward.py, test/Integration/Emulated/).
"""

import datetime
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gpu_torch_common as common  # noqa: E402
import torch  # noqa: E402

import gated_attention.torch as gat  # noqa: E402
from gated_attention import launcher  # noqa: E402
from gated_attention.torch import _cuda_backward, _select  # noqa: E402

TOKENS = 16384
LENGTHS = (1024, 2048, 4096, 8192, 16384)
# (name, layout, B, S, Hq, Hkv, D)
SHAPES = [("d128", "bhsd", TOKENS // s, s, 16, 16, 128) for s in LENGTHS] + \
         [("qwen3-next", "bshd", 1, s, 16, 2, 256) for s in LENGTHS]
SANITY = 5e-2
COLUMNS = ("shape,layout,B,S,Hq,Hkv,D,op_fwd_ms,op_step_ms,op_bwd_ms,"
           "op_bwd_tflops,base_fwd_ms,base_step_ms,base_bwd_ms,"
           "base_bwd_tflops,bwd_ratio,step_ratio,bitwise,lse,op_pre_ms,"
           "op_kv_ms,op_q_ms,note")


def tensors(layout, b, s, hq, hkv, d, device, grad=True):
    """q, k, v, g as model code has them (`meta` for prepare), leaves that
    require grad."""
    def randn(*shape):
        return torch.randn(*shape, device=device).to(torch.bfloat16)
    if layout == "bshd":
        proj = randn(b, s, hq, 2 * d).requires_grad_(grad)
        k, v = (randn(b, s, hkv, d).requires_grad_(grad) for _ in range(2))
        return proj[..., :d], k, v, proj[..., d:], [proj, k, v]
    q, k, v, g = (randn(b, h, s, d).requires_grad_(grad)
                  for h in (hq, hkv, hkv, hq))
    return q, k, v, g, [q, k, v, g]


def op(q, k, v, g, layout):
    return gat.attention(q, k, v, g, causal=True, layout=layout)


def gradients(fn, args, leaves, dout, layout):
    for x in leaves:
        x.grad = None
    fn(*args, layout).backward(dout)
    return [x.grad.clone() for x in leaves]


def forward_flops(b, s, hq, d):
    """Causal: half of 4 B Hq S^2 D."""
    return 2 * b * hq * s * s * d


def prepare(directory):
    gat.set_cache_dir(directory)
    for name, layout, b, s, hq, hkv, d in SHAPES:
        if s != LENGTHS[0]:
            continue   # the kernels do not depend on B or S
        q, k, v, g, _ = tensors(layout, b, s, hq, hkv, d, "meta")
        # What the op runs by default, and with
        # GATED_ATTENTION_CUDA_KERNEL=mma-sync.
        for kernel in (None, "mma-sync"):
            gat.warmup(q, k, v, g, causal=True, layout=layout, chip="sm_90",
                       backward=False, kernel=kernel)
            try:
                gat.warmup(q, k, v, g, causal=True, layout=layout,
                           chip="sm_90", backward=True, kernel=kernel)
            except NotImplementedError as e:
                print(f"{name}: forward only ({e})")
    print(f"backward benchmark kernels for sm_90 in {directory}")


def _csv(out_dir):
    gpu = torch.cuda.get_device_name()
    os.makedirs(out_dir, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9]+", "-", gpu).strip("-").lower()
    choice = _select.choice()
    kind = "" if choice == "auto" else f"{choice}-"
    path = os.path.join(out_dir, f"gpu-backward-{kind}"
                                 f"{datetime.date.today()}-{stem}.csv")
    f = open(path, "w")
    f.write(COLUMNS + "\n")
    f.flush()
    print(f"writing {path} ({gpu}, torch {torch.__version__})", flush=True)
    return f


def _measure(fn, args, leaves, dout, layout):
    """(forward ms, forward + backward ms) of fn under autograd."""
    def step():
        for x in leaves:
            x.grad = None
        fn(*args, layout).backward(dout)
    fwd = common.timed(lambda: fn(*args, layout), reps=5)
    return fwd, common.timed(step, reps=5)


class _Marked:
    """A backward kernel whose launch records a CUDA event after it on
    torch's current stream (the stream _cuda_backward launches on)."""

    def __init__(self, kernel, marks):
        self.kernel, self.desc, self.marks = kernel, kernel.desc, marks

    def launch(self, *args, **kwargs):
        planned = self.kernel.launch(*args, **kwargs)
        self.marks.append(torch.cuda.Event(enable_timing=True))
        self.marks[-1].record()
        return planned


def kernel_times(fn, args, leaves, dout, layout, reps=5):
    """{layout: ms} of each of the op's backward kernels
    (launcher.BACKWARD_LAYOUTS), the mean over `reps` steps after one
    untimed: events recorded on the stream between the launches, which the
    host does not wait on, so the kernels run as in a step."""
    steps = []
    original = launcher.launch_backward

    def launch_marked(kernels, buffers, stream=None, **sizes):
        marks = [torch.cuda.Event(enable_timing=True)]
        marks[0].record()
        steps.append(marks)
        marked = {n: _Marked(k, marks) for n, k in kernels.items()}
        return original(marked, buffers, stream, **sizes)

    launcher.launch_backward = launch_marked
    try:
        for _ in range(reps + 1):
            gradients(fn, args, leaves, dout, layout)
        torch.cuda.synchronize()
    finally:
        launcher.launch_backward = original
    timed = [marks for marks in steps[1:]
             if len(marks) == len(launcher.BACKWARD_LAYOUTS) + 1]
    if not timed:
        return {}
    return {name: sum(m[i].elapsed_time(m[i + 1]) for m in timed) /
            len(timed)
            for i, name in enumerate(launcher.BACKWARD_LAYOUTS)}


def run(out_dir):
    failed = False
    lse_calls = []
    computing = _cuda_backward.log_sum_exp

    def counted(*a):
        lse_calls.append(1)
        return computing(*a)
    _cuda_backward.log_sum_exp = counted
    csv = _csv(out_dir)
    for name, layout, b, s, hq, hkv, d in SHAPES:
        torch.manual_seed(0)
        q, k, v, g, leaves = tensors(layout, b, s, hq, hkv, d, "cuda")
        args = (q, k, v, g)
        dout = torch.randn_like(op(*args, layout))
        flops = 2.5 * forward_flops(b, s, hq, d)
        base_f, base_s = _measure(common.baseline, args, leaves, dout, layout)
        base_b = base_s - base_f
        row = [name, layout, b, s, hq, hkv, d]
        note, bitwise, lse, per_kernel = "", "", "", {}
        try:
            ref = gradients(common.baseline, args, leaves, dout, layout)
            lse_calls.clear()
            ours = gradients(op, args, leaves, dout, layout)
            lse = "computed" if lse_calls else "saved"
            again = gradients(op, args, leaves, dout, layout)
            bitwise = int(all(torch.equal(x, y) for x, y in zip(ours, again)))
            err = max(((x.float() - y.float()).abs().max() /
                       (1 + y.float().abs().max())).item()
                      for x, y in zip(ours, ref))
            if not err < SANITY:
                note = f"FAIL: gradients off the baseline's by {err:.3g}"
                failed = True
            else:
                op_f, op_s = _measure(op, args, leaves, dout, layout)
                op_b = op_s - op_f
                row += [f"{op_f:.4f}", f"{op_s:.4f}", f"{op_b:.4f}",
                        f"{flops / op_b / 1e9:.1f}"]
                per_kernel = kernel_times(op, args, leaves, dout, layout)
        except NotImplementedError as e:
            note = f"no CUDA backward: {str(e).splitlines()[0]}"
        if len(row) == 7:
            row += ["", "", "", ""]
        row += [f"{base_f:.4f}", f"{base_s:.4f}", f"{base_b:.4f}",
                f"{flops / base_b / 1e9:.1f}"]
        if row[9]:
            row += [f"{base_b / float(row[9]):.3f}",
                    f"{base_s / float(row[8]):.3f}"]
        else:
            row += ["", ""]
        row += [str(bitwise), lse]
        row += [f"{per_kernel[n]:.4f}" if n in per_kernel else ""
                for n in launcher.BACKWARD_LAYOUTS]
        row += ['"' + note.replace('"', "'") + '"']
        csv.write(",".join(str(x) for x in row) + "\n")
        csv.flush()
        print(",".join(str(x) for x in row), flush=True)
        if note.startswith("FAIL"):
            print(note, flush=True)
        del q, k, v, g, leaves, args, dout
        torch.cuda.empty_cache()
    csv.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(common.main(__doc__, prepare, run))
