//===- Passes.td - dialect-independent passes ---------------*- tablegen -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_GENERIC_TRANSFORMS_PASSES_TD
#define GATED_ATTENTION_GENERIC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DedupGPUKernelsPass : Pass<"dedup-gpu-kernels", "::mlir::ModuleOp"> {
  let summary = "Keep one copy of structurally identical outlined GPU kernels";
  let description = [{
    A model graph repeats its layers, and outlining makes one `gpu.module`
    per launch: a 48-layer stack has hundreds of kernels of which a few dozen
    differ. This pass keeps the first of every set of kernels that are equal
    up to their names (same function type and attributes, same target
    attributes on the module, equivalent bodies ignoring locations),
    redirects every `gpu.launch_func` to it and erases the copies, so that
    each distinct kernel is compiled (by `gpu-module-to-binary`) once.
    Modules with more than one symbol are left alone.

    ```mlir
    gpu.launch_func @layer0_kernel::@layer0_kernel ...
    gpu.launch_func @layer1_kernel::@layer1_kernel ...   // same body
    // becomes
    gpu.launch_func @layer0_kernel::@layer0_kernel ...
    gpu.launch_func @layer0_kernel::@layer0_kernel ...
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def DecomposeAggregatedOpsPass : Pass<"decompose-aggregated-ops"> {
  let summary = "Decompose ops implementing linalg's AggregatedOpInterface";
  let description = [{
    Replaces every op implementing `linalg::AggregatedOpInterface` (upstream:
    `linalg.softmax`, the Winograd transforms) by its decomposition into
    simpler linalg ops, through the interface's `decomposeOperation`. Both
    pipelines run it after raising: a softmax that
    `--gated-attention-raise` did not fold into the attention op (say,
    under a sliding-window mask) is then lowered like any other linalg code
    instead of surviving into the output.

    ```mlir
    %p = linalg.softmax dimension(3) ins(%s : tensor<1x4x8x8xf32>)
        outs(%e : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    // becomes max, sub + exp, sum and divide linalg.generic ops
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def VerifyVectorSizesPass : Pass<"verify-vector-sizes"> {
  let summary = "Fail on vector types of more than 65,536 elements";
  let description = [{
    The first pass of both pipelines, with the nested-module check of
    `verify-lowered`. Vectors are register values that the lowerings
    unroll: the CPU pipeline fully unrolls transfers row by row (a
    `vector.transfer_read` of `vector<1099511627776x4xf32>` never ended,
    one of `vector<65536x4xf32>` takes seconds), and LLVM counts a vector's
    elements in 32 bits (`vector<1099511627776xf32>` translated to
    `<0 x float>` without a word). Any vector type of more than 2^16
    elements, in a result, a block argument or a type an attribute holds
    (a declaration's signature), is an error at its op.

    ```mlir
    // error: 'vector.transfer_read' uses 'vector<1099511627776x4xf32>',
    // 4398046511104 elements; the pipelines take vectors of at most 65536
    %v = vector.transfer_read %m[%c0, %c0], %z
        : memref<1099511627776x4xf32>, vector<1099511627776x4xf32>
    ```
  }];
}

def VerifyModuleAttributesPass : Pass<"verify-module-attributes"> {
  let summary = "Fail on data layout specifications and on module "
                "attributes translation to LLVM IR cannot read";
  let description = [{
    The second pass of both pipelines, after `verify-vector-sizes`;
    `verify-translation` and `verify-lowered` (on each GPU module) check
    the same. The pipelines
    lower for their target: 64-bit index and the host's or NVPTX's data
    layout. A data layout specification in the input (a
    `#dlti.dl_spec`, under any attribute name: `builtin.module` takes the
    first attribute that holds one, and the DLTI dialect verifies it only
    as `dlti.dl_spec`) is an error at its op: MLIR's verifier accepts
    layouts that translation to LLVM IR aborts on (an ABI alignment of 0,
    a stack alignment of 3 bits) or, unverified, crashes on, and lowerings
    query it before. `llvm.data_layout`, a string the LLVM dialect checks
    with LLVM's parser, sets the LLVM IR module's layout. On a
    `builtin.module` or `gpu.module`, `llvm.target_triple`, `llvm.ident`
    and `llvm.commandline` must be strings and `llvm.dependent_libraries`
    an array of strings (translation casts them: another kind crashed it).

    ```mlir
    // error: 'builtin.module' carries a data layout specification
    // ('flti.dl_spec'), which the pipelines do not take
    module attributes {flti.dl_spec = #dlti.dl_spec<f16 = 32 : i64>} {}
    ```
  }];
}

def VerifyLoweredPass : Pass<"verify-lowered"> {
  let summary = "Fail on ops a pipeline left unlowered and unlinked PTX";
  let description = [{
    The last pass of both pipelines. It fails, at the op's location and
    naming it, on the first op whose dialect (or, for an entry with a dot
    such as `gpu.binary`, whose name) is not in `dialects` (what the
    pipeline promises to produce: a pipeline lowers everything it accepts or
    fails), on a `builtin.unrealized_conversion_cast` (a conversion that
    did not finish), on an op in a module's body that LLVM IR has no place
    for (anything but symbols and LLVM's module-level ops, such as
    `llvm.module_flags`: translation would build it with no block and
    crash), on a constant of more than 2^28 bytes (256 MiB), counted by
    the attribute's type or the op's, whichever is larger, and each row on
    its own (translation writes out as many elements as a global's type
    holds, a splat's too, and builds an empty constant's rows: a
    2^48-element splat, and one of `tensor<0x2^40xbf16>`, aborted it
    asking for TiB), on what `verify-translation` rejects at an op (a type
    LLVM IR does not have inside an aggregate, a definition named
    `llvm.*`), and on any `gpu.binary`
    object holding PTX that still declares a libdevice function (`.extern .func __nv_expf`): such PTX does not
    assemble, and means libdevice was not found at compile time.

    The PTX pipeline also runs it on each `gpu.module` with `dialects` llvm
    and nvvm, once the kernels are lowered and before they are compiled: an
    op the NVVM lowering left there (a `complex.exp`) is named at its
    location instead of failing the LLVM IR translation of the whole module.

    The pipelines lower the top-level module's functions, as mlir-opt's
    do, so they also run this pass first with `nested-only`: an op a nested
    `builtin.module` holds that is not in `dialects` fails there, before
    module-level passes lower it in part, with a note that shows how to
    nest `pipeline` to lower that module.

    ```mlir
    // --verify-lowered=dialects=builtin,llvm
    %0 = linalg.softmax ...   // error: 'linalg.softmax' was not lowered
    ```
  }];
  let options = [
    ListOption<"dialects", "dialects", "std::string",
               "Dialects (or ops, `gpu.binary`) that may remain (default: "
               "builtin, llvm)">,
    Option<"pipeline", "pipeline", "std::string", /*default=*/"\"\"",
           "The pipeline this pass ends (named in diagnostics)">,
    Option<"nestedOnly", "nested-only", "bool", /*default=*/"false",
           "Check only the ops in nested modules">
  ];
}

def VerifyTranslationPass : Pass<"verify-translation", "::mlir::ModuleOp"> {
  let summary = "Fail unless the module translates to LLVM IR that LLVM's "
                "verifier accepts";
  let description = [{
    The last pass of both pipelines, after `verify-lowered`: it translates
    a copy of the module to LLVM IR, as `mlir-translate --mlir-to-llvmir`
    or the ExecutionEngine would next, and runs LLVM's verifier on the
    result, so that a pipeline that exits 0 has written output that
    translates. LLVM dialect ops in the input pass through the pipelines as
    they are, and the LLVM dialect's verifier accepts some that LLVM's does
    not (a private global named `@llvm.used`, a call to an intrinsic with
    the wrong signature); translation prints the verifier's complaint and
    emits no diagnostic. Here it becomes an error at the module.

    Before translating, each op is checked for what translation would crash
    on rather than reject, with an error at the op: a type LLVM IR does not
    have inside an aggregate (`!llvm.array<4 x tf32>`, `vector<2xf8E5M2>`;
    the aggregates' verifiers do not look at their elements), and a
    definition under a name LLVM reserves for intrinsics (`llvm.`): a
    `gpu.binary @llvm.x` became functions `@llvm.x_load` that LLVM's
    verifier rejects; a function whose `personality` is not a function
    (translation resolves it unchecked: a crash); and what
    `verify-module-attributes` checks. `verify-lowered` runs the same
    checks on each GPU module before its kernels are compiled.

    ```mlir
    // error: 'llvm.mlir.global' uses '!llvm.array<4 x tf32>' (its
    // 'global_type'), which holds 'tf32': LLVM IR has no such type, so
    // translation to LLVM IR cannot build it
    llvm.mlir.global private @g() : !llvm.array<4 x tf32>
    ```
  }];
}

#endif // GATED_ATTENTION_GENERIC_TRANSFORMS_PASSES_TD
