"""PTX out of `gpu.binary` ops (as `--gated-attention-to-ptx` emits them).

    python3 -m gated_attention.ptx lowered.mlir -o out/   # writes out/<binary>.ptx

Each `gpu.binary @name [#gpu.object<#nvvm.target<chip = "...">, ...,
assembly = "...">]` holds the PTX as an MLIR string literal; this module
finds them and undoes the string escapes (`\\0A`, `\\22`, ...).
"""

import argparse
import os
import re
import subprocess
import sys

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


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help="MLIR file ('-' for stdin)")
    p.add_argument("-o", "--out", required=True, help="output directory")
    p.add_argument("--ptxas", help="assemble each file with this ptxas -v "
                   "for the binary's chip and print its report")
    args = p.parse_args(argv)
    text = sys.stdin.read() if args.input == "-" else open(args.input).read()
    binaries = extract(text)
    if not binaries:
        print("error: no gpu.binary with PTX (format isa) found", file=sys.stderr)
        return 1
    os.makedirs(args.out, exist_ok=True)
    for name, target, ptx in binaries:
        path = os.path.join(args.out, name + ".ptx")
        with open(path, "w") as f:
            f.write(ptx)
        print(f"{path}: {target}; kernels: {', '.join(entries(ptx))}")
        if args.ptxas:
            chip = re.search(r'chip = "(\w+)"', target).group(1)
            proc = subprocess.run([args.ptxas, f"-arch={chip}", "-v", path,
                                   "-o", os.devnull],
                                  capture_output=True, text=True)
            print(proc.stdout + proc.stderr, end="")
            if proc.returncode:
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
