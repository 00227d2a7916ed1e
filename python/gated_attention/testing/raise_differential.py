"""Differential testing of raising: a graph compiled by
--gated-attention-to-llvm (which raises unfused attention to the op first)
must compute what the same pipeline computes with raise=0 (the graph as
written, lowered by the same passes). The graphs are mutants of unfused
forms (the chunks of the MLIR files given): one constant, predicate, map,
softmax dimension, arithmetic op or scalar operand changed at random. A mutant that raising
still turns into the op but whose meaning changed is a mis-raise; one that
raising no longer matches is skipped (both compilations would be the same).

    python -m gated_attention.testing.raise_differential FILE... \\
        [--mutants N] [--seed S] [--keep DIR]

Prints one line per mutant tried and exits 1 on any mismatch (the mutant is
written to --keep, default the working directory).
"""

import argparse
import os
import random
import re
import subprocess
import sys

import numpy as np

from gated_attention import native, runner

CMPI = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
CMPF = ["oeq", "ogt", "oge", "olt", "ole", "one", "ugt", "uge", "ult", "ule"]
SWAPS = [("arith.maximumf", "arith.minimumf"), ("arith.addf", "arith.subf"),
         ("arith.mulf", "arith.divf"), ("math.exp ", "math.exp2 "),
         ("arith.maxnumf", "arith.minnumf")]


def _float_constant(m, rng):
    value = float(m.group(1))
    new = rng.choice([value * 0.5, value * 2.0, -value, value + 1.0, 0.0])
    return f"arith.constant {new!r} : f32"


def _hex_constant(m, rng):
    return f"arith.constant {rng.choice(['0.0', '-1.0e+04', '1.0'])} : f32"


def _predicate(choices):
    def mutate(m, rng):
        return m.group(0).replace(
            m.group(1), rng.choice([p for p in choices if p != m.group(1)]))
    return mutate


def _dimension(m, rng):
    return f"dimension({rng.choice([d for d in range(4) if d != int(m.group(1))])})"


def _int_constant(m, rng):
    return f"arith.constant {int(m.group(1)) + rng.choice([-1, 1])} : {m.group(2)}"


def _map_results(m, rng):
    results = [r.strip() for r in m.group(2).split(",")]
    if len(results) < 2:
        return m.group(0)
    i, j = rng.sample(range(len(results)), 2)
    results[i], results[j] = results[j], results[i]
    return f"affine_map<({m.group(1)}) -> ({', '.join(results)})>"


def _swap(m, rng):
    for a, b in SWAPS:
        if m.group(0) == a:
            return b
        if m.group(0) == b:
            return a
    return m.group(0)


_SCALAR_DEF = re.compile(r"(%[\w#]+) = (?:arith|math)\.\w+ [^\n]*: f32\n|"
                         r"(%\w+): f32")


_LAST_BLOCK_ARG = re.compile(r"\^bb\d+\([^)]*(%\w+): f32\)")


def _operand(m, rng):
    """An f32 operand replaced by another f32 scalar of the text (one that
    does not dominate the use fails to verify: the mutant is skipped).
    Never by a body's last argument: that is its `outs` element, whose value
    is undefined when the init is a tensor.empty (the two compilations
    would read different garbage)."""
    text = m.string
    names = sorted({a or b for a, b in _SCALAR_DEF.findall(text)} -
                   set(_LAST_BLOCK_ARG.findall(text)) - {m.group(2)})
    if not names:
        return m.group(0)
    return m.group(0).replace(m.group(2), rng.choice(names), 1)


MUTATORS = [
    (re.compile(r"(arith\.\w+f|math\.\w+) (%[\w#]+)[^\n]*: f32\n"),
     _operand),
    (re.compile(r"arith\.constant (-?\d+\.\d*(?:e[-+]?\d+)?) : f32"),
     _float_constant),
    (re.compile(r"arith\.constant 0x[0-9A-Fa-f]{8} : f32"), _hex_constant),
    (re.compile(r"arith\.cmpi (\w+)"), _predicate(CMPI)),
    (re.compile(r"arith\.cmpf (\w+)"), _predicate(CMPF)),
    (re.compile(r"dimension\((\d)\)"), _dimension),
    (re.compile(r"arith\.constant (-?\d+) : (index|i64|i32)"), _int_constant),
    (re.compile(r"affine_map<\(([^)]*)\) -> \(([^)]*)\)>"), _map_results),
    (re.compile("|".join(re.escape(x) for pair in SWAPS for x in pair)),
     _swap),
]


def mutate(text, rng):
    """`text` with one site of a random mutator changed (None if none
    applies)."""
    kinds = [(p, f) for p, f in MUTATORS if p.search(text)]
    if not kinds:
        return None
    pattern, fn = rng.choice(kinds)
    sites = list(pattern.finditer(text))
    m = rng.choice(sites)
    new = fn(m, rng)
    if new == m.group(0):
        return None
    return text[:m.start()] + new + text[m.end():]


_TENSOR = re.compile(r"tensor<([^<>]*)>")


def _shape(spec):
    *dims, elem = spec.split("x")
    if elem != "f32" or any(not d.isdigit() for d in dims) or "," in spec:
        return None
    return tuple(int(d) for d in dims)


class Form:
    """The first function of an MLIR chunk that takes and returns f32
    tensors of static shape, ready for a C interface."""

    def __init__(self, name, text):
        m = re.search(r"func\.func @(\w+)\(", text)
        if not m:
            raise ValueError("no function")
        self.name = m.group(1)
        rest = text[m.end():]
        signature = rest[:rest.index("{")]
        args, _, results = signature.partition("->")
        self.shapes = [_shape(t) for t in _TENSOR.findall(args)]
        outs = [_shape(t) for t in _TENSOR.findall(results)]
        if not self.shapes or None in self.shapes or len(outs) != 1 or \
                outs[0] is None or "#" in signature:
            raise ValueError("not a function of static f32 tensors")
        self.result_rank = len(outs[0])
        self.label = name
        self.text = text

    def with_interface(self, text):
        head, _, rest = text.partition(f"func.func @{self.name}(")
        sig, _, body = rest.partition(" {\n")
        return (f"{head}func.func @{self.name}({sig} attributes "
                f"{{llvm.emit_c_interface}} {{\n{body}")


def forms(paths):
    out = []
    for path in paths:
        for i, chunk in enumerate(open(path).read().split("// -----")):
            try:
                label = os.path.join(os.path.basename(os.path.dirname(path)),
                                     os.path.basename(path))
                out.append(Form(f"{label}#{i}", chunk))
            except ValueError:
                pass
    return out


def raises_to_op(text):
    """Whether `text` verifies and raising turns some of it into the op."""
    proc = subprocess.run(runner.opt_command("--gated-attention-raise"),
                          input=text, capture_output=True, text=True)
    return proc.returncode == 0 and "gated_attention.attention" in proc.stdout


# A mis-raise changes what many elements compute (the scale, a mask row, a
# gate); a few elements past the tolerance are ill-conditioned ones (a
# quotient by a gate near 0 magnifies the rounding of an attention sum that
# cancels), not a different meaning. One such element is never counted:
# in a small output (64 elements) it alone is more than 1%.
MAX_FRACTION = 0.01


def compare(form, text, rng, written_text=None):
    """Compiles `text` raised and as written (`written_text` if given: the
    harness's own test), runs both on the same random inputs and returns
    the fraction of output elements on which they differ beyond the f32
    tolerance, the first such element not counted (MAX_FRACTION)."""
    pipeline = "--gated-attention-to-llvm=openmp=0"
    raised = native.SharedLibrary(form.with_interface(text), [pipeline])
    written = native.SharedLibrary(
        form.with_interface(written_text or text), [pipeline + " raise=0"])
    inputs = [rng.standard_normal(s).astype(np.float32) for s in form.shapes]
    a = raised.call(form.name, inputs, form.result_rank, np.float32)
    b = written.call(form.name, inputs, form.result_rank, np.float32)
    if a.shape != b.shape:
        return 1.0
    a, b = a.astype(np.float64), b.astype(np.float64)
    # Two f32 evaluations of the same math in different orders: a few ulps
    # of the result's magnitude per reduction step (keys, head dim).
    with np.errstate(invalid="ignore"):
        close = np.abs(a - b) <= 1e-4 * (1.0 + np.abs(b))
    # Where the graph as written is NaN (a softmax over a row with no key),
    # the op defines 0 before the gate: any value is accepted.
    close |= np.isnan(b) | (np.isinf(b) & (a == b))
    bad = int(np.sum(~close))
    return max(bad - 1, 0) / close.size if close.size else 0.0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--mutants", type=int, default=20,
                    help="mutants to compare (that raising still matches)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--attempts", type=int, default=0,
                    help="mutants to try in all (default 40 x --mutants)")
    ap.add_argument("--keep", default=".",
                    help="where a mismatching mutant is written")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    data_rng = np.random.default_rng(args.seed)
    pool = forms(args.files)
    if not pool:
        sys.exit("raise_differential: no function of static f32 tensors")
    compared = failures = 0
    for attempt in range(args.attempts or 40 * args.mutants):
        if compared >= args.mutants:
            break
        form = rng.choice(pool)
        text = form.text
        for _ in range(rng.choice([1, 1, 2])):
            text = mutate(text, rng) or text
        if text == form.text or not raises_to_op(text):
            continue
        compared += 1
        try:
            fraction = compare(form, text, data_rng)
        except runner.ToolError as e:
            # Raising succeeded but compiling failed: a bug too.
            fraction, detail = 1.0, str(e).splitlines()[0]
        else:
            detail = f"{fraction:.2%} of the elements differ"
        ok = fraction <= MAX_FRACTION
        print(f"{'PASS' if ok else 'FAIL'} {form.label} mutant {attempt}: "
              f"{detail}", flush=True)
        if not ok:
            failures += 1
            path = os.path.join(args.keep,
                                f"raise-mismatch-{args.seed}-{attempt}.mlir")
            with open(path, "w") as f:
                f.write(text)
            print(f"  written to {path}", flush=True)
    print(f"raise_differential: {compared} mutants compared, {failures} "
          f"mismatches", flush=True)
    if compared == 0:
        sys.exit("raise_differential: no mutant that raising matches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
