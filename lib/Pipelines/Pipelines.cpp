//===- Pipelines.cpp - gated-attention pass pipelines ---------------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Pipelines/Pipelines.h"
#include "GatedAttention/Conversion/NVGPUChips.h"
#include "GatedAttention/Conversion/Passes.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Transforms.h"
#include "GatedAttention/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/X86TargetParser.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::gated_attention;

/// One-shot bufferization with identity layouts at function boundaries, so
/// that callers (printMemrefF32, ctypes, GPU launches) see plain memrefs.
/// A loop may carry an attention result (a loop over layers): its yield is
/// a new buffer each iteration, not the iter_arg's.
static void addFunctionBoundaryBufferization(OpPassManager &pm) {
  bufferization::OneShotBufferizePassOptions options;
  options.bufferizeFunctionBoundaries = true;
  options.allowReturnAllocsFromLoops = true;
  options.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(options));
}

/// Frees the buffers bufferization allocated (upstream's deallocation
/// pipeline). It clones buffers it cannot prove unaliased (a returned
/// argument): clones become alloc + copy.
static void addBufferDeallocation(OpPassManager &pm) {
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createConvertBufferizationToMemRefPass());
}

/// The features (LLVM's names: avx2, avx512f, avx512bf16, amx-bf16, ...) of
/// the CPU `target-cpu` names: this host's for `host` or `native`, LLVM's
/// table for an x86-64 CPU name; nullopt for a name LLVM does not know.
static std::optional<llvm::StringMap<bool>> targetCPUFeatures(StringRef cpu) {
  if (cpu == "host" || cpu == "native")
    return llvm::sys::getHostCPUFeatures();
  if (llvm::X86::parseArchX86(cpu, /*Only64Bit=*/true) == llvm::X86::CK_None)
    return std::nullopt;
  // The CPU's own features; those they imply (avx2 -> avx) are not listed,
  // and the checks below name the widest of each family.
  SmallVector<StringRef> names;
  llvm::X86::getFeaturesForCPU(cpu, names);
  llvm::StringMap<bool> features;
  for (StringRef name : names)
    features[name] = true;
  return features;
}

/// The widest vector registers among `features`: 512 with AVX-512, 256 with
/// AVX2 (x86), else 128 (SSE, NEON).
static int64_t vectorBitsOf(const llvm::StringMap<bool> &features) {
  if (features.lookup("avx512f"))
    return 512;
  if (features.lookup("avx2") || features.lookup("avx"))
    return 256;
  return 128;
}

/// Whether `vdpbf16ps` multiplies faster than f32 FMAs on `cpu` (LLVM's
/// name). It does two multiply-adds a lane where an FMA does one; AMD's Zen
/// issues both at the same rate, so there it doubles the products (1.1-1.6x
/// `fma` on a Zen 4). Intel cores issue it on one port and 512-bit FMAs on
/// two, the same products a cycle, and the pair packing and the rounding of
/// P come on top: 0.55-0.73x `fma` on Sapphire and Emerald Rapids Xeons
/// (bench/README.md).
static bool bf16DotOutrunsFMA(StringRef cpu) {
  return cpu.starts_with("znver");
}

static StringRef matrixUnitsOf(const llvm::StringMap<bool> &features,
                               StringRef cpu) {
  if (features.lookup("amx-tile") && features.lookup("amx-bf16"))
    return "amx";
  if (features.lookup("avx512bf16") && bf16DotOutrunsFMA(cpu))
    return "avx512-bf16";
  return "fma";
}

/// target-cpu's features; validation has rejected unknown names, so an
/// unknown one here (a pipeline built without validation) is taken as the
/// baseline x86-64 (SSE2), which every x86-64 CPU runs.
static llvm::StringMap<bool>
targetFeatures(const GatedAttentionToLLVMPipelineOptions &o) {
  return targetCPUFeatures(o.targetCpu).value_or(llvm::StringMap<bool>());
}

/// target-cpu's name as LLVM spells it: this host's for `host` or `native`.
static StringRef targetCPUName(const GatedAttentionToLLVMPipelineOptions &o) {
  if (o.targetCpu == "host" || o.targetCpu == "native")
    return llvm::sys::getHostCPUName();
  return o.targetCpu;
}

/// The vector width the pipeline targets.
static int64_t targetVectorBits(const GatedAttentionToLLVMPipelineOptions &o) {
  return o.vectorBits ? o.vectorBits : vectorBitsOf(targetFeatures(o));
}

/// What `matrix-units` selects. `host` takes the target CPU's AMX, else its
/// AVX512-BF16 where that outruns FMAs, when the target is 512 bits wide.
/// (This machine's features list AMX only where Linux enables the tile
/// state, XCR0.)
static StringRef
resolvedMatrixUnits(const GatedAttentionToLLVMPipelineOptions &options) {
  StringRef units = options.matrixUnits;
  if (units != "host")
    return units;
  if (targetVectorBits(options) < 512)
    return "fma";
  return matrixUnitsOf(targetFeatures(options), targetCPUName(options));
}

/// The contractions' register tile: one accumulator row is 2 vector
/// registers wide; AVX-512 takes 8 rows (16 accumulators of its 32
/// registers), narrower vectors 6 (12 of 16, leaving the two right-operand
/// vectors and a broadcast). A tile larger than the register file spills
/// in every FMA. On a Zen 4 held to AVX2 (bench/cpu_attention_ab.py, one
/// thread, 2026-12-05) 6 rows ran 1.07-1.11x as fast as 4 (8 accumulators,
/// exactly the FMAs the two 4-cycle pipes need in flight, with no slack);
/// with AVX-512, 10 and 12 rows ran 0.97x of 8.
static GatedAttentionVectorizeTilesPassOptions
registerTileFor(const GatedAttentionToLLVMPipelineOptions &options) {
  int64_t bits = targetVectorBits(options);
  int64_t lanes = bits / 32;
  // Columns that do not divide the key block leave a remainder tile
  // (gated-attention-vectorize-tiles splits it off): keep them whole
  // vectors by halving until they divide.
  auto dividing = [](int64_t size, int64_t block) {
    while (block % size)
      size /= 2;
    return size;
  };
  GatedAttentionVectorizeTilesPassOptions tile;
  tile.registerCols = options.registerCols
                          ? options.registerCols
                          : dividing(2 * lanes, options.keyBlock);
  tile.registerRows = options.registerRows ? options.registerRows
                      : bits >= 512        ? 8
                                           : 6;
  // Reduction steps per unrolled iteration. With 512-bit vectors, 4 steps
  // (an 8 x 32 tile's iteration is 64 FMAs, its 8 right-operand loads
  // issued first) ran 1.05-1.10x as fast as 32 steps (6 KiB of code an
  // iteration) in f32 on an AMX Xeon (bench/cpu_attention_ab.py, H 8 D 128
  // and Qwen3-Next, S 1024-4096, 2026-12-06); bf16 pairs were unchanged.
  // 256-bit tiles ran 0.96-0.98x with fewer steps and keep 32.
  tile.registerDepth = bits >= 512 ? 4 : 32;
  tile.matrixUnits = resolvedMatrixUnits(options).str();
  return tile;
}

/// Graph level, shared by both pipelines: unfused attention written by
/// frontends becomes our op (unless `raise` is off); then elementwise ops fuse
/// with their neighbours (reshapes propagated), so that a gate applied to an
/// attention operand (G2-G4) is computed in the same pass as the layout
/// change producing the operand instead of a pass of its own. `unpage`:
/// paged attention becomes one dense op per sequence here (the reference
/// path); the tiled CPU path and the PTX pipeline keep it for their paged
/// kernels.
static void addGraphLevelPasses(OpPassManager &funcPm, bool raise,
                                bool unpage) {
  if (raise)
    funcPm.addPass(createGatedAttentionRaisePass());
  if (unpage)
    funcPm.addPass(createGatedAttentionUnpagePass());
  // What raising did not fold (a softmax under another mask) is plain linalg.
  funcPm.addPass(createDecomposeAggregatedOpsPass());
  // Elementwise arith/math on whole tensors (an `arith.extf` or `addf` of
  // tensors in user code) becomes linalg, which fuses and bufferizes.
  funcPm.addPass(createConvertElementwiseToLinalgPass());
  funcPm.addPass(createCanonicalizerPass());
  funcPm.addPass(createLinalgGeneralizeNamedOpsPass());
  funcPm.addPass(createLinalgElementwiseOpFusionPass());
  funcPm.addPass(createCanonicalizerPass());
  // The user's affine loops become scf ones, which bufferization knows (an
  // affine.for that carries a tensor is not bufferizable).
  funcPm.addPass(createLowerAffinePass());
}

/// What each pipeline produces, checked after it runs and, with
/// `nestedOnly`, in nested modules before (the pipelines do not enter them).
/// OpenMP ops translate to LLVM IR with the rest.
static VerifyLoweredPassOptions
cpuOutput(const GatedAttentionToLLVMPipelineOptions &options, bool nestedOnly) {
  VerifyLoweredPassOptions lowered;
  lowered.dialects = {"builtin", "llvm"};
  if (options.openmp)
    lowered.dialects.push_back("omp");
  lowered.pipeline = "gated-attention-to-llvm";
  lowered.nestedOnly = nestedOnly;
  return lowered;
}

static VerifyLoweredPassOptions gpuOutput(bool nestedOnly) {
  VerifyLoweredPassOptions lowered;
  // Of the gpu dialect, what translates to LLVM IR with the host code.
  lowered.dialects = {"builtin", "gpu.binary", "gpu.launch_func", "llvm"};
  lowered.pipeline = "gated-attention-to-ptx";
  lowered.nestedOnly = nestedOnly;
  return lowered;
}

void mlir::gated_attention::buildGatedAttentionToLLVMPipeline(
    OpPassManager &pm, const GatedAttentionToLLVMPipelineOptions &options) {
  pm.addPass(createVerifyVectorSizesPass());
  pm.addPass(createVerifyModuleAttributesPass());
  pm.addPass(createVerifyLoweredPass(cpuOutput(options, /*nestedOnly=*/true)));
  // Tensor level: our ops become linalg (tiled online softmax, or the
  // reference form).
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  addGraphLevelPasses(funcPm, options.raiseAttention,
                      /*unpage=*/options.reference);
  // The backward: the FlashAttention-2-shaped tiles, or the reference form.
  // f64 ops take the reference forms either way: the tiled lowerings
  // accumulate in f32 by construction.
  if (!options.reference) {
    ConvertGatedAttentionBackwardToLinalgPassOptions wideBackward;
    wideBackward.wideOnly = true;
    funcPm.addPass(
        createConvertGatedAttentionBackwardToLinalgPass(wideBackward));
    GatedAttentionTileBackwardPassOptions backwardOptions;
    backwardOptions.queryBlock = options.queryBlock;
    backwardOptions.keyBlock = options.keyBlock;
    backwardOptions.matrixUnits = resolvedMatrixUnits(options).str();
    funcPm.addPass(createGatedAttentionTileBackwardPass(backwardOptions));
  }
  funcPm.addPass(createConvertGatedAttentionBackwardToLinalgPass());
  if (options.reference) {
    funcPm.addPass(createConvertGatedAttentionToLinalgPass());
  } else {
    ConvertGatedAttentionToLinalgPassOptions wideForward;
    wideForward.wideOnly = true;
    funcPm.addPass(createConvertGatedAttentionToLinalgPass(wideForward));
    GatedAttentionTilePassOptions tileOptions;
    tileOptions.queryBlock = options.queryBlock;
    tileOptions.keyBlock = options.keyBlock;
    tileOptions.diagonalKeyBlock = options.diagonalKeyBlock;
    // Splitting keys pays only on parallel threads.
    tileOptions.kvSplits = options.openmp || options.kvSplits != "auto"
                               ? std::string(options.kvSplits)
                               : std::string("1");
    tileOptions.threads = options.threads;
    funcPm.addPass(createGatedAttentionTilePass(tileOptions));
    funcPm.addPass(createCanonicalizerPass());
    funcPm.addPass(createCSEPass());
    funcPm.addPass(
        createGatedAttentionVectorizeTilesPass(registerTileFor(options)));
  }
  funcPm.addPass(createCanonicalizerPass());
  funcPm.addPass(createCSEPass());

  // A result stored into a caller's buffer (materialize_in_destination, as
  // the torch op's functions do) is computed in it: no result-sized
  // allocation and copy.
  pm.addPass(createGatedAttentionTileResultsInPlacePass());
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  addFunctionBoundaryBufferization(pm);
  addBufferDeallocation(pm);
  // AMX multiplies the bf16 pair contractions from their buffers.
  if (resolvedMatrixUnits(options) == "amx")
    pm.addPass(createGatedAttentionAMXTilesPass());

  // Loops, then LLVM. bf16 has no native x86 arithmetic: expand its
  // conversions into integer ops.
  pm.addNestedPass<func::FuncOp>(createForallToParallelLoopPass());
  // Copies become loops, not calls into libmlir_c_runner_utils; copies of
  // static rows (the tiles' stacked rows, padded blocks, initial state) one
  // vector per row, since llc vectorizes no loops.
  ConvertMemRefCopyToLinalgPassOptions copyOptions;
  copyOptions.vectorRows = 1024;
  pm.addNestedPass<func::FuncOp>(
      createConvertMemRefCopyToLinalgPass(copyOptions));
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  if (options.openmp) {
    pm.addPass(createGatedAttentionTilesToOpenMPPass());
    pm.addPass(createConvertSCFToOpenMPPass());
    pm.addPass(createCanonicalizerPass());
  }
  pm.addNestedPass<func::FuncOp>(createConvertVectorToSCFPass(
      VectorTransferToSCFOptions().enableFullUnroll()));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  arith::ArithExpandOpsPassOptions expandOptions;
  expandOptions.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expandOptions));
  // memref before scf: the memref.alloca_scope that convert-scf-to-openmp
  // wraps around parallel bodies holding allocas is lowered while its region
  // is still one block; convert-scf-to-cf would split it first.
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createSCFToControlFlowPass());
  // Row sums and maxima may be reassociated into tree reductions.
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  vectorToLLVM.reassociateFPReductions = true;
  // (amx takes AVX512-BF16's dot products for the contractions whose tiles
  // are not whole AMX tiles.)
  StringRef units = resolvedMatrixUnits(options);
  vectorToLLVM.x86Vector = units == "avx512-bf16" || units == "amx";
  vectorToLLVM.amx = units == "amx";
  pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  pm.addPass(createConvertMathToLLVMPass());
  // What LLVM has no instruction or intrinsic for: integer powers as
  // generated functions, the rest (erf, erfc, cbrt: exact GELU) as calls
  // into libm, which mlir-runner and the Python package's shared libraries
  // link. (math.clampf stays an error: upstream defines and expands it as
  // max(min(x, lo), hi), which is not a clamp.)
  pm.addPass(createConvertMathToFuncs());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  if (options.openmp)
    pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createVerifyLoweredPass(cpuOutput(options, /*nestedOnly=*/false)));
  pm.addPass(createVerifyTranslationPass());
}

/// Upstream's gpu-lower-to-nvvm-pipeline (gpu::buildLowerToNVVMPassPipeline
/// with 64-bit index, O2 and PTX output), stage by stage: its builder has no
/// place for a check between lowering the kernels and compiling them, where
/// an op the NVVM lowering left is still an op that can be named (the
/// translation to LLVM IR fails on the whole module, naming the cast around
/// it). math.exp becomes libdevice's __nv_expf, linked from the CUDA toolkit
/// (see findCUDAToolkit).
static void addLowerToNVVM(OpPassManager &pm, StringRef chip,
                           StringRef features) {
  // Common: what is left of the host and kernel code to LLVM, the target
  // attached to each gpu.module.
  pm.addPass(createConvertNVGPUToNVVMPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = chip.str();
  target.features = features.str();
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createArithToLLVMConversionPass());
  ConvertIndexToLLVMPassOptions index;
  index.indexBitwidth = 64;
  pm.addPass(createConvertIndexToLLVMPass(index));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  // Kernels: GPU ops to NVVM, then checked (the ops a kernel module may
  // hold are those that translate to LLVM IR for NVPTX).
  ConvertGpuOpsToNVVMOpsOptions kernels;
  kernels.indexBitwidth = 64;
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps(kernels));
  pm.addNestedPass<gpu::GPUModuleOp>(createCanonicalizerPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCSEPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());
  VerifyLoweredPassOptions lowered;
  lowered.dialects = {"llvm", "nvvm"};
  lowered.pipeline = "gated-attention-to-ptx";
  pm.addNestedPass<gpu::GPUModuleOp>(createVerifyLoweredPass(lowered));

  // Host: launches to runtime calls, kernels to gpu.binary.
  pm.addPass(createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::gated_attention::buildGatedAttentionToPTXPipeline(
    OpPassManager &pm, const GatedAttentionToPTXPipelineOptions &options) {
  pm.addPass(createVerifyVectorSizesPass());
  pm.addPass(createVerifyModuleAttributesPass());
  pm.addPass(createVerifyLoweredPass(gpuOutput(/*nestedOnly=*/true)));
  addGraphLevelPasses(pm.nest<func::FuncOp>(), options.raiseAttention,
                      /*unpage=*/false);
  // f16/bf16 attention: the tensor-core flash kernel, emitted directly as a
  // gpu.module + gpu.launch_func.
  ConvertGatedAttentionToNVGPUPassOptions mma;
  mma.warps = options.warps;
  mma.keyBlock = options.keyBlock;
  mma.chip = options.chip;
  mma.kernel = options.kernel;
  mma.persistent = options.persistent;
  mma.smCount = options.smCount;
  pm.addPass(createConvertGatedAttentionToNVGPUPass(mma));
  // Paged ops the kernel does not take (f32, odd head dims): dense ops per
  // sequence, like the rest (f32): nested scf.parallel on memrefs.
  pm.addNestedPass<func::FuncOp>(createGatedAttentionUnpagePass());
  ConvertGatedAttentionToParallelRowsPassOptions rows;
  rows.rowsPerBlock = options.rowsPerBlock;
  pm.addPass(createConvertGatedAttentionToParallelRowsPass(rows));

  // Host side: tensors to buffers (freed below, once kernels are outlined).
  addFunctionBoundaryBufferization(pm);

  // The rest of the graph (projections, norms, rotary embeddings, layout
  // changes): linalg on buffers becomes parallel loops, one GPU thread per
  // output element of each op, reductions sequential in the thread. A simple
  // correct path; attention is the fused kernel above. These loops and the
  // SIMT kernel's are mapped to blocks and threads in one go, before
  // anything canonicalizes the SIMT kernel's two loop levels into one.
  pm.addNestedPass<func::FuncOp>(createConvertMemRefCopyToLinalgPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createGatedAttentionGpuLoopMappingsPass());
  pm.addNestedPass<func::FuncOp>(createGpuMapParallelLoopsPass());
  pm.addPass(createConvertParallelLoopToGpuPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createCanonicalizerPass());
  // Repeated layers outline repeated kernels: compile each distinct one once.
  pm.addPass(createDedupGPUKernelsPass());
  // The host frees each buffer at the end of the block that owns it, after
  // its launches (synchronous ones: LaunchEffects.h). Not earlier: the
  // deallocation pipeline canonicalizes, which would fold the SIMT kernel's
  // loop levels before they are mapped.
  addBufferDeallocation(pm);

  // Kernels to PTX (the oldest PTX ISA that knows the chip), host to LLVM.
  const NVGPUChip *chip = lookupNVGPUChip(options.chip);
  addLowerToNVVM(pm, options.chip,
                 chip ? chip->ptxFeatures.str() : std::string("+ptx80"));
  pm.addPass(createVerifyLoweredPass(gpuOutput(/*nestedOnly=*/false)));
  pm.addPass(createVerifyTranslationPass());
}

//===----------------------------------------------------------------------===//
// Option validation
//===----------------------------------------------------------------------===//

using ErrorHandler = function_ref<LogicalResult(const Twine &)>;

/// `value` of option `name` lies in [lo, hi].
static LogicalResult checkRange(StringRef name, int64_t value, int64_t lo,
                                int64_t hi, ErrorHandler error) {
  if (value >= lo && value <= hi)
    return success();
  return error(llvm::formatv("option '{0}' must be in [{1}, {2}], got {3}",
                             name, lo, hi, value));
}

LogicalResult mlir::gated_attention::validateGatedAttentionToLLVMOptions(
    const GatedAttentionToLLVMPipelineOptions &options, ErrorHandler error) {
  // Query and key blocks are register/cache tiles: a few hundred rows at
  // most pay off, and larger ones make the vectorizer build huge vectors.
  // 0 (auto) picks multiples of 64 (gated-attention-tile).
  bool ok = succeeded(
      checkRange("query-block", options.queryBlock, 0, kMaxCPUBlock, error));
  ok &= succeeded(
      checkRange("key-block", options.keyBlock, 0, kMaxCPUBlock, error));
  ok &= succeeded(checkRange("diagonal-key-block", options.diagonalKeyBlock, 0,
                             kMaxCPUBlock, error));
  // 0 picks by the vector width; explicit tiles stay within what the
  // vectorizer unrolls into registers (a tile that does not divide its
  // block leaves a remainder tile: gated-attention-vectorize-tiles).
  ok &= succeeded(
      checkRange("register-rows", options.registerRows, 0, 64, error));
  ok &= succeeded(
      checkRange("register-cols", options.registerCols, 0, 256, error));
  if (!targetCPUFeatures(options.targetCpu))
    ok &= succeeded(error(llvm::formatv(
        "option 'target-cpu': unknown x86-64 CPU '{0}' (host, native, or a "
        "name 'llc -march=x86-64 -mcpu=help' lists)",
        options.targetCpu)));
  if (options.vectorBits != 0 && options.vectorBits != 128 &&
      options.vectorBits != 256 && options.vectorBits != 512)
    ok &= succeeded(
        error(llvm::formatv("option 'vector-bits' must be 0 (target-cpu's), "
                            "128, 256 or 512, got {0}",
                            static_cast<int64_t>(options.vectorBits))));
  if (failed(parseKeySplits(options.kvSplits)))
    ok &= succeeded(error(llvm::formatv(
        "option 'kv-splits' must be 'auto' or a count in [1, {0}], got '{1}'",
        kMaxKeySplits, options.kvSplits)));
  if (options.threads < 0)
    ok &= succeeded(error(llvm::formatv(
        "option 'threads' must be 0 (this host's) or positive, got {0}",
        static_cast<int64_t>(options.threads))));
  StringRef units = options.matrixUnits;
  if (!llvm::is_contained({"host", "fma", "avx512-bf16", "amx"}, units))
    return error(llvm::formatv("option 'matrix-units': unknown value '{0}'; "
                               "expected host, fma, avx512-bf16 or amx",
                               units));
  // Both read 512-bit registers (AMX's pairs are packed by AVX-512 code).
  if (ok && units != "host" && units != "fma" &&
      targetVectorBits(options) != 512)
    ok &= succeeded(error(llvm::formatv(
        "option 'matrix-units={0}' needs 512-bit vectors (AVX-512), but the "
        "target has {1} (vector-bits={2})",
        units, targetVectorBits(options),
        static_cast<int64_t>(options.vectorBits))));
  return success(ok);
}

std::optional<std::string>
mlir::gated_attention::findCUDAToolkit(std::string &problem) {
  auto hasLibdevice = [](StringRef root) {
    SmallString<128> path(root);
    llvm::sys::path::append(path, "nvvm", "libdevice", "libdevice.10.bc");
    return llvm::sys::fs::exists(path);
  };
  // A variable the user set is the answer, right or wrong (the order is
  // upstream's NVVM target's, which reads them).
  for (const char *name : {"CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"}) {
    const char *value = std::getenv(name);
    if (!value || !*value)
      continue;
    if (hasLibdevice(value))
      return std::string(value);
    problem = llvm::formatv("{0}={1} is not a CUDA toolkit: "
                            "{1}/nvvm/libdevice/libdevice.10.bc does not exist",
                            name, value);
    return std::nullopt;
  }
  if (hasLibdevice("/usr/local/cuda"))
    return std::string("/usr/local/cuda");
  if (llvm::ErrorOr<std::string> ptxas =
          llvm::sys::findProgramByName("ptxas")) {
    SmallString<128> real;
    if (!llvm::sys::fs::real_path(*ptxas, real)) {
      StringRef root =
          llvm::sys::path::parent_path(llvm::sys::path::parent_path(real));
      if (hasLibdevice(root))
        return root.str();
    }
  }
  problem = "no CUDA toolkit found (CUDA_HOME, CUDA_PATH, /usr/local/cuda, "
            "ptxas on PATH): kernels that call math functions cannot link "
            "libdevice";
  return std::nullopt;
}

LogicalResult mlir::gated_attention::validateGatedAttentionToPTXOptions(
    const GatedAttentionToPTXPipelineOptions &options, ErrorHandler error) {
  if (!lookupNVGPUChip(options.chip))
    return error(llvm::formatv("option 'chip': unknown chip '{0}'; expected "
                               "one of {1}",
                               options.chip, supportedChipList()));
  StringRef kernel = options.kernel;
  if (!isKnownNVGPUKernel(kernel))
    return error(llvm::formatv("option 'kernel': unknown kernel '{0}'; "
                               "expected {1}",
                               kernel, kNVGPUKernelList));
  if (kernel == "wgmma" && !lookupNVGPUChip(options.chip)->hasWgmma)
    return error(llvm::formatv("option 'kernel': wgmma needs chip=sm_90a, "
                               "got chip={0}",
                               options.chip));
  if (failed(checkRange("warps", options.warps, 0, 8, error)) ||
      failed(checkRange("key-block", options.keyBlock, 0, 1024, error)) ||
      failed(
          checkRange("rows-per-block", options.rowsPerBlock, 1, 1024, error)))
    return failure();
  if (options.keyBlock % 16)
    return error(llvm::formatv("option 'key-block' must be a multiple of 16 "
                               "(the K of the mma), got {0}",
                               options.keyBlock));
  // Only the wgmma kernel loops over tiles: elsewhere the option would be
  // silently ignored.
  if (options.persistent &&
      (!lookupNVGPUChip(options.chip)->hasWgmma || kernel == "mma-sync"))
    return error(llvm::formatv("option 'persistent' needs the wgmma kernel "
                               "(chip=sm_90a, kernel auto or wgmma), got "
                               "chip={0} kernel={1}",
                               options.chip, kernel));
  if (failed(checkRange("sm-count", options.smCount, 0, kMaxSMCount, error)))
    return failure();
  if (options.smCount && !options.persistent)
    return error(llvm::formatv("option 'sm-count' ({0}) sizes the persistent "
                               "kernel's grid: it needs persistent=1",
                               options.smCount));
  std::string problem;
  std::optional<std::string> toolkit = findCUDAToolkit(problem);
  if (!toolkit && !StringRef(problem).starts_with("no CUDA toolkit"))
    return error(problem);
  // Upstream's NVVM target finds libdevice through these variables only;
  // a toolkit found elsewhere is handed to it for this process.
  if (toolkit && !std::getenv("CUDA_ROOT") && !std::getenv("CUDA_HOME") &&
      !std::getenv("CUDA_PATH"))
    ::setenv("CUDA_HOME", toolkit->c_str(), /*overwrite=*/0);
  return success();
}

/// Registers a pipeline whose options are validated before it is built, so
/// that bad options are a command-line error, not a crash or a binary.
template <typename Options>
static void registerValidatedPipeline(StringRef name, StringRef description,
                                      void (*build)(OpPassManager &,
                                                    const Options &),
                                      LogicalResult (*validate)(const Options &,
                                                                ErrorHandler)) {
  registerPassPipeline(
      name, description,
      [=](OpPassManager &pm, StringRef text, ErrorHandler error) {
        Options options;
        if (failed(options.parseFromString(text)) ||
            failed(validate(options, error)))
          return failure();
        build(pm, options);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> handler) {
        handler(Options());
      });
}

void mlir::gated_attention::registerGatedAttentionPipelines() {
  registerValidatedPipeline<GatedAttentionToLLVMPipelineOptions>(
      "gated-attention-to-llvm",
      "Lower func + tensor-level linalg/tensor/arith/math/scf + "
      "gated_attention ops to the LLVM dialect (CPU, runnable by mlir-runner)",
      buildGatedAttentionToLLVMPipeline, validateGatedAttentionToLLVMOptions);
  registerValidatedPipeline<GatedAttentionToPTXPipelineOptions>(
      "gated-attention-to-ptx",
      "Lower func + gated_attention ops for NVIDIA GPUs: kernels become "
      "gpu.binary ops holding PTX (tensor cores for f16/bf16, SIMT for f32), "
      "the host side LLVM",
      buildGatedAttentionToPTXPipeline, validateGatedAttentionToPTXOptions);
}
