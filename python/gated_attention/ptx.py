"""PTX and launch descriptions out of `--gated-attention-to-ptx` output.

    python3 -m gated_attention.ptx lowered.mlir -o out/
        # writes out/<binary>.ptx, and out/<kernel>.json for each
        # tensor-core kernel (its launch description)

Each `gpu.binary @name [#gpu.object<#nvvm.target<chip = "...">, ...,
assembly = "...">]` holds the PTX as an MLIR string literal; this module
finds them and undoes the string escapes (`\\0A`, `\\22`, ...). The
launch descriptions (JSON: kernel name, grid and block as functions of B,
Hq, Sq, dynamic shared memory bytes, argument order and calling convention)
are the `gated_attention.kernels` dictionary attribute that
`convert-gated-attention-to-nvgpu` puts on the top-level module.

--ptxas PATH assembles each PTX for its chip and prints ptxas' report;
--check additionally fails unless every kernel is spill-free, every
tensor-core kernel uses mma.sync, ldmatrix and cp.async (the sm_90a one
wgmma, TMA, mbarriers and setmaxnreg, without the advisories of a broken
wgmma pipeline), and its shared memory fits the chip. ptxas reports a
warp-specialized kernel's registers at entry only; --check also assembles
a copy without setmaxnreg, capped at the consumers' count (`.maxnreg`),
and fails if the consumers' code spills within it. A PTX that declares a function it does not define
(`.extern .func __nv_expf`: libdevice was not linked) is an error: no
driver could load it.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from . import launch
from .runner import ToolError

# Largest shared memory one CTA may use (opt-in), in bytes, of the chips the
# PTX path takes (as include/GatedAttention/Conversion/NVGPUChips.h lists).
SHARED_MEMORY_LIMIT = {"sm_80": 163 * 1024, "sm_86": 99 * 1024,
                       "sm_89": 99 * 1024, "sm_90": 227 * 1024,
                       "sm_90a": 227 * 1024}
CHIPS = tuple(SHARED_MEMORY_LIMIT)


def tensor_core_unsupported(cfg):
    """Why the tensor-core kernel does not take AttentionConfig `cfg` (""
    if it does)."""
    if cfg.dtype not in ("f16", "bf16"):
        return f"it takes f16 or bf16, not {cfg.dtype}"
    if cfg.d % 16 or cfg.dv % 16 or cfg.d > 256 or cfg.dv > 256:
        return (f"head dims must be multiples of 16 up to 256, not "
                f"D = {cfg.d}, Dv = {cfg.dv}")
    return ""

_BINARY = re.compile(
    r'gpu\.binary @([\w$.]+)\s*\[#gpu\.object<#nvvm\.target<([^>]*)>'
    r'.*?assembly = "((?:[^"\\]|\\.)*)"', re.S)
_ESCAPE = re.compile(r'\\([0-9A-Fa-f]{2}|.)')


def _unescape(s):
    def repl(m):
        x = m.group(1)
        return chr(int(x, 16)) if len(x) == 2 else x
    return _ESCAPE.sub(repl, s)


def extract(mlir_text):
    """[(binary name, target attributes, PTX text)] in module order."""
    return [(m.group(1), m.group(2), _unescape(m.group(3)))
            for m in _BINARY.finditer(mlir_text)]


def entries(ptx):
    """Names of the kernels (`.entry`) in a PTX text."""
    return re.findall(r"\.entry\s+([\w$]+)\s*\(", ptx)


_KERNEL = re.compile(r'\s*([\w$]+) = "((?:[^"\\]|\\.)*)"\s*([,}])')


def launch_descriptions(mlir_text):
    """{kernel name: launch description (dict)} of the module."""
    start = mlir_text.find("gated_attention.kernels = {")
    if start < 0:
        return {}
    pos = start + len("gated_attention.kernels = {")
    out = {}
    while True:
        m = _KERNEL.match(mlir_text, pos)
        if not m:
            raise ValueError("malformed gated_attention.kernels attribute")
        out[m.group(1)] = launch.validate(json.loads(_unescape(m.group(2))))
        pos = m.end()
        if m.group(3) == "}":
            return out


class MissingLibdeviceError(ToolError):
    """A PTX calls functions it only declares (libdevice's, not linked)."""


_EXTERN_FUNC = re.compile(r"\.extern\s+\.func\s*(?:\([^)]*\)\s*)?([\w$]+)")


def unresolved_functions(ptx):
    """Functions a PTX declares `.extern` (calls without defining): a
    complete kernel has none."""
    return sorted(set(_EXTERN_FUNC.findall(ptx)))


def check_resolved(name, ptx):
    """Raises MissingLibdeviceError if the PTX of kernel `name` calls
    functions it does not define (libdevice's `__nv_*`, which
    --gated-attention-to-ptx links from the CUDA toolkit)."""
    missing = unresolved_functions(ptx)
    if not missing:
        return
    libdevice = [f for f in missing if f.startswith("__nv_")]
    what = (f"libdevice functions {', '.join(libdevice)} (libdevice was "
            f"not linked: set CUDA_HOME to a CUDA toolkit that has "
            f"nvvm/libdevice/libdevice.10.bc)" if libdevice else "")
    other = [f for f in missing if not f.startswith("__nv_")]
    if other:
        what += (" and " if what else "") + \
            f"functions {', '.join(other)} it does not define"
    raise MissingLibdeviceError(f"the PTX of {name} calls {what}: no driver "
                                f"could load it")


def write_atomically(path, text):
    """Writes `text` (str or bytes) to `path` through a temporary file in
    the same directory and a rename, so that readers see the old file or
    the whole new one, never a partial one."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory,
                               prefix="." + os.path.basename(path) + ".",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def all_kernels(mlir_text):
    """[(kernel name, PTX text, launch description or None)] of every
    kernel in lowered MLIR (a description: the tensor-core kernels)."""
    descriptions = launch_descriptions(mlir_text)
    return [(kernel, ptx, descriptions.get(kernel))
            for _, _, ptx in extract(mlir_text) for kernel in entries(ptx)]


def tensor_core_kernels(mlir_text):
    """[(kernel name, PTX text, launch description)] of the kernels with a
    launch description (the tensor-core ones) in lowered MLIR."""
    descriptions = launch_descriptions(mlir_text)
    return [(kernel, ptx, descriptions[kernel])
            for _, _, ptx in extract(mlir_text)
            for kernel in entries(ptx) if kernel in descriptions]


def _ptxas_report(ptxas, chip, path):
    proc = subprocess.run([ptxas, f"-arch={chip}", "-v", path, "-o",
                           os.devnull], capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


WGMMA_ADVISORIES = ("C7508", "C7510", "C7511", "C7512", "C7515", "C7517",
                    "C7519")


def consumer_variant(ptx):
    """The PTX of a warp-specialized kernel with its setmaxnreg removed and
    every thread capped at the consumers' registers, or None: what ptxas
    can tell of the consumers' demand (it reports only the registers at
    entry)."""
    m = re.search(r"setmaxnreg\.inc\.sync\.aligned\.u32\s+(\d+);", ptx)
    if not m or ".minnctapersm" not in ptx:
        return None
    text = re.sub(r"^\s*setmaxnreg\..*$\n", "", ptx, flags=re.M)
    return re.sub(r"\.minnctapersm\s+\d+", f".maxnreg {m.group(1)}", text)


def check_consumers(ptxas, chip, ptx):
    """Problems of the consumer warpgroups' register demand (see
    consumer_variant)."""
    variant = consumer_variant(ptx)
    if variant is None:
        return []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "consumers.ptx")
        with open(path, "w") as f:
            f.write(variant)
        rc, report = _ptxas_report(ptxas, chip, path)
    spills = re.findall(r"(\d+) bytes spill stores", report)
    if rc or not spills or any(int(n) for n in spills):
        return ["consumers spill within their setmaxnreg registers"]
    return []


def check_kernel(ptx, report, chip, desc):
    """Problems (strings) of one assembled kernel."""
    problems = []
    spills = re.findall(r"(\d+) bytes spill stores", report)
    if not spills or any(int(n) for n in spills):
        problems.append("spills registers" if spills else "no ptxas report")
    if desc is None:
        return problems
    # The description's argument list, expanded as it says, is the entry's.
    params = re.search(r"\.entry\s+" + re.escape(desc["kernel"]) +
                       r"\s*\((.*?)\)", ptx, re.S)
    expected = launch.parameter_count(desc)
    found = len(re.findall(r"\.param\s", params.group(1))) if params else -1
    if found != expected:
        problems.append(f"{found} kernel parameters, description says "
                        f"{expected}")
    if desc["instructions"] == "simt":
        # The split-KV merge (f32 loads, exp2, the gate) and the backward's
        # preprocessing (D, dY, dG).
        required = ()
    elif launch.is_warp_specialized(desc):
        # The dense kernel's copies are TMA boxes (the backward's: K and
        # V; Q and dY rows as the paged kernel's); the paged one's, rows
        # copied by cp.async that arrive on the mbarriers when they land.
        copies = (("cp.async.bulk.tensor",) if launch.uses_tensor_maps(desc)
                  else ("cp.async.cg.shared.global",
                        "cp.async.mbarrier.arrive.noinc"))
        required = ("wgmma.mma_async", "mbarrier.try_wait.parity",
                    "setmaxnreg.dec", "setmaxnreg.inc") + copies
        # ptxas advisories that mean the wgmma pipeline is broken: setmaxnreg
        # ignored, wgmma serialized, accumulators touched mid-pipeline,
        # waits or arrives injected.
        for code in WGMMA_ADVISORIES:
            if code in report:
                problems.append(f"ptxas advisory {code}")
    else:
        required = ("mma.sync.aligned.m16n8k16", "ldmatrix.sync", "cp.async")
    for instr in required:
        if instr not in ptx:
            problems.append(f"no {instr}")
    static = sum(int(n) for n in re.findall(r"(\d+) bytes smem", report))
    total = static + desc["dynamic_shared_memory"]
    limit = SHARED_MEMORY_LIMIT.get(chip)
    if limit is None or total > limit:
        problems.append(f"shared memory {total} B exceeds {chip}'s {limit} B")
    return problems


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help="MLIR file ('-' for stdin)")
    p.add_argument("-o", "--out", required=True, help="output directory")
    p.add_argument("--ptxas", help="assemble each file with this ptxas -v "
                   "for the binary's chip and print its report")
    p.add_argument("--check", action="store_true",
                   help="with --ptxas: fail on spills, on tensor-core "
                   "kernels without mma.sync / ldmatrix / cp.async, and on "
                   "shared memory over the chip's limit")
    args = p.parse_args(argv)
    if args.check and not args.ptxas:
        p.error("--check needs --ptxas")
    text = sys.stdin.read() if args.input == "-" else open(args.input).read()
    binaries = extract(text)
    if not binaries:
        print("error: no gpu.binary with PTX (format isa) found", file=sys.stderr)
        return 1
    descriptions = launch_descriptions(text)
    os.makedirs(args.out, exist_ok=True)
    failed = 0
    for name, target, ptx in binaries:
        try:
            check_resolved(name, ptx)
        except MissingLibdeviceError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        path = os.path.join(args.out, name + ".ptx")
        write_atomically(path, ptx)
        kernels = entries(ptx)
        print(f"{path}: {target}; kernels: {', '.join(kernels)}")
        for kernel in kernels:
            if kernel in descriptions:
                write_atomically(os.path.join(args.out, kernel + ".json"),
                                 json.dumps(descriptions[kernel], indent=1)
                                 + "\n")
        if args.ptxas:
            chip = re.search(r'chip = "(\w+)"', target).group(1)
            rc, report = _ptxas_report(args.ptxas, chip, path)
            print(report, end="")
            if rc:
                return 1
            if args.check:
                desc = next((descriptions[k] for k in kernels
                             if k in descriptions), None)
                problems = check_kernel(ptx, report, chip, desc)
                problems += check_consumers(args.ptxas, chip, ptx)
                for problem in problems:
                    print(f"FAIL {name}: {problem}")
                    failed += 1
    if args.check:
        print(f"checked {len(binaries)} kernels, {failed} problems")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
