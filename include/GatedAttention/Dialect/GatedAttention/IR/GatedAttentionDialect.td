//===- GatedAttentionDialect.td - gated_attention dialect --*- tablegen -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_DIALECT_TD
#define GATED_ATTENTION_DIALECT_TD

include "mlir/IR/OpBase.td"

def GatedAttention_Dialect : Dialect {
  let name = "gated_attention";
  let cppNamespace = "::mlir::gated_attention";
  let summary = "Scaled-dot-product attention with a fused output gate.";
  let description = [{
    The `gated_attention` dialect models gated attention (Qiu et al., "Gated
    Attention for Large Language Models", NeurIPS 2025): the output of
    scaled-dot-product attention is combined with an activation of a gate
    tensor computed from the layer input, `Y' = SDPA(Q, K, V) * sigmoid(G)`.

    One op, `gated_attention.attention`, carries the design space studied in
    the paper: the gate activation (sigmoid, SiLU, NS-sigmoid), the combine
    (multiplicative or additive), headwise or elementwise gates, gates shared
    across heads or per head, causal masking and grouped-query attention.
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Adds the raise patterns of a gate variant (an out-of-tree gate
    /// attribute and the patterns that fold its unfused form into the op);
    /// `gated-attention-raise` runs them with its own. Called when the
    /// dialect is loaded, by the extension `registerGateVariant` installs.
    void addRaisePatterns(RaisePatternsFn populate);

    /// Adds the patterns of every registered gate variant to `patterns`.
    void populateRaisePatterns(::mlir::RewritePatternSet &patterns) const;

  private:
    ::llvm::SmallVector<RaisePatternsFn> raisePatterns;

  public:
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect"
  ];
}

#endif // GATED_ATTENTION_DIALECT_TD
