//===- GatedAttentionAttrs.td - gate activation and combine -*- tablegen -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_ATTRS_TD
#define GATED_ATTENTION_ATTRS_TD

include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionDialect.td"
include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionInterfaces.td"
include "mlir/Dialect/SCF/IR/DeviceMappingInterface.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def GatedAttention_GateKind : I32EnumAttr<"GateKind",
    "activation applied to the gate", [
      I32EnumAttrCase<"sigmoid", 0>,
      I32EnumAttrCase<"silu", 1>,
      I32EnumAttrCase<"ns_sigmoid", 2>
    ]> {
  let cppNamespace = "::mlir::gated_attention";
  let genSpecializedAttr = 0;
}

def GatedAttention_GateAttr : EnumAttr<GatedAttention_Dialect,
    GatedAttention_GateKind, "gate",
    [DeclareAttrInterfaceMethods<GatedAttention_GateFunctionAttrInterface>,
     DeclareAttrInterfaceMethods<GatedAttention_GateDerivativeAttrInterface,
                                 ["buildLogDerivative"]>]> {
  let summary = "Built-in gate activations of the paper";
  let description = [{
    `sigmoid`: σ(g), the paper's best gate. `silu`: g·σ(g).
    `ns_sigmoid`: 0.5 + 0.5·σ(g), the "non-sparse" sigmoid. All three
    have their derivative (`GateDerivativeAttrInterface`), so ops with them
    train; sigmoid and NS-sigmoid also the bounded `act' / act`.

    ```mlir
    #gated_attention.gate<sigmoid>
    #gated_attention.gate<silu>
    #gated_attention.gate<ns_sigmoid>
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

def GatedAttention_CombineKind : I32EnumAttr<"CombineKind",
    "how the activated gate is combined with the attention output", [
      I32EnumAttrCase<"mul", 0>,
      I32EnumAttrCase<"add", 1>
    ]> {
  let cppNamespace = "::mlir::gated_attention";
  let genSpecializedAttr = 0;
}

def GatedAttention_CombineAttr : EnumAttr<GatedAttention_Dialect,
    GatedAttention_CombineKind, "combine"> {
  let summary = "Multiplicative or additive gate";
  let description = [{
    `mul`: Y ⊙ act(G) (the paper's gate). `add`: Y + act(G).

    ```mlir
    #gated_attention.combine<mul>
    #gated_attention.combine<add>
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

// Any attribute implementing the gate-function interface; the built-in
// `#gated_attention.gate<...>` is one, out-of-tree variants add more.
def GatedAttention_GateFunctionAttr : Attr<
    CPred<"::llvm::isa<::mlir::gated_attention::GateFunctionAttrInterface>($_self)">,
    "gate function attribute"> {
  let storageType = "::mlir::gated_attention::GateFunctionAttrInterface";
  let returnType = storageType;
  let convertFromStorage = "$_self";
  let constBuilderCall = "::mlir::gated_attention::GateKindAttr::get("
      "$_builder.getContext(), ::mlir::gated_attention::GateKind::$0)";
}

def GatedAttention_TileMappingAttr : AttrDef<GatedAttention_Dialect,
    "TileMapping", [DeclareAttrInterfaceMethods<DeviceMappingAttrInterface>]> {
  let mnemonic = "tile";
  let summary = "Loop `dim` of the tile grid of an online-softmax form";
  let description = [{
    The `mapping` of the scf.forall that the CPU tiling passes make (the
    forward's tiles over batch, heads and query blocks and split-KV parts;
    the backward's and the paged op's grids): one entry per loop, `dim` its
    position. It marks the tiles that CPU vectorization
    (`gated-attention-vectorize-tiles`) turns into register tiles and the
    grids that `gated-attention-tiles-to-openmp` hands to threads, and
    nothing else. A mapping, not a discardable attribute, because upstream
    canonicalization keeps it: it folds a mapped forall's single-iteration
    loops into its body only when unmapped, and rebuilds foralls (a
    tensor.cast folded into their outputs) keeping the mapping but not
    discardable attributes. `scf-forall-to-parallel` keeps it on the
    `scf.parallel` it makes, where `gated-attention-tiles-to-openmp` reads it.

    `growing` says the tiles' work grows along the loop (the query blocks
    under a causal mask see more keys the later they are): the OpenMP
    lowering hands such tiles out last to first, so the short ones fill in
    behind the long ones.

    ```mlir
    scf.forall (%b, %h, %i) in (2, 8, 16) ... {mapping = [
        #gated_attention.tile<0>, #gated_attention.tile<1>,
        #gated_attention.tile<2, growing>]}
    ```
  }];
  let parameters = (ins "int64_t":$dim,
                        DefaultValuedParameter<"bool", "false">:$growing);
  // `<dim>` or `<dim, growing>`.
  let hasCustomAssemblyFormat = 1;
}

#endif // GATED_ATTENTION_ATTRS_TD
