"""Device-free performance check of the sm_90a (wgmma + TMA) kernel: its SASS,
counted instruction by instruction, beside FlashAttention-3's.

    .venv/bin/python bench/sass_report.py [--out bench/results/sass-DATE.md]
        [--max-per-key CASE=BOUND ...] [--max-tail CASE=BOUND ...]
        [--max-epilogue CASE=BOUND ...] [--keep DIR]

For each headline configuration (bf16, elementwise sigmoid gate, S = 16k:
the Qwen3-Next shape Hq 16 over Hkv 2 at D 256, causal and not; D 128 with
16 heads, causal and not) the script lowers the op with
`--gated-attention-to-ptx=chip=sm_90a kernel=wgmma` (gated-attention-opt,
as gated_attention.runner finds it; `--opt` names another), and as the
persistent kernel (CASE-persistent: the pipeline's persistent=1, each
CTA looping over tiles; reported after the one-tile kernels), assembles
the kernel with `ptxas -arch=sm_90a`, disassembles it with `nvdisasm -c`
(from the CUDA toolkit, or the copy the triton package ships) and reports,
per consumer warp:

- instructions per key of the main loop: the shortest path through the body
  of the innermost loop holding the HGMMAs that issues all of them (the
  steady-state, unmasked iteration; a masked iteration takes a longer path,
  reported as well), divided by the keys one iteration covers (the K extent
  of its P.V HGMMAs);
- the serial tail: instructions on that path, read around the back edge,
  from the wait that retires the P.V wgmma group (`WARPGROUP.DEPBAR`) to
  the next Q.K^T HGMMA (a register-A HGMMA is P.V, a shared-memory-A one
  Q.K^T);
- exps (MUFU.EX2) issued between the Q.K^T issue and the P.V wait, out of the
  iteration's exps: the softmax work that overlaps the P.V wgmma;
- the epilogue: the longest path from the loop's exit to the kernel's final
  EXIT that avoids blocks calling out (the IEEE reciprocal's slow path), one
  warp whose rows are all in range;
- the longest path through the same body (a masked, diagonal iteration;
  FA3's causal kernels have a separate masked loop, whose figure is given);
- the iteration's instructions by class (MUFU, FMUL / FFMA / FADD, integer
  on the vector and on the uniform datapath) and the kernel's total.

FlashAttention-3's figures are numbers copied from a count of its own sm_90a
SASS (FA3 below), made the same way: Dao-AILab/flash-attention, hopper/, at
commit 0251105a with CUTLASS at its pinned submodule, bf16 forward for head
dims 128 and 256 built with setup.py's nvcc flags (split, paged, softcap,
local, varlen, pack-GQA, FP8, FP16 and cluster instantiations disabled) by
CUDA 13.0's ptxas, disassembled by nvdisasm 13.1; the causal kernel is the
dynamic-persistent one, the non-causal one the static-persistent kernel
with cluster size 1. Its tile per consumer warpgroup is 64 x 80 at D 256 and
64 x 128 (causal) or 64 x 176 at D 128.

--max-per-key CASE=BOUND exits 1 when a case's instructions per key exceed
the bound, --max-tail CASE=BOUND when its serial tail does,
--max-epilogue CASE=BOUND when its epilogue per warp does (the regression
test, test/Pipelines/sass-report.test, sets them); --keep DIR keeps the
PTX, cubin and SASS.
"""

import argparse
import collections
import datetime
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "python"))

from gated_attention import config, cuda  # noqa: E402

TOKENS = 16384
# name: (head dim, query heads, KV heads, causal)
CASES = collections.OrderedDict([
    ("d256-causal", (256, 16, 2, True)),
    ("d256", (256, 16, 2, False)),
    ("d128-causal", (128, 16, 16, True)),
    ("d128", (128, 16, 16, False)),
])
# The persistent kernel (the pipeline's persistent=1: each CTA loops over
# tiles) of each: NAME-persistent.
PERSISTENT = "-persistent"
for _name, _shape in list(CASES.items()):
    CASES[_name + PERSISTENT] = _shape

# FlashAttention-3's figures (see the docstring for how they were made);
# None where its SASS was not counted for that figure.
FA3 = {
    "d256-causal": dict(keys=80, total=449, masked=545, tail=141,
                        ex2_before=13, ex2=42, epilogue=588, mufu=42,
                        fmul=132, ffma=42, fadd=40, int_vector=10,
                        int_uniform=76),
    "d256": dict(keys=80, total=460, masked=466, tail=129, ex2_before=17,
                 ex2=42, epilogue=579, mufu=42, fmul=132, ffma=42, fadd=40,
                 int_vector=11, int_uniform=85),
    "d128-causal": dict(keys=128, total=455, masked=602, tail=284,
                        ex2_before=13, ex2=66, epilogue=301, mufu=66,
                        fmul=68, ffma=66, fadd=64, int_vector=14,
                        int_uniform=45),
    "d128": dict(keys=176, total=580, masked=594, tail=357, ex2_before=19,
                 ex2=90, epilogue=305, mufu=90, fmul=68, ffma=90, fadd=88,
                 int_vector=14, int_uniform=53),
}

# --- SASS parsing --------------------------------------------------------

INSN = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
LABEL = re.compile(r"^(\.L_x_\d+):")
FUNC = re.compile(r"^\.text\.(\S+):")
FLOAT = {"FMUL", "FFMA", "FADD", "FMNMX", "FSEL", "FSETP", "FSET", "FCHK",
         "FSWZADD"}
CVT = {"F2FP", "F2F", "I2F", "F2I", "I2FP", "F2IP"}
SYNC = {"BAR", "SYNCS", "MEMBAR", "FENCE", "ERRBAR", "CCTL", "WARPSYNC",
        "DEPBAR", "ARRIVES"}
MEMORY = {"LDS", "STS", "LDSM", "STSM", "LDG", "STG", "LDGSTS", "LD", "ST",
          "LDL", "STL", "UTMALDG", "UTMASTG", "UBLKCP", "LDC", "ULDC",
          "ATOM", "ATOMS", "RED", "UTMAPF", "UTMACCTL", "UTMACMDFLUSH",
          "REDUX", "UBLKRED", "UTMAREDG"}
CONTROL = {"BRA", "BSSY", "BSYNC", "EXIT", "RET", "CALL", "BREAK", "NOP",
           "YIELD", "BMOV", "JMP", "JMX", "BRX", "ACQBULK", "ELECT",
           "UELECT", "VOTE", "VOTEU", "PLOP3", "UPLOP3", "BPT", "KILL",
           "NANOSLEEP"}
MOVES = {"MOV", "CS2R", "S2R", "S2UR", "CS2UR", "R2P", "P2R"}


def classify(op):
    """A coarse class of one instruction (opcode with its modifiers)."""
    base = op.split(".")[0]
    if base == "HGMMA" or base == "MUFU":
        return base if base == "HGMMA" else "MUFU." + op.split(".")[1]
    if base in FLOAT:
        return base
    if base in CVT:
        return "CVT"
    if base in ("SHFL", "WARPGROUP"):
        return op if base == "WARPGROUP" else base
    if base in SYNC:
        return "SYNC"
    if base in MEMORY:
        return "MEM"
    if base in CONTROL:
        return "CTRL"
    if base.startswith("U") or base == "R2UR":
        return "INT:uniform"
    if base in MOVES:
        return "MOV"
    return "INT:vector"  # IADD3, IMAD, LEA, LOP3, SHF, ISETP, SEL, PRMT...


class Insn:
    def __init__(self, off, text):
        self.off, self.text = off, text
        self.pred = None
        m = re.match(r"^(@!?U?P[T0-9]+)\s+(.*)$", text)
        if m:
            self.pred, text = m.group(1), m.group(2)
        self.op = text.split()[0]
        self.args = text[len(self.op):].strip()
        self.cls = classify(self.op)
        m = re.search(r"`\((\.L_x_\d+)\)", text)
        self.target = m.group(1) if m else None

    @property
    def unconditional(self):
        return self.pred in (None, "@PT")

    @property
    def register_a(self):
        """An HGMMA whose A operand is in registers (P.V), not shared memory
        (Q.K^T): `HGMMA.64x256x16.F32.BF16 R24, R184, gdesc[UR4]...`."""
        return re.match(r"R\d+, R\d+, gdesc", self.args) is not None


def parse(text):
    """{kernel: (instructions, {label: index})} of an `nvdisasm -c` listing."""
    funcs, cur, pending = collections.OrderedDict(), None, []
    for line in text.splitlines():
        s = line.strip()
        m = FUNC.match(s)
        if m:
            cur, pending = m.group(1), []
            funcs[cur] = ([], {})
            continue
        if cur is None:
            continue
        m = LABEL.match(s)
        if m:
            pending.append(m.group(1))
            continue
        m = INSN.match(line)
        if m:
            insns, labels = funcs[cur]
            for label in pending:
                labels[label] = len(insns)
            pending = []
            insns.append(Insn(int(m.group(1), 16), m.group(2)))
    return funcs


class Kernel:
    """Basic blocks and their successors."""

    def __init__(self, insns, labels):
        self.insns = insns
        leaders = {0} | set(labels.values())
        for i, ins in enumerate(insns):
            if ins.op.startswith(("BRA", "EXIT", "RET", "BRX", "JMX")):
                leaders.add(i + 1)
        leaders = sorted(x for x in leaders if x < len(insns))
        self.blocks = [(s, leaders[k + 1] if k + 1 < len(leaders)
                        else len(insns)) for k, s in enumerate(leaders)]
        start = {s: k for k, (s, _) in enumerate(self.blocks)}
        self.succ = []
        for k, (s, e) in enumerate(self.blocks):
            last, out = insns[e - 1], []
            if last.op.startswith("BRA") and last.target:
                out.append(start[labels[last.target]])
                if not last.unconditional:
                    out.append(k + 1)
            elif not (last.op.startswith(("EXIT", "RET"))
                      and last.unconditional):
                out.append(k + 1)
            self.succ.append([t for t in out if t < len(self.blocks)])

    def size(self, b):
        s, e = self.blocks[b]
        return e - s

    def count(self, b, pred):
        s, e = self.blocks[b]
        return sum(1 for i in range(s, e) if pred(self.insns[i]))

    def indices(self, path):
        return [i for b in path for i in range(*self.blocks[b])]

    def loops(self):
        """(header, latch) of each back edge whose body holds HGMMAs. A lone
        unconditional BRA back is the return of a cold retry stub (an
        mbarrier try-wait), not a loop."""
        out = []
        for k, targets in enumerate(self.succ):
            s, e = self.blocks[k]
            if e - s == 1 and self.insns[s].op.startswith("BRA") and \
                    self.insns[s].unconditional:
                continue
            for t in targets:
                if t <= k and any(self.count(b, is_hgmma)
                                  for b in range(t, k + 1)):
                    out.append((t, k))
        return out

    def best_path(self, first, accept, weight, better, last=None):
        """The best acyclic path from block `first` over forward edges to
        block `last` (or to any block `accept` takes) by `weight` summed
        over its blocks and compared with `better`; None if there is none.
        Forward edges only: back edges and cold stubs placed after the code
        that branch back are left out."""
        best = {first: (weight(first), [first])}
        end = None
        for b in range(first, len(self.blocks)):
            if b not in best:
                continue
            if (last is None and accept(b)) or b == last:
                if end is None or better(best[b][0], end[0]):
                    end = best[b]
                if b == last:
                    break
            for t in self.succ[b]:
                if t <= b or (last is not None and t > last) or \
                        not allowed(self, t):
                    continue
                w = tuple(x + y for x, y in zip(best[b][0], weight(t)))
                if t not in best or better(w, best[t][0]):
                    best[t] = (w, best[b][1] + [t])
        return end


def is_hgmma(ins):
    return ins.cls == "HGMMA"


def allowed(kernel, b):
    """Blocks that call out (the slow path of the IEEE reciprocal) are
    cold."""
    return not kernel.count(b, lambda i: i.op.startswith("CALL"))


def loop_path(kernel, head, latch, longest=False):
    """Indices of the path head -> latch that issues the most HGMMAs, then
    the fewest (or, `longest`, the most) instructions."""
    def weight(b):
        return (kernel.count(b, is_hgmma), kernel.size(b))

    def better(x, y):
        if x[0] != y[0]:
            return x[0] > y[0]
        return x[1] > y[1] if longest else x[1] < y[1]
    found = kernel.best_path(head, None, weight, better, last=latch)
    return kernel.indices(found[1]) if found else None


def iteration(kernel, seq):
    """Serial tail and exps before the P.V wait along one iteration `seq`
    (instruction indices), read cyclically: wgmma groups are committed by
    an HGMMA with gsb0 and retired by WARPGROUP.DEPBAR.LE gsb0, N."""
    insns = kernel.insns
    n = len(seq)
    outstanding, building, pv_wait = [], None, None
    for lap in range(2):
        for pos, i in enumerate(seq):
            ins = insns[i]
            if ins.cls == "HGMMA":
                if building is None:
                    building = "PV" if ins.register_a else "QK"
                if "gsb0" in ins.args:
                    outstanding.append(building)
                    building = None
            elif ins.op.startswith("WARPGROUP.DEPBAR"):
                keep = int(ins.args.split(",")[-1].strip(), 16)
                while len(outstanding) > keep:
                    if outstanding.pop(0) == "PV" and lap == 1:
                        pv_wait = pos
    if pv_wait is None:
        return None
    qk = [p for p, i in enumerate(seq)
          if insns[i].cls == "HGMMA" and not insns[i].register_a]
    # The first Q.K^T HGMMA after the wait, around the back edge.
    nxt = min(qk, key=lambda p: (p - pv_wait) % n)
    tail = (nxt - pv_wait) % n - 1
    # Exps from the iteration's first Q.K^T HGMMA (the one `nxt` names) to
    # the wait.
    ex2_before = sum(1 for k in range((pv_wait - nxt) % n)
                     if insns[seq[(nxt + k) % n]].op.startswith("MUFU.EX2"))
    return tail, ex2_before


def epilogue(kernel, latch):
    """Instructions of the longest path from the loop's exit to an
    unconditional EXIT avoiding cold blocks."""
    def ends(b):
        last = kernel.insns[kernel.blocks[b][1] - 1]
        return last.op.startswith("EXIT") and last.unconditional
    found = kernel.best_path(latch + 1, ends, lambda b: (kernel.size(b),),
                             lambda x, y: x[0] > y[0])
    return found[0][0] if found else None


def analyze(sass):
    """Figures of the one kernel in an `nvdisasm -c` listing."""
    (name, (insns, labels)), = parse(sass).items()
    kernel = Kernel(insns, labels)
    loops = kernel.loops()
    if not loops:
        raise ValueError(f"{name}: no loop issues HGMMAs")
    # Innermost HGMMA loops (holding no other); the steady state is the
    # cheapest iteration among them.
    inner = [(h, l) for h, l in loops
             if not any((h2, l2) != (h, l) and h <= h2 and l2 <= l
                        for h2, l2 in loops)]
    paths = [(loop_path(kernel, h, l), h, l) for h, l in inner]
    seq, head, latch = min((p for p in paths if p[0]),
                           key=lambda p: len(p[0]))
    classes = collections.Counter(insns[i].cls for i in seq)
    keys = 16 * sum(1 for i in seq if insns[i].cls == "HGMMA"
                    and insns[i].register_a)
    shape = next(insns[i].op for i in seq if insns[i].cls == "HGMMA"
                 and not insns[i].register_a)
    tail, ex2_before = iteration(kernel, seq) or (None, None)
    longest = loop_path(kernel, head, latch, longest=True)
    return dict(
        kernel=name, instructions=len(insns), keys=keys, qk_hgmma=shape,
        total=len(seq), masked=max(len(longest), len(seq)), tail=tail,
        ex2_before=ex2_before, ex2=classes["MUFU.EX2"],
        mufu=sum(v for k, v in classes.items() if k.startswith("MUFU")),
        fmul=classes["FMUL"], ffma=classes["FFMA"], fadd=classes["FADD"],
        int_vector=classes["INT:vector"], int_uniform=classes["INT:uniform"],
        epilogue=epilogue(kernel, latch),
        kernel_mufu=sum(1 for i in insns if i.cls.startswith("MUFU")),
        kernel_float=sum(1 for i in insns
                         if i.cls in ("FMUL", "FFMA", "FADD")),
        kernel_int_vector=sum(1 for i in insns if i.cls == "INT:vector"),
        kernel_int_uniform=sum(1 for i in insns if i.cls == "INT:uniform"))


# --- tools and kernels ---------------------------------------------------

def find_tool(name, given, near=None):
    """`given`, else $NAME (upper case), the directory of `near`, PATH, the
    CUDA toolkit, then the copy the triton package ships."""
    candidates = [given, os.environ.get(name.upper())]
    if near:
        candidates.append(os.path.join(os.path.dirname(
            os.path.realpath(near)), name))
    candidates.append(shutil.which(name))
    home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    candidates.append(os.path.join(home, "bin", name))
    candidates += sorted(glob.glob(os.path.join(
        sys.prefix, "lib", "python3*", "site-packages", "triton", "backends",
        "nvidia", "bin", name)))
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    raise SystemExit(f"sass_report: no {name} found (--{name} PATH)")


def version(tool):
    """`cuda_13.0.r13.0` of a tool's `--version` text."""
    text = subprocess.run([tool, "--version"], capture_output=True,
                          text=True).stdout
    m = re.search(r"Build (\S+?)/", text)
    return m.group(1) if m else "version unknown"


def sass_of(case, opt, ptxas, nvdisasm, workdir):
    d, hq, hkv, causal = CASES[case]
    cfg = config.AttentionConfig(b=1, hq=hq, hkv=hkv, sq=TOKENS, skv=TOKENS,
                                 d=d, dv=d, causal=causal, dtype="bf16",
                                 gate="sigmoid")
    name, ptx, _ = cuda.compile_kernel(cfg, opt, "sm_90a", "wgmma", 0,
                                       cache="",
                                       persistent=case.endswith(PERSISTENT))
    stem = os.path.join(workdir, case)
    with open(stem + ".ptx", "w") as f:
        f.write(ptx)
    return disassemble(stem, ptxas, nvdisasm)


def disassemble(stem, ptxas, nvdisasm):
    """The sm_90a SASS listing (`nvdisasm -c`) of `stem`.ptx, assembled
    to `stem`.cubin and kept beside it as `stem`.sass."""
    subprocess.run([ptxas, "-arch=sm_90a", stem + ".ptx", "-o",
                    stem + ".cubin"], check=True)
    sass = subprocess.run([nvdisasm, "-c", stem + ".cubin"], check=True,
                          capture_output=True, text=True).stdout
    with open(stem + ".sass", "w") as f:
        f.write(sass)
    return sass


# --- report --------------------------------------------------------------

def fmt(x, digits=0):
    if x is None:
        return "–"
    return f"{x:,.{digits}f}" if digits else f"{x:,}"


def per_key(r):
    return r["total"] / r["keys"]


def flop_ratio(r, d):
    """Warp-instructions of the warpgroup (4 warps) per 1k MMA FLOPs of one
    iteration (64 rows x keys, Q.K^T and P.V)."""
    return 4 * r["total"] / (4 * 64 * r["keys"] * d / 1000)


def report(results, date, tools):
    lines = [f"# SASS of the sm_90a kernel against FlashAttention-3 ({date})",
             "",
             "`.venv/bin/python bench/sass_report.py` (see bench/README.md): "
             "bf16, elementwise sigmoid gate, S = 16384, "
             f"{tools}. Per consumer warp; FA3 is FlashAttention-3's count "
             "(Dao-AILab/flash-attention hopper/ at 0251105a, built with "
             "CUDA 13.0 ptxas); – where it was not counted.",
             ""]
    lines += [
        "Method: the iteration is the shortest path through the innermost "
        "HGMMA loop that issues all its HGMMAs; its keys are the K extent of "
        "the P·V HGMMAs; the tail runs from the WARPGROUP.DEPBAR that retires "
        "the P·V group, around the back edge, to the next Q·Kᵀ HGMMA; the "
        "epilogue is the longest path from the loop exit to the final EXIT "
        "that avoids calls (the IEEE reciprocal's slow path). FA3's masked "
        "iteration is its separate masked loop where it has one (causal).",
        ""]
    for case, r in results.items():
        d, hq, hkv, causal = CASES[case]
        fa = FA3[case.removesuffix(PERSISTENT)]
        fa_per_key = fa["total"] / fa["keys"]
        rows = [
            ("kernel instructions", fmt(r["instructions"]), "–"),
            ("keys per iteration (tile 64 x N per warpgroup)",
             fmt(r["keys"]), fmt(fa["keys"])),
            ("Q·Kᵀ HGMMA", f"`{r['qk_hgmma']}`", "–"),
            ("instructions per iteration (unmasked)", fmt(r["total"]),
             fmt(fa["total"])),
            ("**instructions per key**", f"**{per_key(r):.2f}**",
             f"**{fa_per_key:.2f}**"),
            ("warp-instructions per 1k MMA FLOPs",
             f"{flop_ratio(r, d):.2f}", f"{flop_ratio(fa, d):.2f}"),
            ("longest iteration (masked)", fmt(r["masked"]),
             fmt(fa["masked"])),
            ("serial tail: P·V wait to next Q·Kᵀ issue", fmt(r["tail"]),
             fmt(fa["tail"])),
            ("MUFU.EX2 before the P·V wait, of all",
             f"{fmt(r['ex2_before'])} of {r['ex2']}",
             f"{fmt(fa['ex2_before'])} of {fa['ex2']}"),
            ("MUFU (all)", fmt(r["mufu"]), fmt(fa["mufu"])),
            ("FMUL / FFMA / FADD",
             f"{r['fmul']} / {r['ffma']} / {r['fadd']}",
             "–" if fa["fmul"] is None else
             f"{fa['fmul']} / {fa['ffma']} / {fa['fadd']}"),
            ("integer: vector / uniform",
             f"{r['int_vector']} / {r['int_uniform']}",
             "–" if fa["int_vector"] is None else
             f"{fa['int_vector']} / {fa['int_uniform']}"),
            ("epilogue per warp (from the loop exit)", fmt(r["epilogue"]),
             fmt(fa["epilogue"])),
            ("kernel: MUFU, FMUL+FFMA+FADD, integer vector / uniform",
             f"{r['kernel_mufu']}, {r['kernel_float']}, "
             f"{r['kernel_int_vector']} / {r['kernel_int_uniform']}", "–"),
        ]
        heads = f"Hq {hq} / Hkv {hkv}"
        if case.endswith(PERSISTENT):
            heads += ", persistent"
        lines += [f"## D {d}, {'causal' if causal else 'non-causal'}, "
                  f"{heads} (`{case}`)", "",
                  "| per consumer warp | ours | FA3 |", "|---|---|---|"]
        lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--opt", help="gated-attention-opt (default: "
                   "$GATED_ATTENTION_OPT, else the build's)")
    p.add_argument("--ptxas")
    p.add_argument("--nvdisasm")
    p.add_argument("--case", action="append", choices=list(CASES),
                   help="cases to count (default: all)")
    p.add_argument("--sass", metavar="CASE=FILE", action="append",
                   default=[], help="count this listing instead of "
                   "compiling the case")
    p.add_argument("--out", help="write the report (markdown) here too")
    p.add_argument("--keep", help="keep PTX, cubin and SASS in this "
                   "directory")
    p.add_argument("--max-per-key", metavar="CASE=BOUND", action="append",
                   default=[], help="fail when CASE's instructions per key "
                   "exceed BOUND")
    p.add_argument("--max-tail", metavar="CASE=BOUND", action="append",
                   default=[], help="fail when CASE's serial tail exceeds "
                   "BOUND instructions")
    p.add_argument("--max-epilogue", metavar="CASE=BOUND", action="append",
                   default=[], help="fail when CASE's epilogue per warp "
                   "exceeds BOUND instructions")
    args = p.parse_args(argv)

    def parse_bounds(specs, flag):
        bounds = {}
        for spec in specs:
            case, _, bound = spec.partition("=")
            if case not in CASES:
                p.error(f"{flag}: unknown case {case!r}")
            bounds[case] = float(bound)
        return bounds
    checks = [("instructions per key", per_key,
               parse_bounds(args.max_per_key, "--max-per-key")),
             ("serial tail", lambda r: r["tail"],
              parse_bounds(args.max_tail, "--max-tail")),
              ("epilogue", lambda r: r["epilogue"],
               parse_bounds(args.max_epilogue, "--max-epilogue"))]
    given = dict(s.split("=", 1) for s in args.sass)
    cases = args.case or list(CASES)
    ptxas = nvdisasm = None
    if any(c not in given for c in cases):
        ptxas = find_tool("ptxas", args.ptxas)
        nvdisasm = find_tool("nvdisasm", args.nvdisasm, near=ptxas)
    workdir = args.keep or tempfile.mkdtemp(prefix="sass-report-")
    os.makedirs(workdir, exist_ok=True)
    results = collections.OrderedDict()
    try:
        for case in cases:
            if case in given:
                with open(given[case]) as f:
                    sass = f.read()
            else:
                sass = sass_of(case, args.opt, ptxas, nvdisasm, workdir)
            results[case] = analyze(sass)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    tools = "ptxas -arch=sm_90a and nvdisasm -c"
    if ptxas:
        tools = f"ptxas -arch=sm_90a ({version(ptxas)}) and nvdisasm -c " \
                f"({version(nvdisasm)})"
    text = report(results, datetime.date.today().isoformat(), tools)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    failed = 0
    for what, figure, bounds in checks:
        for case, bound in bounds.items():
            if case not in results:
                continue
            value = figure(results[case])
            ok = value is not None and value <= bound
            failed += not ok
            shown = "none" if value is None else f"{round(value, 2):g}"
            print(f"{'PASS' if ok else 'FAIL'}: {case} {what} "
                  f"{shown} {'<=' if ok else '>'} {bound:g}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
