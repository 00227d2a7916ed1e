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

#endif // GATED_ATTENTION_INTERFACES_TD
