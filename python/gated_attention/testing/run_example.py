"""Compile a function holding one gated_attention.attention op for the CPU,
run it on random inputs and print its error against the float64 reference.

    python3 -m gated_attention.testing.run_example examples/qwen3_next_attention.mlir \\
        [--entry NAME] [--batch 1] [--seq 128] [--kv-seq N] [--seed 0]

The entry function takes (query, key, value, gate) and returns the result;
`?` dims are bound from --batch (dim 0) and --seq / --kv-seq (dim 2). The op's
attributes are read from the generic form gated-attention-opt prints.
"""

import argparse
import re
import sys
import time

from .. import accuracy, config, mlir, runner

_FUNC = re.compile(r"func\.func @([\w$.]+)\s*\(([^)]*)\)", re.S)
_TENSOR = re.compile(r"tensor<([0-9?x]+)x(f32|f16|bf16)>")


def read_signature(text, entry):
    for m in _FUNC.finditer(text):
        if entry is None or m.group(1) == entry:
            types = _TENSOR.findall(m.group(2))
            if len(types) != 4:
                raise SystemExit(f"@{m.group(1)} must take 4 tensors "
                                 f"(query, key, value, gate)")
            return m.group(1), [(dims.split("x"), ty) for dims, ty in types]
    raise SystemExit(f"no function {'@' + entry if entry else ''} found")


def read_attributes(text):
    """Attributes of the (single) attention op, from its generic form."""
    generic = runner.compile_module(text, ["--mlir-print-op-generic"])
    ops = [line for line in generic.splitlines()
           if '"gated_attention.attention"' in line]
    if len(ops) != 1:
        raise SystemExit(f"expected one gated_attention.attention, found {len(ops)}")
    op = ops[0]
    attrs = {"causal": bool(re.search(r"[{ ,]causal[,}]", op))}
    if m := re.search(r"gate = #gated_attention\.gate<(\w+)>", op):
        attrs["gate"] = m.group(1)
    if m := re.search(r"combine = #gated_attention\.combine<(\w+)>", op):
        attrs["combine"] = m.group(1)
    if m := re.search(r"scale = ([-+0-9.eE]+) : f32", op):
        attrs["scale"] = float(m.group(1))
    return attrs


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file")
    p.add_argument("--entry")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--kv-seq", type=int)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pipeline", default="--gated-attention-to-llvm")
    args = p.parse_args(argv)
    kv_seq = args.kv_seq or args.seq

    text = open(args.file).read()
    entry, sig = read_signature(text, args.entry)
    (qd, dtype), (kd, _), (vd, _), (gd, _) = sig

    def size(dim, value):
        return value if dim == "?" else int(dim)

    dynamic = tuple(name for name, dim in (("b", qd[0]), ("sq", qd[2]),
                                            ("skv", kd[2])) if dim == "?")
    cfg = config.AttentionConfig(
        b=size(qd[0], args.batch), hq=int(qd[1]), hkv=int(kd[1]),
        sq=size(qd[2], args.seq), skv=size(kd[2], kv_seq), d=int(qd[3]),
        dv=int(vd[3]), dtype=dtype,
        gate_heads="per_head" if int(gd[1]) == int(qd[1]) else "shared",
        gate_width="elementwise" if int(gd[3]) == int(vd[3]) else "headwise",
        dynamic=dynamic, **read_attributes(text))
    inputs = cfg.inputs(seed=args.seed)

    t, st = cfg.types(), cfg.types(static=True)
    names = mlir.OPERANDS
    body = mlir.call_and_print(0, entry, [t[o] for o in names], t["result"],
                               [st[o] for o in names],
                               {o: inputs[o] for o in names}, dtype)
    module = mlir.wrap_main([text], [body])

    print(f"{args.file}: @{entry} {cfg.describe()}")
    start = time.perf_counter()
    lowered = runner.compile_module(module, args.pipeline.split())
    compiled = time.perf_counter()
    outputs = runner.parse_memrefs(runner.run_module(lowered))
    ran = time.perf_counter()
    result = accuracy.compare(cfg, outputs[0], cfg.reference(inputs), inputs)
    print(f"compile {compiled - start:.2f} s, JIT + run {ran - compiled:.2f} s "
          f"({cfg.flops() / 1e9:.2f} GFLOP)")
    print(f"max abs error vs float64 reference: {result.max_abs_err:.3g} "
          f"(worst error / bound of the {dtype} error model "
          f"{result.ratio:.2f}): {'PASS' if result.ok else 'FAIL'}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
