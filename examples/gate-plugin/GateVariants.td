//===- GateVariants.td - two gate variants as a plugin -----*- tablegen -*-===//
//
// An example of extending gated-attention out of tree: a dialect of two gate
// attributes implementing the project's GateFunctionAttrInterface.
//
//===----------------------------------------------------------------------===//

#ifndef GATE_VARIANTS_TD
#define GATE_VARIANTS_TD

include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionInterfaces.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/DialectBase.td"

def GateVariants_Dialect : Dialect {
  let name = "gate_variants";
  let cppNamespace = "::gate_variants";
  let summary = "Gate activations beyond the paper's, added by a plugin.";
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect"
  ];
}

class GateVariants_Attr<string name, string attrMnemonic,
                        list<Trait> traits = []>
    : AttrDef<GateVariants_Dialect, name,
              !listconcat([DeclareAttrInterfaceMethods<
                               GatedAttention_GateFunctionAttrInterface>],
                          traits)> {
  let mnemonic = attrMnemonic;
}

def GateVariants_TanhAttr : GateVariants_Attr<"Tanh", "tanh"> {
  let summary = "tanh(g): a gate in (-1, 1)";
  let description = [{
    ```mlir
    %y = gated_attention.attention %q, %k, %v, %g
        {gate = #gate_variants.tanh} : ...
    ```
  }];
}

// The temperature sigmoid also has its derivative (training: the backward
// op accepts it, and reads the saved output through act'/act); tanh stays
// inference-only.
def GateVariants_SigmoidAttr : GateVariants_Attr<"Sigmoid", "sigmoid", [
    DeclareAttrInterfaceMethods<GatedAttention_GateDerivativeAttrInterface,
                                ["buildLogDerivative"]>]> {
  let summary = "sigmoid(g / temperature)";
  let description = [{
    A sigmoid gate with a temperature: sharper below 1, softer above.
    Differentiable: `act' = sigmoid(y) sigmoid(-y) / T` with `y = g / T`.

    ```mlir
    %y = gated_attention.attention %q, %k, %v, %g
        {gate = #gate_variants.sigmoid<temperature = 2.0 : f32>} : ...
    ```
  }];
  let parameters = (ins "::mlir::FloatAttr":$temperature);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // GATE_VARIANTS_TD
