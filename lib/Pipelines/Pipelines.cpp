//===- Pipelines.cpp - gated-attention pass pipelines ---------------------===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#include "GatedAttention/Pipelines/Pipelines.h"
#include "GatedAttention/Conversion/Passes.h"
#include "GatedAttention/Dialect/GatedAttention/Transforms/Passes.h"
#include "GatedAttention/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::gated_attention;

/// One-shot bufferization with identity layouts at function boundaries, so
/// that callers (printMemrefF32, ctypes, GPU launches) see plain memrefs.
static void addFunctionBoundaryBufferization(OpPassManager &pm) {
  bufferization::OneShotBufferizePassOptions options;
  options.bufferizeFunctionBoundaries = true;
  options.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(options));
}

/// Graph level, shared by both pipelines: unfused attention written by
/// frontends becomes our op; then elementwise ops fuse with their
/// neighbours (reshapes propagated), so that a gate applied to an
/// attention operand (G2-G4) is computed in the same pass as the layout
/// change producing the operand instead of a pass of its own.
static void addGraphLevelPasses(OpPassManager &funcPm) {
  funcPm.addPass(createGatedAttentionRaisePass());
  funcPm.addPass(createCanonicalizerPass());
  funcPm.addPass(createLinalgGeneralizeNamedOpsPass());
  funcPm.addPass(createLinalgElementwiseOpFusionPass());
  funcPm.addPass(createCanonicalizerPass());
}

void mlir::gated_attention::buildGatedAttentionToLLVMPipeline(
    OpPassManager &pm, const GatedAttentionToLLVMPipelineOptions &options) {
  // Tensor level: our ops become linalg (tiled online softmax, or the
  // reference form); elementwise arith/math on tensors (e.g. an `arith.extf`
  // of a whole tensor in user code) become linalg too.
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  addGraphLevelPasses(funcPm);
  if (options.reference) {
    funcPm.addPass(createConvertGatedAttentionToLinalgPass());
  } else {
    GatedAttentionTilePassOptions tileOptions;
    tileOptions.queryBlock = options.queryBlock;
    tileOptions.keyBlock = options.keyBlock;
    funcPm.addPass(createGatedAttentionTilePass(tileOptions));
    funcPm.addPass(createCanonicalizerPass());
    funcPm.addPass(createCSEPass());
    funcPm.addPass(createGatedAttentionVectorizeTilesPass());
  }
  funcPm.addPass(createConvertElementwiseToLinalgPass());
  funcPm.addPass(createCanonicalizerPass());
  funcPm.addPass(createCSEPass());

  addFunctionBoundaryBufferization(pm);
  bufferization::buildBufferDeallocationPipeline(pm);

  // Loops, then LLVM. bf16 has no native x86 arithmetic: expand its
  // conversions into integer ops.
  pm.addNestedPass<func::FuncOp>(createForallToParallelLoopPass());
  // Copies become loops, not calls into libmlir_c_runner_utils.
  pm.addNestedPass<func::FuncOp>(createConvertMemRefCopyToLinalgPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  if (options.openmp) {
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
  pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  if (options.openmp)
    pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void mlir::gated_attention::buildGatedAttentionToPTXPipeline(
    OpPassManager &pm, const GatedAttentionToPTXPipelineOptions &options) {
  addGraphLevelPasses(pm.nest<func::FuncOp>());
  // f16/bf16 attention: the tensor-core flash kernel, emitted directly as a
  // gpu.module + gpu.launch_func.
  ConvertGatedAttentionToNVGPUPassOptions mma;
  mma.warps = options.warps;
  mma.keyBlock = options.keyBlock;
  pm.addPass(createConvertGatedAttentionToNVGPUPass(mma));
  // The rest (f32): nested scf.parallel on memrefs.
  ConvertGatedAttentionToParallelRowsPassOptions rows;
  rows.rowsPerBlock = options.rowsPerBlock;
  pm.addPass(createConvertGatedAttentionToParallelRowsPass(rows));

  // Host side: tensors to buffers (no deallocation pipeline: it does not
  // model gpu.launch_func, and the only allocation is the returned result).
  addFunctionBoundaryBufferization(pm);

  // The rest of the graph (projections, norms, rotary embeddings, layout
  // changes): linalg on buffers becomes parallel loops, one GPU thread per
  // output element of each op, reductions sequential in the thread. A simple
  // correct path; attention is the fused kernel above. These loops and the
  // SIMT kernel's are mapped to blocks and threads in one go, before
  // anything canonicalizes the SIMT kernel's two loop levels into one.
  pm.addNestedPass<func::FuncOp>(createConvertMemRefCopyToLinalgPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createGpuMapParallelLoopsPass());
  pm.addPass(createConvertParallelLoopToGpuPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createCanonicalizerPass());
  // Repeated layers outline repeated kernels: compile each distinct one once.
  pm.addPass(createDedupGPUKernelsPass());

  // Kernels to PTX (sm_90 needs PTX ISA 8.0), host to LLVM. math.exp
  // becomes libdevice's __nv_expf, linked from $CUDA_HOME/nvvm/libdevice.
  gpu::GPUToNVVMPipelineOptions nvvm;
  nvvm.cubinChip = options.chip;
  nvvm.cubinFeatures = options.chip == "sm_90" ? "+ptx80" : "+ptx70";
  nvvm.cubinFormat = "isa";
  gpu::buildLowerToNVVMPassPipeline(pm, nvvm);
}

void mlir::gated_attention::registerGatedAttentionPipelines() {
  PassPipelineRegistration<GatedAttentionToLLVMPipelineOptions>(
      "gated-attention-to-llvm",
      "Lower func + tensor-level linalg/tensor/arith/math/scf + "
      "gated_attention ops to the LLVM dialect (CPU, runnable by mlir-runner)",
      buildGatedAttentionToLLVMPipeline);
  PassPipelineRegistration<GatedAttentionToPTXPipelineOptions>(
      "gated-attention-to-ptx",
      "Lower func + gated_attention ops for NVIDIA GPUs: kernels become "
      "gpu.binary ops holding PTX (tensor cores for f16/bf16, SIMT for f32), "
      "the host side LLVM",
      buildGatedAttentionToPTXPipeline);
}
