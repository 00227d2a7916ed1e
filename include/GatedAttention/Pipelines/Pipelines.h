//===- Pipelines.h - gated-attention pass pipelines -------------*- C++ -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_PIPELINES_PIPELINES_H
#define GATED_ATTENTION_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>

namespace mlir {
class OpPassManager;

namespace gated_attention {

/// The graph-level options both pipelines take.
template <typename Derived>
struct GraphLevelPipelineOptions : public PassPipelineOptions<Derived> {
  detail::PassOptions::Option<bool> raiseAttention{
      *this, "raise",
      llvm::cl::desc("Raise unfused attention in the graph to the op first "
                     "(0: compile the graph as written, e.g. to check a "
                     "raised result against it)"),
      llvm::cl::init(true)};
};

/// Options of `--gated-attention-to-llvm`.
struct GatedAttentionToLLVMPipelineOptions
    : public GraphLevelPipelineOptions<GatedAttentionToLLVMPipelineOptions> {
  PassOptions::Option<bool> reference{
      *this, "reference",
      llvm::cl::desc("Lower attention with the reference path (materialized "
                     "scores) instead of the tiled online-softmax path"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> queryBlock{
      *this, "query-block",
      llvm::cl::desc("Query rows per tile of the tiled path (0: chosen per "
                     "op by gated-attention-tile; the backward's 64)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> keyBlock{
      *this, "key-block",
      llvm::cl::desc("Keys per block of the tiled path (0: chosen per op by "
                     "gated-attention-tile; the backward's 64)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> diagonalKeyBlock{
      *this, "diagonal-key-block",
      llvm::cl::desc("Keys per block on a causal tile's diagonal, a divisor "
                     "of key-block (0: chosen per op by gated-attention-tile; "
                     "the paged op keeps key-block)"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> openmp{
      *this, "openmp",
      llvm::cl::desc("Run parallel loops on all cores with OpenMP (the code "
                     "then needs libomp.so at run time)"),
      llvm::cl::init(true)};
  PassOptions::Option<int64_t> registerRows{
      *this, "register-rows",
      llvm::cl::desc("Rows of a contraction's register tile (0: by the "
                     "vector width)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> registerCols{
      *this, "register-cols",
      llvm::cl::desc("Columns of a contraction's register tile (0: by the "
                     "vector width)"),
      llvm::cl::init(0)};
  PassOptions::Option<std::string> targetCpu{
      *this, "target-cpu",
      llvm::cl::desc("The x86-64 CPU the code is for, as llc's -mcpu names "
                     "it (x86-64-v3, znver4, sapphirerapids, ...): its "
                     "features size the vectors and pick the matrix units "
                     "that vector-bits=0 and matrix-units=host mean; compile "
                     "the result with the same -mcpu. host: this machine's"),
      llvm::cl::init("host")};
  PassOptions::Option<int64_t> vectorBits{
      *this, "vector-bits",
      llvm::cl::desc("The target's vector register width in bits, which "
                     "sizes the register tiles: 512 (AVX-512), 256 (AVX2), "
                     "128; 0: target-cpu's"),
      llvm::cl::init(0)};
  PassOptions::Option<std::string> matrixUnits{
      *this, "matrix-units",
      llvm::cl::desc("What multiplies bf16 tiles: fma (widened to f32, any "
                     "x86-64), avx512-bf16 (vdpbf16ps), amx (tdpbf16ps "
                     "tiles; both need 512-bit vectors) or host (amx "
                     "where target-cpu has AMX-BF16, else avx512-bf16 "
                     "where it has that and issues it as often as FMAs "
                     "(AMD Zen), else fma)"),
      llvm::cl::init("host")};
  PassOptions::Option<std::string> kvSplits{
      *this, "kv-splits",
      llvm::cl::desc("Split-KV of the tiles (dense and paged op): auto "
                     "(when the tiles are fewer than the threads, e.g. a "
                     "decode step of one sequence), 1 (off) or N parts (1 "
                     "to 64)"),
      llvm::cl::init("auto")};
  PassOptions::Option<int64_t> threads{
      *this, "threads",
      llvm::cl::desc("Threads the tiles run on, which kv-splits=auto reads "
                     "(0: this host's)"),
      llvm::cl::init(0)};
};

/// Lowers a module of `func` + tensor-level upstream ops (linalg, tensor,
/// arith, math, scf) + gated_attention ops to the LLVM dialect, ready for
/// `mlir-runner` or `mlir-translate --mlir-to-llvmir`.
void buildGatedAttentionToLLVMPipeline(
    OpPassManager &pm, const GatedAttentionToLLVMPipelineOptions &options);

/// Options of `--gated-attention-to-ptx`.
struct GatedAttentionToPTXPipelineOptions
    : public GraphLevelPipelineOptions<GatedAttentionToPTXPipelineOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip",
      llvm::cl::desc("Target GPU: sm_80, sm_86, sm_89, sm_90 or sm_90a"),
      llvm::cl::init("sm_90")};
  PassOptions::Option<std::string> kernel{
      *this, "kernel",
      llvm::cl::desc("Tensor-core kernel: mma-sync, wgmma (chip=sm_90a; "
                     "forward and backward) or auto (on sm_90a the wgmma "
                     "forward with the mma.sync backward, else mma-sync)"),
      llvm::cl::init("auto")};
  PassOptions::Option<int64_t> warps{
      *this, "warps",
      llvm::cl::desc("Warps per CTA of the tensor-core kernel, 16 query rows "
                     "each (0: 4 up to D = 128, 8 above)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> keyBlock{
      *this, "key-block",
      llvm::cl::desc("Keys per shared-memory K/V tile of the tensor-core "
                     "kernel (0: 128 up to D = 64, 64 up to 128, 32 above)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> rowsPerBlock{
      *this, "rows-per-block",
      llvm::cl::desc("Query rows (threads) per block of the SIMT kernel "
                     "(f32)"),
      llvm::cl::init(128)};
  PassOptions::Option<bool> persistent{
      *this, "persistent",
      llvm::cl::desc("The dense wgmma forward kernel loops over its tiles, "
                     "longest first (chip=sm_90a, kernel auto or wgmma; off "
                     "by default: docs/Design.md)"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> smCount{
      *this, "sm-count",
      llvm::cl::desc("With persistent: the device's SMs, which size the host "
                     "code's grid (0: one CTA per tile; "
                     "convert-gated-attention-to-nvgpu's sm-count)"),
      llvm::cl::init(0)};
};

/// Lowers a module of func + gated_attention ops for NVIDIA GPUs: f16/bf16
/// attention becomes the tensor-core flash kernel, f32 attention the SIMT
/// kernel (one query row per thread), each in a gpu.binary holding PTX; the
/// host side is lowered to LLVM.
void buildGatedAttentionToPTXPipeline(
    OpPassManager &pm, const GatedAttentionToPTXPipelineOptions &options);

/// The largest query/key block of the CPU pipeline.
constexpr int64_t kMaxCPUBlock = 1024;

/// Checks the options of `--gated-attention-to-llvm` (block sizes in
/// [1, kMaxCPUBlock], a known matrix-units that the vector width allows),
/// reporting the first problem through `error`.
LogicalResult validateGatedAttentionToLLVMOptions(
    const GatedAttentionToLLVMPipelineOptions &options,
    function_ref<LogicalResult(const Twine &)> error);

/// Checks the options of `--gated-attention-to-ptx` (a supported chip, tile
/// options in range, a usable CUDA toolkit if the environment names one),
/// and hands the toolkit found to upstream's NVVM target through CUDA_HOME
/// for this process when no variable names one.
LogicalResult validateGatedAttentionToPTXOptions(
    const GatedAttentionToPTXPipelineOptions &options,
    function_ref<LogicalResult(const Twine &)> error);

/// The CUDA toolkit that provides libdevice, searched where CUDA users
/// expect it: $CUDA_ROOT, $CUDA_HOME, $CUDA_PATH (the first one set is
/// taken), /usr/local/cuda, then the toolkit of `ptxas` on PATH. Returns
/// nullopt and says why in `problem` when there is none.
std::optional<std::string> findCUDAToolkit(std::string &problem);

/// Registers the pipelines above with the global pipeline registry.
void registerGatedAttentionPipelines();

} // namespace gated_attention
} // namespace mlir

#endif // GATED_ATTENTION_PIPELINES_PIPELINES_H
