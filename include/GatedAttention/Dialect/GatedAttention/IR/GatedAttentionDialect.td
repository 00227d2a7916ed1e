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
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect"
  ];
}

#endif // GATED_ATTENTION_DIALECT_TD
