"""Run the tensor-core kernel on the CPU: a warp-level emulator.

The kernels that `convert-gated-attention-to-nvgpu` emits are `gpu.func`s of
arith / math / vector / memref / scf ops plus the GPU-only ones: ldmatrix,
mma.sync, cp.async, shuffles, barriers. This module interprets that
function (printed in MLIR's generic form) for every CTA of a launch, all
threads of a CTA in lockstep: every SSA value is a numpy array over the
threads. The warp-collective operations are computed from the fragment
layouts of the PTX ISA (ldmatrix with and without .trans; mma.m16n8k16 with
f16/bf16 inputs and f32 accumulators; shfl.bfly), cp.async completes at
issue (a valid schedule of a race-free kernel), barriers are no-ops, and a
branch that threads disagree on runs both sides under a mask.

So the kernel's index arithmetic, fragment bookkeeping, masking, online
softmax and epilogue are tested without a GPU, against the float64
reference:

    python3 -m gated_attention.testing.emulate --case 'dtype=bf16,d=64,dv=64,sq=70,causal=0|1' \
        [--options 'warps=2 key-block=32']

The sm_90a kernel (--options 'chip=sm_90a kernel=wgmma') runs on the
byte-level model of shared memory, TMA, mbarriers and wgmma of
emulate_wgmma.py. `Emulator` is gated_attention.launcher's backend for
both: a launch's arguments come from the kernel's launch description, as
they do on the GPU (testing/cta.py holds the interpreter the two models
share).

It does not test what comes after the kernel's IR (upstream nvgpu/NVVM
lowering, ptxas, the hardware): the device check does.
"""

import argparse
import ctypes
import dataclasses
import sys

import numpy as np

from .. import accuracy, config, launcher, mlir, paged_mlir
from .. import ptx as ptx_tools, runner
from ..dtypes import from_bits, to_bits
from . import emulate_wgmma
from .cta import CTA, Memory
from .generic_ir import find_kernel  # noqa: F401 (the tests' entry)


class Emulator:
    """gated_attention.launcher's backend on the CPU: a kernel is its
    gpu.func (generic_ir), run CTA by CTA (emulate_wgmma's WgmmaCTA for the
    sm_90a kernel, `schedule` the seed of its warpgroups' interleaving, None
    to run each as far as it can); a buffer is a Memory. Buffers have no
    addresses (element offsets stand in: the alignment of the strides is
    what the emulator checks), launches no stream. Partials start as NaN:
    a row the split kernel leaves unwritten shows."""

    def __init__(self, schedule=None):
        self.schedule = schedule

    def kernel(self, op, desc):
        """The launcher.Kernel of kernel op `op` described by `desc`."""
        return launcher.Kernel(self, op, desc)

    def kernels(self, compiled):
        """{layout: launcher.Kernel} of {layout: (kernel op, desc)}."""
        return {layout: self.kernel(op, desc)
                for layout, (op, desc) in compiled.items()}

    def load(self, op, desc):
        return op

    def address(self, buffer):
        return 0

    def launch(self, op, planned, stream=None):
        desc, threads = planned.desc, planned.block[0]
        args = []
        for arg in planned.arguments:
            if isinstance(arg, launcher.TensorMap):
                args.append(emulate_wgmma.TensorMap(
                    arg.buffer.bits, arg.element_type, list(arg.dims),
                    list(arg.box), arg.swizzle))
            elif isinstance(arg, launcher.Memref):
                args.append(arg.buffer)
            else:
                args.append(np.full(threads, arg.value, np.int64))
        if desc["instructions"] == "wgmma":
            def cta(*a):
                return emulate_wgmma.WgmmaCTA(*a, schedule=self.schedule)
        else:
            cta = CTA
        grid = planned.grid
        for z in range(grid[2]):
            for y in range(grid[1]):
                for x in range(grid[0]):
                    cta(op, threads, (x, y, z), grid, args,
                        planned.shared_memory).run()

    def upload(self, array, element_type):
        if element_type == "i32":
            return Memory(np.asarray(array, np.int64).ravel(), "i32")
        return Memory(np.array(array).ravel(), element_type)

    def empty(self, elements, element_type):
        if element_type == "f32":
            return Memory(np.full(elements, np.nan, np.float32), "f32")
        return Memory(np.zeros(elements, launcher.STORAGE[element_type]),
                      element_type)

    def read(self, buffer, elements, element_type):
        return buffer.bits

    def free(self, buffer):
        pass

    def synchronize(self):
        pass


class HostMemoryEmulator(Emulator):
    """The emulator on buffers given by host addresses (CPU tensors'
    data_ptr): each memref argument becomes a Memory viewing that memory,
    so the kernels read and write the tensors themselves (the torch op's
    CUDA launches, run on CPU tensors); so does each TMA map, over its
    dims' elements (the wgmma kernel's contiguous q, k and v)."""

    _STORAGE = {"bf16": np.uint16, "f16": np.uint16, "f32": np.float32}

    def address(self, buffer):
        return buffer

    def launch(self, op, planned, stream=None):
        types = {a["name"]: a["element_type"]
                 for a in planned.desc["arguments"]
                 if a["kind"] in ("memref", "tensor_map")}

        def memory(arg):
            elements = (arg.elements if isinstance(arg, launcher.Memref)
                        else int(np.prod(arg.dims)))
            element = self._STORAGE[types[arg.name]]
            raw = (ctypes.c_byte * (elements * np.dtype(element).itemsize)
                   ).from_address(arg.buffer)
            return Memory(np.frombuffer(raw, element), types[arg.name])
        arguments = tuple(
            dataclasses.replace(a, buffer=memory(a))
            if isinstance(a, (launcher.Memref, launcher.TensorMap)) else a
            for a in planned.arguments)
        super().launch(op, dataclasses.replace(planned, arguments=arguments),
                       stream)


def compile_paged(cfg, page, opt=None, options=""):
    """{layout: (kernel op, launch description)} of the paged op's kernels
    (paged, paged-split, split-merge) for the heads, head dims and variant
    of `cfg` and pages of `page` tokens."""
    return _kernels_by_layout(paged_mlir.paged_ir(cfg, page), opt, options,
                              ("paged", "paged-split", "split-merge"),
                              f"{cfg.describe()}: no paged tensor-core kernels")


def _kernels_by_layout(module, opt, options, layouts, what):
    """{layout: (kernel op, launch description)} of the tensor-core kernels
    that convert-gated-attention-to-nvgpu makes of `module`: exactly
    `layouts`, or a ValueError starting with `what`."""
    out = runner.compile_module(
        module, [f"--convert-gated-attention-to-nvgpu={options}",
                 "--canonicalize", "--cse", "--mlir-print-op-generic"],
        opt=opt)
    kernels = {desc["layout"]: (find_kernel(out, name), desc)
               for name, desc in ptx_tools.launch_descriptions(out).items()}
    if set(kernels) != set(layouts):
        raise ValueError(f"{what} (got {sorted(kernels)})")
    return kernels


def run_paged(case, arrays, opt=None, options="", splits=1, schedule=None):
    """The paged kernels' result ([T, Hq, Dv], float64) on `arrays` of
    paged_cases.PagedCase `case` (an f16 or bf16 one), with the keys in
    `splits` parts (split-KV) or not, and the kernel's name. `schedule`:
    as for Emulator, for the sm_90a kernel."""
    kernels = compile_paged(case.dense_config(), case.page, opt, options)
    inputs, sizes = paged_inputs(arrays, case.dtype)
    out = launcher.run(Emulator(schedule).kernels(kernels), inputs, splits,
                       **sizes)
    name = kernels["paged-split" if splits > 1 else "paged"][1]["kernel"]
    return from_bits(out, case.dtype).astype(np.float64).reshape(
        sizes["t"], case.hq, case.dv), name


def paged_inputs(arrays, dtype):
    """(storage, sizes) of a paged op's launch (launcher.run) on `arrays`
    (paged_cases.build's: q, key_cache, value_cache, g or None, the
    tables): the operands' bits in `dtype` (f16 or bf16; an empty gate
    without g), the tables as int32; sizes b, mb and t."""
    def bits(x):
        return to_bits(np.asarray(x, np.float32).ravel(), dtype)
    g = arrays["g"]
    inputs = {"q": bits(arrays["q"]), "k": bits(arrays["key_cache"]),
              "v": bits(arrays["value_cache"]),
              "gate": bits(g) if g is not None else np.zeros(0, np.uint16)}
    for name in ("block_table", "seq_lens", "cu_seqlens_q"):
        inputs[name] = np.asarray(arrays[name], np.int32).ravel()
    b, mb = np.shape(arrays["block_table"])
    return inputs, {"b": b, "mb": mb, "t": len(arrays["q"])}


def compile_case(cfg, opt=None, options="", row_strides=None, lse=False):
    """(kernel op, launch description) of the tensor-core kernel of `cfg`;
    `options` are those of convert-gated-attention-to-nvgpu, `row_strides`
    those of mlir.attention_attributes; `lse`: of the op that returns its
    log-sum-exp too. The tool loads the plugins of runner.load_plugin;
    `opt` overrides it."""
    module = mlir.attention_function(cfg, "case", row_strides=row_strides,
                                     lse=lse)
    out = runner.compile_module(
        module, [f"--convert-gated-attention-to-nvgpu={options}",
                 "--canonicalize", "--cse", "--mlir-print-op-generic"],
        opt=opt)
    # (A static Sq = 1 brings split-KV's kernels: compile_decode.)
    descs = {name: desc
             for name, desc in ptx_tools.launch_descriptions(out).items()
             if desc["layout"] == "dense"}
    if len(descs) != 1:
        raise ValueError(f"{cfg.describe()}: no tensor-core kernel")
    (name, desc), = descs.items()
    return find_kernel(out, name), desc


def compile_decode(cfg, opt=None, options="", row_strides=None, lse=False):
    """{layout: (kernel op, launch description)} of the dense op's kernels
    for `cfg` at Sq = 1: dense, and split-KV's dense-split and
    split-merge; `row_strides` and `lse` as for compile_case."""
    return _kernels_by_layout(
        mlir.attention_function(cfg, "case", row_strides=row_strides,
                                lse=lse), opt,
        options, ("dense", "dense-split", "split-merge"),
        f"{cfg.describe()}: no split-KV decode kernels")


def run_decode(cfg, seed, splits, opt=None, options="", kv_bshd=False,
               q_padded=False):
    """(result, reference, kernel name) of decode step `cfg` (Sq = 1) on
    cfg.inputs(seed), its keys in `splits` parts merged by the merge
    kernel (1: the decode step's direct kernel); with `kv_bshd` K and V stored [B, S, H, D] (the torch op's
    bshd layout: kernels compiled for their rows); with `q_padded` Q's rows
    2 x D apart, NaN between them (q's half of a projection: a head stride
    that is not D)."""
    inputs = cfg.inputs(seed)
    arrays = {arg: inputs[op] for op, arg in (
        ("query", "q"), ("key", "k"), ("value", "v"), ("gate", "gate"))}
    strides = {}
    if kv_bshd:
        for name in ("k", "v"):
            x = arrays[name]
            _, h, s, d = x.shape
            arrays[name] = x.transpose(0, 2, 1, 3)
            strides[name] = {"B": s * h * d, "H": d, "S": h * d}
    if q_padded:
        q = arrays["q"]
        b, h, s, d = q.shape
        arrays["q"] = np.concatenate([q, np.full_like(q, np.nan)], axis=3)
        strides["q"] = {"B": h * s * 2 * d, "H": s * 2 * d, "S": 2 * d}
    kernels = compile_decode(cfg, opt, options, row_strides={
        n: st["S"] for n, st in strides.items()} or None)
    bits = {arg: to_bits(np.ascontiguousarray(x, np.float32).ravel(),
                         cfg.dtype) for arg, x in arrays.items()}
    out = launcher.run(Emulator().kernels(kernels), bits, splits, strides,
                       b=cfg.b, sq=1, skv=cfg.skv)
    result = from_bits(out, cfg.dtype).astype(np.float64).reshape(
        cfg.shapes()["result"])
    name = kernels["dense-split" if splits > 1 else "dense"][1]["kernel"]
    return result, cfg.reference(inputs), name


def run_case(cfg, seed, opt=None, options="", schedule=None, sm_count=None):
    """(result, reference, kernel name) of `cfg` on cfg.inputs(seed);
    `schedule` as for Emulator; `sm_count`: a persistent kernel's grid is
    that many CTAs (at most), each looping over tiles (launch.grid)."""
    kernel, desc = compile_case(cfg, opt, options)
    inputs = cfg.inputs(seed)
    bits = {arg: to_bits(inputs[op].astype(np.float32).ravel(), cfg.dtype)
            for op, arg in (("query", "q"), ("key", "k"), ("value", "v"),
                            ("gate", "gate"))}
    out = launcher.run(Emulator(schedule).kernel(kernel, desc), bits,
                       b=cfg.b, sq=cfg.sq, skv=cfg.skv, sm_count=sm_count)
    result = from_bits(out, cfg.dtype).astype(np.float64).reshape(
        cfg.shapes()["result"])
    return result, cfg.reference(inputs), desc["kernel"]


def check_text(text, cfg, seed, sm_count=None):
    """accuracy.compare of the one tensor-core kernel in `text` (the
    generic form of convert-gated-attention-to-nvgpu's output, perhaps with
    a fault injected) on cfg.inputs(seed) against the float64 reference;
    `sm_count` as for run_case."""
    (name, desc), = ptx_tools.launch_descriptions(text).items()
    inputs = cfg.inputs(seed)
    bits = {arg: to_bits(inputs[op].astype(np.float32).ravel(), cfg.dtype)
            for op, arg in (("query", "q"), ("key", "k"), ("value", "v"),
                            ("gate", "gate"))}
    out = launcher.run(Emulator().kernel(find_kernel(text, name), desc), bits,
                       b=cfg.b, sq=cfg.sq, skv=cfg.skv, sm_count=sm_count)
    result = from_bits(out, cfg.dtype).astype(np.float64).reshape(
        cfg.shapes()["result"])
    return accuracy.compare(cfg, result, cfg.reference(inputs), inputs,
                            kernel=desc)


def run_lse(cfg, seed, opt=None, options="", schedule=None, splits=None,
            sm_count=None):
    """(result, log-sum-exp, kernel name) of the op of `cfg` that returns
    its log-sum-exp, on cfg.inputs(seed): its direct kernel, or for a
    decode step (Sq = 1) with `splits` its keys in that many parts and the
    merge writing L. `schedule` as for Emulator, `sm_count` as for
    run_case."""
    inputs = cfg.inputs(seed)
    bits = {arg: to_bits(inputs[op].astype(np.float32).ravel(), cfg.dtype)
            for op, arg in (("query", "q"), ("key", "k"), ("value", "v"),
                            ("gate", "gate"))}
    if splits is None:
        kernels = {"dense": compile_case(cfg, opt, options, lse=True)}
        splits = 1
    else:
        kernels = compile_decode(cfg, opt, options, lse=True)
    out, lse = launcher.run(Emulator(schedule).kernels(kernels), bits,
                            splits, lse=True, b=cfg.b, sq=cfg.sq,
                            skv=cfg.skv, sm_count=sm_count)
    result = from_bits(out, cfg.dtype).astype(np.float64).reshape(
        cfg.shapes()["result"])
    name = kernels["dense-split" if splits > 1 else "dense"][1]["kernel"]
    return result, lse.reshape(cfg.b, cfg.hq, cfg.sq), name


def check_lse(cfg, seed, opt=None, options="", schedule=None, splits=None,
              sm_count=None):
    """(passed, line) of run_lse's output and log-sum-exp against the
    float64 reference within the error model (accuracy.compare and
    compare_lse in the kernels' log2 domain)."""
    out, lse, name = run_lse(cfg, seed, opt, options, schedule, splits,
                             sm_count)
    inputs = cfg.inputs(seed)
    result = accuracy.compare(cfg, out, cfg.reference(inputs), inputs,
                              kernel=name)
    lse_result = accuracy.compare_lse(cfg, lse, inputs, log2_domain=True)
    ok = result.ok and lse_result.ok
    where = f"{name}" + (f" splits={splits}" if splits else "")
    return ok, (f"{'PASS' if ok else 'FAIL'} {cfg.describe()} [{where}] "
                f"{accuracy.describe(result)} lse "
                f"{accuracy.describe(lse_result)}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--case", action="append", default=[])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--opt", help="gated-attention-opt to use")
    p.add_argument("--options", default="",
                   help="options of convert-gated-attention-to-nvgpu, "
                   "e.g. 'warps=2 key-block=32'")
    p.add_argument("--schedule", type=int, metavar="SEED",
                   help="sm_90a kernel: interleave the warpgroups at random "
                   "(seeded) instead of running each as far as it can")
    p.add_argument("--sms", type=int, metavar="N",
                   help="a persistent kernel (the dense sm_90a one) runs on "
                   "a device of N SMs: at most N x ctas_per_sm CTAs, each "
                   "looping over tiles (default: one CTA per tile)")
    p.add_argument("--lse", action="store_true",
                   help="the op returns its log-sum-exp too: check both")
    p.add_argument("--splits", type=int, metavar="N",
                   help="with --lse, decode steps (sq=1): split-KV in N "
                   "parts and the merge")
    args = p.parse_args(argv)
    if args.splits is not None and not args.lse:
        p.error("--splits needs --lse")
    try:
        cfgs = [c for s in args.case for c in config.parse_cases(s)]
    except ValueError as e:
        p.error(str(e))
    if not cfgs:
        p.error("no cases")
    if args.splits is not None and (args.splits < 1 or
                                    any(c.sq != 1 for c in cfgs)):
        p.error("--splits takes a positive count and decode steps (sq=1)")
    failures = 0
    for i, cfg in enumerate(cfgs):
        seed = args.seed * 1000 + i
        if args.lse:
            ok, line = check_lse(cfg, seed, args.opt, args.options,
                                 args.schedule, args.splits, args.sms)
            failures += not ok
            print(line, flush=True)
            continue
        out, ref, name = run_case(cfg, seed, args.opt, args.options,
                                  args.schedule, args.sms)
        result = accuracy.compare(cfg, out, ref, cfg.inputs(seed),
                                  kernel=name)
        failures += not result.ok
        print(f"{'PASS' if result.ok else 'FAIL'} {cfg.describe()} [{name}] "
              f"{accuracy.describe(result)}", flush=True)
    print(f"{len(cfgs) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
