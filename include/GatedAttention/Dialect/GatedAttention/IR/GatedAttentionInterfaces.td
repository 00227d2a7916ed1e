//===- GatedAttentionInterfaces.td - gate function interface -*- tablegen -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_INTERFACES_TD
#define GATED_ATTENTION_INTERFACES_TD

include "mlir/IR/OpBase.td"

def GatedAttention_GateFunctionAttrInterface
    : AttrInterface<"GateFunctionAttrInterface"> {
  let cppNamespace = "::mlir::gated_attention";
  let description = [{
    An attribute that describes the activation applied to the gate tensor
    before it is combined with the attention output. Every lowering of
    `gated_attention.attention` (reference, tiled, GPU) asks the attribute for
    the scalar expansion of its activation, so a new activation is added by
    implementing this interface on a new attribute, without changing the
    lowerings.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds `act(x)` for one f32 value `x` (scalar or vector of f32) and
        returns it. Only arith and math ops may be created, so that the
        expansion can be placed inside any linalg or vector body.
      }],
      "::mlir::Value", "buildActivation",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "::mlir::Value":$x)>
  ];
}

def GatedAttention_GateDerivativeAttrInterface
    : AttrInterface<"GateDerivativeAttrInterface"> {
  let cppNamespace = "::mlir::gated_attention";
  let description = [{
    The derivative of a gate activation, which
    `gated_attention.attention_backward` needs for the gate's gradient
    (`dG = dOut * Y * act'(G)` with `combine = mul`, `dOut * act'(G)` with
    `add`). A gate attribute implements it beside
    `GateFunctionAttrInterface`; one that does not is an inference-only
    gate: the backward op's verifier rejects it, at compile time, rather
    than a lowering failing or saving the ungated output for it. The
    built-in gates implement both methods.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds `act'(x)` for one f32 value `x` (scalar or vector of f32).
        Only arith and math ops may be created.
      }],
      "::mlir::Value", "buildDerivative",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "::mlir::Value":$x)>,
    InterfaceMethod<[{
        Builds `act'(x) / act(x)` (the derivative of `log act`) for one f32
        value `x` where that ratio is bounded for every `x` (`act` has no
        zero), or returns a null value where it is not. With it, the
        backward of `combine = mul` computes the gate's gradient from the
        saved gated output, `dG = dOut * out * act'(G) / act(G)`, without
        the ungated attention output; without it (SiLU: `act(0) = 0`) the
        backward recomputes that output. The default: null.
      }],
      "::mlir::Value", "buildLogDerivative",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "::mlir::Value":$x),
      /*methodBody=*/[{}],
      /*defaultImplementation=*/[{ return ::mlir::Value(); }]>
  ];
}

#endif // GATED_ATTENTION_INTERFACES_TD
