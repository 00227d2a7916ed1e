"""Device-free figures of the backward's preprocessing kernel (the `_bwd_pre`
kernel: D = rowsum(dOut * out), dY and dG): its SASS instructions and
global memory instructions per query row, and the 32-byte sectors its
global accesses touch per row.

    .venv/bin/python bench/preprocess_sass.py [--opt PATH] [--ptx FILE ...]
        [--ptxas PATH] [--nvdisasm PATH] [--keep DIR]

For bf16, an elementwise sigmoid gate and D = Dv = 128 and 256 (16 query
heads; the preprocessing does not depend on the K/V heads), the script
lowers the op with `--gated-attention-to-ptx=chip=sm_90a kernel=wgmma`
(gated-attention-opt as gated_attention.runner finds it; `--opt` names
another build, e.g. an older commit's), or takes the given `--ptx` files of
`_bwd_pre` kernels, assembles them with `ptxas -arch=sm_90a`, disassembles
them with `nvdisasm -c` and walks the SASS along the path a thread of a
valid row takes: a reciprocal's fast path (not the slow-path call), every
guarded store, a loop's back edge taken as often as its counter says (the
counter's compare bound over its step). Per row:

- instructions: a thread's dynamic instructions over the threads of a row
  (one thread a row: all of them; lanesPerRow threads a row: divided by
  the rows a warp holds, i.e. warp-instructions x 32 / rows per warp);
- global memory instructions (LDG / STG), counted the same way;
- sectors: the 32-byte sectors a warp's LDG / STG touches (lanes' addresses
  from the access width and the lanes' row and column layout), per row.

The figures are static: instruction counts, not times. A GPU timing of the
kernel is bench/gpu_backward.py's per-kernel columns.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sass_report import disassemble, find_tool  # noqa: E402

CASES = {"d128": 128, "d256": 256}

_FUNC = """func.func @{name}(%q: tensor<1x16x?x{d}xbf16>, %k: tensor<1x16x?x{d}xbf16>, %v: tensor<1x16x?x{d}xbf16>, %o: tensor<1x16x?x{d}xbf16>, %do: tensor<1x16x?x{d}xbf16>, %g: tensor<1x16x?x{d}xbf16>, %lse: tensor<1x16x?xf32>) -> (tensor<1x16x?x{d}xbf16>, tensor<1x16x?x{d}xbf16>, tensor<1x16x?x{d}xbf16>, tensor<1x16x?x{d}xbf16>) {{
  %r:4 = gated_attention.attention_backward %q, %k, %v, %o, %do, %g lse(%lse) {{causal}}
      : (tensor<1x16x?x{d}xbf16>, tensor<1x16x?x{d}xbf16>, tensor<1x16x?x{d}xbf16>, tensor<1x16x?x{d}xbf16>, tensor<1x16x?x{d}xbf16>, tensor<1x16x?x{d}xbf16>, tensor<1x16x?xf32>)
      -> (tensor<1x16x?x{d}xbf16>, tensor<1x16x?x{d}xbf16>, tensor<1x16x?x{d}xbf16>, tensor<1x16x?x{d}xbf16>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<1x16x?x{d}xbf16>, tensor<1x16x?x{d}xbf16>, tensor<1x16x?x{d}xbf16>, tensor<1x16x?x{d}xbf16>
}}
"""

_INSN = re.compile(r"^\s+/\*([0-9a-f]+)\*/\s+(.*?)\s*;")
_LABEL = re.compile(r"^(\.L\w+):")


def parse_sass(text):
    """[(address, text)] of the kernel's instructions and {label: index}."""
    insns, labels = [], {}
    for line in text.splitlines():
        m = _LABEL.match(line)
        if m:
            labels[m.group(1)] = len(insns)
            continue
        m = _INSN.match(line)
        if m:
            insns.append((int(m.group(1), 16), m.group(2)))
    return insns, labels


def _target(insn, labels):
    m = re.search(r"`\((\.L\w+)\)", insn)
    return labels[m.group(1)] if m else None


def _trips(insns, branch):
    """Trips of the loop closed by the back edge at `branch`: the bound of
    the compare that sets its predicate over the counter's step."""
    bound = step = None
    for _, text in reversed(insns[:branch]):
        m = re.match(r"ISETP\.NE\.U32\.AND P\d, PT, (R\d+), (0x[0-9a-f]+|\d+)",
                     text)
        if m and bound is None:
            counter, bound = m.group(1), int(m.group(2), 0)
            continue
        if bound is not None:
            m = re.match(rf"IADD3 {counter}, P\d, {counter}, (0x[0-9a-f]+|\d+)",
                         text)
            if m:
                step = int(m.group(1), 0)
                break
    if bound is None or not step:
        raise SystemExit(f"preprocess_sass: no counter for the back edge at "
                         f"{insns[branch][0]:#x}")
    return bound // step


def walk(insns, labels):
    """Dynamic instructions and LDG / STG of one thread of a valid row, in
    order: [(text)]."""
    path, pc, taken = [], 0, {}
    while True:
        _, text = insns[pc]
        path.append(text)
        if text.startswith("EXIT"):
            return path
        op = re.sub(r"^@!?U?P\w+\s+", "", text)
        if op.startswith("BRA"):
            target = _target(op, labels)
            if not text.startswith("@"):
                pc = target
                continue
            if target <= pc:   # a loop's back edge
                left = taken.setdefault(pc, _trips(insns, pc) - 1)
                if left:
                    taken[pc] -= 1
                    pc = target
                    continue
                del taken[pc]
            elif any("CALL.REL" in t for _, t in insns[pc + 1:pc + 5]):
                pc = target   # past a reciprocal's slow path
                continue
        pc += 1


def sectors(access_bytes, lanes_per_row, row_bytes, rows):
    """32-byte sectors that one warp's access touches: `rows` rows
    `row_bytes` apart, `lanes_per_row` adjacent accesses of
    `access_bytes` in each."""
    touched = set()
    for row in range(rows):
        for chunk in range(lanes_per_row):
            start = row * row_bytes + chunk * access_bytes
            touched.update(range(start // 32,
                                 (start + access_bytes - 1) // 32 + 1))
    return len(touched)


def figures(ptx, ptxas, nvdisasm, workdir, dv):
    """{name: figure} of one _bwd_pre kernel of value head dim `dv`."""
    stem = os.path.join(workdir, os.path.basename(ptx)[:-4])
    if os.path.abspath(ptx) != os.path.abspath(stem + ".ptx"):
        shutil.copyfile(ptx, stem + ".ptx")
    sass = disassemble(stem, ptxas, nvdisasm)
    insns, labels = parse_sass(sass)
    path = walk(insns, labels)
    # A thread a row (scalar accesses), or the lanes of a row taking 16
    # bytes each (PreprocessLanes: Dv / 8 up to a power of two).
    with open(ptx) as f:
        vector = "ld.global.v4" in f.read()
    lanes = 1 << (dv // 8 - 1).bit_length() if vector else 1
    rows_per_warp = 32 // lanes
    memory = sector_count = 0
    for text in path:
        m = re.match(r"(?:@!?P\w+\s+)?(LDG|STG)\.E(\S*)", text)
        if not m:
            continue
        memory += 1
        suffix = m.group(2)
        width = 16 if ".128" in suffix else 2 if "16" in suffix else 4
        if width == 4:   # D: f32, one lane of each row, rows adjacent
            sector_count += sectors(4, 1, 4, rows_per_warp)
        else:
            sector_count += sectors(width, lanes, 2 * dv, rows_per_warp)
    return {"static": len(insns),
            "thread_path": len(path),
            "instructions": len(path) / rows_per_warp,
            "memory": memory / rows_per_warp,
            "sectors": sector_count / rows_per_warp}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--opt", help="gated-attention-opt to lower with")
    p.add_argument("--ptx", nargs="*", help="_bwd_pre PTX files (Dv from "
                   "the kernel name's _d<N>)")
    p.add_argument("--ptxas")
    p.add_argument("--nvdisasm")
    p.add_argument("--keep", help="directory to keep PTX, cubin and SASS in")
    args = p.parse_args()
    ptxas = find_tool("ptxas", args.ptxas)
    nvdisasm = find_tool("nvdisasm", args.nvdisasm, near=ptxas)
    workdir = args.keep or tempfile.mkdtemp(prefix="preprocess-sass-")
    os.makedirs(workdir, exist_ok=True)
    ptx_files = args.ptx
    if not ptx_files:
        import gated_attention
        from gated_attention.runner import opt_path
        opt = args.opt or opt_path()
        source = "".join(_FUNC.format(name=n, d=d) for n, d in CASES.items())
        lowered = subprocess.run(
            [opt, "-", "--gated-attention-to-ptx=chip=sm_90a kernel=wgmma"],
            input=source, capture_output=True, text=True, check=True).stdout
        # (The package is on this process's path, not on the child's.)
        package = os.path.dirname(os.path.dirname(gated_attention.__file__))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            filter(None, [package, os.environ.get("PYTHONPATH")])))
        subprocess.run([sys.executable, "-m", "gated_attention.ptx", "-",
                        "-o", workdir], input=lowered, text=True, check=True,
                       capture_output=True, env=env)
        ptx_files = sorted(os.path.join(workdir, f)
                           for f in os.listdir(workdir)
                           if f.endswith("_bwd_pre.ptx"))
    print("| kernel | SASS (static) | thread path | warp instructions / row "
          "| warp LDG+STG / row | sectors / row |")
    print("|---|---|---|---|---|---|")
    for ptx in ptx_files:
        dv = int(re.search(r"_d(\d+)", os.path.basename(ptx)).group(1))
        f = figures(ptx, ptxas, nvdisasm, workdir, dv)
        print(f"| {os.path.basename(ptx)[:-4]} | {f['static']} | "
              f"{f['thread_path']} | {f['instructions']:.1f} | "
              f"{f['memory']:.3g} | {f['sectors']:.1f} |")


if __name__ == "__main__":
    main()
