//===- GatedAttentionOps.td - gated_attention ops ----------*- tablegen -*-===//
//
// Part of the gated-attention project.
//
//===----------------------------------------------------------------------===//

#ifndef GATED_ATTENTION_OPS_TD
#define GATED_ATTENTION_OPS_TD

include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionDialect.td"
include "GatedAttention/Dialect/GatedAttention/IR/GatedAttentionAttrs.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/TilingInterface.td"

class GatedAttention_Op<string mnemonic, list<Trait> traits = []>
    : Op<GatedAttention_Dialect, mnemonic, traits>;

// The ops compute on dense row-major tensors: an encoding (sparse_tensor's,
// or any other) would change what the lowerings' buffers hold.
def GatedAttention_Tensor : Type<
    And<[AnyRankedTensor.predicate,
         CPred<"!::llvm::cast<::mlir::RankedTensorType>($_self)"
               ".getEncoding()">]>,
    "ranked tensor without an encoding", "::mlir::RankedTensorType">;

def GatedAttention_AttentionOp : GatedAttention_Op<"attention", [
    Pure,
    DeclareOpInterfaceMethods<ReifyRankedShapedTypeOpInterface,
                              ["reifyResultShapes"]>,
    DeclareOpInterfaceMethods<TilingInterface, [
      "getLoopIteratorTypes", "getIterationDomain", "getTiledImplementation",
      "getResultTilePosition", "getIterationDomainTileFromResultTile",
      "generateResultTileValue"]>]> {
  let summary = "Scaled-dot-product attention combined with an activated gate";
  let description = [{
    Computes, per batch `b` and query head `h`,

    ```
    Y[b, h]   = softmax(scale * Q[b, h] * K[b, h / R]^T + mask) * V[b, h / R]
    out[b, h] = combine(Y[b, h], act(G[b, h or 0]))      R = Hq / Hkv
    ```

    Shape contract (all four operands and the result are ranked tensors with
    one element type: `f32`, `f16`, `bf16` or `f64`; lowerings accumulate in
    the accumulator type, the wider of `f32` and the element type: `f32`,
    or `f64` for `f64`, which only the reference lowerings take, on the
    CPU):

    | operand  | shape              | notes                                   |
    |----------|--------------------|-----------------------------------------|
    | `query`  | `B x Hq x Sq x D`  |                                         |
    | `key`    | `B x Hkv x Skv x D`| `Hq` is a multiple of `Hkv` (GQA / MQA) |
    | `value`  | `B x Hkv x Skv x Dv`|                                        |
    | `gate_input` (the gate) | `B x Hg x Sq x Dg` | `Hg` is `Hq` (per head) or 1 (shared); `Dg` is `Dv` (elementwise) or 1 (headwise) |
    | result   | `B x Hq x Sq x Dv` |                                         |
    | `lse` (optional result) | `B x Hq x Sq`, accumulator type | the softmax's log-sum-exp |

    `B`, `Sq` and `Skv` may be dynamic; `Hq`, `Hkv`, `D`, `Dv`, `Hg` and `Dg`
    are static. Query head `h` reads key/value head `h / (Hq / Hkv)`. The
    gate operand is named `gate_input` in C++ (`getGateInput()`) because
    `gate` names the activation attribute. The gate operand is optional:
    without it the op is plain scaled-dot-product attention (`out = Y`), the
    form of graphs that gate elsewhere (the paper's positions G2-G5: value,
    key, query, after the output projection) or not at all; `gate` and
    `combine` are then ignored.

    The optional second result `lse` (asked for by writing two result
    types) is the natural log-sum-exp of each row's scaled, masked scores,
    `L[b, h, i] = log(sum_j exp(scale * Q_i . K_j))` over the keys `j` row
    `i` sees, computed as `m + log(l)` (row max `m`, sum `l` of
    `exp(scale * s - m)`), in the accumulator type (`f32`; `f64` for
    `f64`). The softmax
    weights are then `P_ij = exp(scale * Q_i . K_j - L_i)`: what a backward
    (`gated_attention.attention_backward`'s `lse` operand) and a merge of
    partial results over key ranges need. A row that sees no key (causal
    with `Sq > Skv`, or `Skv = 0`) has `L = +inf`, so that
    `exp(scale * s - L) = 0` for every key; a merge treats it as a range
    with no keys. Without the second result no lowering computes or stores
    it.

    Attributes:
    - `scale` (f32, optional): defaults to `1/sqrt(D)` (rounded to f32: an
      `f64` op multiplies by the f32 value).
    - `causal` (unit): bottom-right aligned mask, query row `i` sees key `j`
      iff `j <= i + (Skv - Sq)`. A row that sees no key (`Sq > Skv`) has
      `Y = 0`, never NaN.
    - `gate`: the activation, any attribute implementing
      `GateFunctionAttrInterface`; built in are `#gated_attention.gate<sigmoid>`
      (default), `#gated_attention.gate<silu>` (`g * sigmoid(g)`) and
      `#gated_attention.gate<ns_sigmoid>` (`0.5 + 0.5 * sigmoid(g)`).
    - `combine`: `#gated_attention.combine<mul>` (default, `Y * act(G)`) or
      `#gated_attention.combine<add>` (`Y + act(G)`).
    - `gated_attention.row_strides` (discardable, `array<i64: query, key,
      value, gate, result>`): the elements between consecutive rows (`S`) of
      each buffer that a tensor-core kernel launched outside MLIR is given
      (a `B x S x H x D` tensor, query and gate as the halves of one
      projection); default the row's width. The kernel is compiled for these
      rows and takes batch and head strides at launch; a launch from MLIR
      lays its row-major buffers out so (a copy). Each is at least its row's
      width.

    Examples. Qwen3-Next: 16 query heads over 2 KV heads, head dim 256,
    causal, elementwise per-head sigmoid gate, dynamic sequence length:

    ```mlir
    %out = gated_attention.attention %q, %k, %v, %g {causal}
        : (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>,
           tensor<1x2x?x256xbf16>, tensor<1x16x?x256xbf16>)
        -> tensor<1x16x?x256xbf16>
    ```

    The same with the log-sum-exp kept for the backward:

    ```mlir
    %out, %lse = gated_attention.attention %q, %k, %v, %g {causal}
        : (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>,
           tensor<1x2x?x256xbf16>, tensor<1x16x?x256xbf16>)
        -> (tensor<1x16x?x256xbf16>, tensor<1x16x?xf32>)
    ```

    A headwise gate shared by all heads, SiLU activation, additive combine,
    explicit scale:

    ```mlir
    %out = gated_attention.attention %q, %k, %v, %g {
        combine = #gated_attention.combine<add>,
        gate = #gated_attention.gate<silu>, scale = 1.250000e-01 : f32}
        : (tensor<2x8x128x64xf32>, tensor<2x8x96x64xf32>,
           tensor<2x8x96x32xf32>, tensor<2x1x128x1xf32>)
        -> tensor<2x8x128x32xf32>
    ```

    Tiling (`TilingInterface`): the iteration domain is `(B, Hq, Sq)`, all
    parallel. A tile of query heads must cover whole GQA groups or lie inside
    one; with `causal`, a tile of query rows `[q0, q0 + n)` reads only keys
    `[0, q0 + n + Skv - Sq)`, which keeps the bottom-right alignment of the
    tile equal to that of the rows in the whole op. The `lse` result's tile
    is the domain's tile itself.

    The generic form spells the same attributes:

    ```mlir
    %out = "gated_attention.attention"(%q, %k, %v, %g) {
        gate = #gated_attention.gate<silu>, combine = #gated_attention.combine<add>,
        causal, scale = 0.125 : f32} : (...) -> ...
    ```
  }];

  let arguments = (ins
    GatedAttention_Tensor:$query,
    GatedAttention_Tensor:$key,
    GatedAttention_Tensor:$value,
    Optional<GatedAttention_Tensor>:$gate_input,
    OptionalAttr<F32Attr>:$scale,
    UnitAttr:$causal,
    DefaultValuedAttr<GatedAttention_GateFunctionAttr, "sigmoid">:$gate,
    DefaultValuedAttr<GatedAttention_CombineAttr,
                      "::mlir::gated_attention::CombineKind::mul">:$combine
  );
  let results = (outs GatedAttention_Tensor:$result,
                      Optional<GatedAttention_Tensor>:$lse);

  let assemblyFormat = [{
    $query `,` $key `,` $value (`,` $gate_input^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;

  let extraClassDeclaration = [{
    RankedTensorType getQueryType() { return getQuery().getType(); }
    RankedTensorType getKeyType() { return getKey().getType(); }
    RankedTensorType getValueType() { return getValue().getType(); }
    /// Whether the op has a gate (G1); without one it is plain attention,
    /// the form a graph gated elsewhere (G2-G5) uses.
    bool hasGate() { return static_cast<bool>(getGateInput()); }
    /// The gate's type; null without a gate.
    RankedTensorType getGateType() {
      return hasGate() ? cast<RankedTensorType>(getGateInput().getType())
                       : RankedTensorType();
    }
    RankedTensorType getResultType() { return getResult().getType(); }
    /// Whether the op returns the log-sum-exp (getLse() is null if not).
    bool hasLse() { return static_cast<bool>(getLse()); }

    int64_t getNumQueryHeads() { return getQueryType().getDimSize(1); }
    int64_t getNumKVHeads() { return getKeyType().getDimSize(1); }
    int64_t getHeadDim() { return getQueryType().getDimSize(3); }
    int64_t getValueHeadDim() { return getValueType().getDimSize(3); }
    /// Query heads per key/value head (1 for MHA, Hq for MQA).
    int64_t getGroupSize() { return getNumQueryHeads() / getNumKVHeads(); }
    /// True when one gate (head 0 of the gate operand) serves every query
    /// head (Hg == 1; with a single query head both readings agree).
    bool isGateShared() {
      return hasGate() && getGateType().getDimSize(1) == 1;
    }
    /// True when the gate has one value per head and token (Dg == 1 < Dv).
    bool isGateHeadwise() {
      return hasGate() && getGateType().getDimSize(3) == 1 &&
             getValueHeadDim() != 1;
    }
    /// The softmax scale: the attribute, or 1/sqrt(D) when absent.
    float getScaleValue();

    /// The name of the discardable attribute giving the elements between
    /// consecutive rows (S) of query, key, value, gate and result in the
    /// buffers of a kernel launched outside MLIR (a [B, S, H, D] tensor,
    /// q and the gate as halves of one projection); see docs/Design.md.
    static StringRef getRowStridesAttrName() {
      return "gated_attention.row_strides";
    }
    /// Those row strides: the attribute's, else each operand's row width
    /// (row-major [B, H, S, D] buffers). Without a gate its entry is 1.
    SmallVector<int64_t, 5> getRowStrides();
  }];
}

def GatedAttention_AttentionBackwardOp
    : GatedAttention_Op<"attention_backward", [Pure,
                                               AttrSizedOperandSegments]> {
  let summary = "Gradients of gated_attention.attention: dQ, dK, dV and dG";
  let description = [{
    Given the operands of a `gated_attention.attention` (`query`, `key`,
    `value`, the optional gate), its result `output` and the gradient
    `output_grad` of a loss with respect to that result, computes the
    gradients of the loss with respect to the query, key, value and gate,
    for the same attributes (`scale`, `causal`, `gate`, `combine`, with the
    forward's meaning and defaults). Per batch `b` and query head `h`,
    `R = Hq / Hkv`, `P` the forward's softmax weights (0 for a masked key),
    `s = act(G)` and `dOut = output_grad`:

    ```
    dY   = dOut * s (mul) or dOut (add)             dY = dOut without a gate
    D_i  = sum_e dY_ie Y_ie                         (= sum_e dOut_ie out_ie for mul)
    dS   = scale * P * (dY V^T - D)
    dQ   = dS K                  dK[h / R] += dS^T Q   dV[h / R] += P^T dY
    dG   = dOut * Y * act'(G) (mul) or dOut * act'(G) (add), summed over
           the value dim for a headwise gate and over the heads for a
           shared one
    ```

    The ungated output `Y` is never an operand: the gated `output` is what
    a training step keeps, and `Y` is recovered from it where that is exact
    and recomputed (`P V`) where it is not (SiLU, whose `act(0) = 0` loses
    `Y`; `combine = add`, where `out - act(G)` cancels). docs/Backward.md
    derives this and the error bounds.

    Shape contract (operands and results are ranked tensors with the
    query's element type, `f32`, `f16`, `bf16` or `f64`; lowerings
    accumulate in the accumulator type, `f32`, or `f64` for `f64`):

    | operand / result | shape               | notes                          |
    |------------------|---------------------|--------------------------------|
    | `query`          | `B x Hq x Sq x D`   |                                |
    | `key`            | `B x Hkv x Skv x D` | `Hq` is a multiple of `Hkv`    |
    | `value`          | `B x Hkv x Skv x Dv`|                                |
    | `output`         | `B x Hq x Sq x Dv`  | the forward's result           |
    | `output_grad`    | `B x Hq x Sq x Dv`  | its gradient                   |
    | `gate_input`     | `B x Hg x Sq x Dg`  | optional, as in the forward    |
    | `lse`            | `B x Hq x Sq`, acc. | optional, the forward's `lse`  |
    | `query_grad`     | the query's type    |                                |
    | `key_grad`       | the key's type      | summed over each GQA group     |
    | `value_grad`     | the value's type    | summed over each GQA group     |
    | `gate_grad`      | the gate's type     | present iff the gate is        |

    `B`, `Sq` and `Skv` may be dynamic; head counts and head dims are
    static. A row that sees no key (causal, `Sq > Skv`) contributes nothing
    to `dK`, `dV` and has `dQ = 0`; `Skv = 0` is allowed. The gate
    attribute must implement `GateDerivativeAttrInterface` (the built-in
    gates do): a plugin gate without a derivative is inference-only, and an
    error here rather than at a lowering.

    `lse` (optional, written `lse(%lse)` after the gate) is the forward's
    log-sum-exp result `L` (see `gated_attention.attention`): with it a
    lowering takes `P = exp(scale * Q K^T - L)` and does not recompute the
    row max and sum; without it the lowering recomputes them. Either way
    the gradients are those of the same forward.

    Qwen3-Next's attention (16 query heads over 2 KV heads, head dim 256,
    causal, elementwise per-head sigmoid gate):

    ```mlir
    %dq, %dk, %dv, %dg = gated_attention.attention_backward
        %q, %k, %v, %out, %dout, %g {causal}
        : (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>,
           tensor<1x2x?x256xbf16>, tensor<1x16x?x256xbf16>,
           tensor<1x16x?x256xbf16>, tensor<1x16x?x256xbf16>)
        -> (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>,
            tensor<1x2x?x256xbf16>, tensor<1x16x?x256xbf16>)
    ```

    With the forward's log-sum-exp saved:

    ```mlir
    %dq, %dk, %dv, %dg = gated_attention.attention_backward
        %q, %k, %v, %out, %dout, %g lse(%lse) {causal}
        : (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>,
           tensor<1x2x?x256xbf16>, tensor<1x16x?x256xbf16>,
           tensor<1x16x?x256xbf16>, tensor<1x16x?x256xbf16>,
           tensor<1x16x?xf32>)
        -> (tensor<1x16x?x256xbf16>, tensor<1x2x?x256xbf16>,
            tensor<1x2x?x256xbf16>, tensor<1x16x?x256xbf16>)
    ```

    Without a gate (three results):

    ```mlir
    %dq, %dk, %dv = gated_attention.attention_backward
        %q, %k, %v, %out, %dout {scale = 1.250000e-01 : f32}
        : (tensor<2x8x?x64xf32>, tensor<2x8x?x64xf32>, tensor<2x8x?x32xf32>,
           tensor<2x8x?x32xf32>, tensor<2x8x?x32xf32>)
        -> (tensor<2x8x?x64xf32>, tensor<2x8x?x64xf32>, tensor<2x8x?x32xf32>)
    ```
  }];

  let arguments = (ins
    GatedAttention_Tensor:$query,
    GatedAttention_Tensor:$key,
    GatedAttention_Tensor:$value,
    GatedAttention_Tensor:$output,
    GatedAttention_Tensor:$output_grad,
    Optional<GatedAttention_Tensor>:$gate_input,
    Optional<GatedAttention_Tensor>:$lse,
    OptionalAttr<F32Attr>:$scale,
    UnitAttr:$causal,
    DefaultValuedAttr<GatedAttention_GateFunctionAttr, "sigmoid">:$gate,
    DefaultValuedAttr<GatedAttention_CombineAttr,
                      "::mlir::gated_attention::CombineKind::mul">:$combine
  );
  let results = (outs
    GatedAttention_Tensor:$query_grad,
    GatedAttention_Tensor:$key_grad,
    GatedAttention_Tensor:$value_grad,
    Optional<GatedAttention_Tensor>:$gate_grad
  );

  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $output `,` $output_grad
    (`,` $gate_input^)? (`lse` `(` $lse^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;

  let extraClassDeclaration = [{
    RankedTensorType getQueryType() { return getQuery().getType(); }
    RankedTensorType getKeyType() { return getKey().getType(); }
    RankedTensorType getValueType() { return getValue().getType(); }
    RankedTensorType getOutputType() { return getOutput().getType(); }
    bool hasGate() { return static_cast<bool>(getGateInput()); }
    /// Whether the forward's log-sum-exp is given (getLse() is null if not).
    bool hasLse() { return static_cast<bool>(getLse()); }
    /// The gate's type; null without a gate.
    RankedTensorType getGateType() {
      return hasGate() ? cast<RankedTensorType>(getGateInput().getType())
                       : RankedTensorType();
    }
    int64_t getNumQueryHeads() { return getQueryType().getDimSize(1); }
    int64_t getNumKVHeads() { return getKeyType().getDimSize(1); }
    int64_t getHeadDim() { return getQueryType().getDimSize(3); }
    int64_t getValueHeadDim() { return getValueType().getDimSize(3); }
    int64_t getGroupSize() { return getNumQueryHeads() / getNumKVHeads(); }
    bool isGateShared() {
      return hasGate() && getGateType().getDimSize(1) == 1;
    }
    bool isGateHeadwise() {
      return hasGate() && getGateType().getDimSize(3) == 1 &&
             getValueHeadDim() != 1;
    }
    /// The softmax scale: the attribute, or 1/sqrt(D) when absent.
    float getScaleValue();
  }];
}

def GatedAttention_PagedAttentionOp : GatedAttention_Op<"paged_attention", [
    Pure]> {
  let summary = "Gated attention of packed variable-length queries over a "
                "paged KV cache";
  let description = [{
    The serving form of `gated_attention.attention`: the queries of a batch
    of sequences packed into one tensor, keys and values in a cache of
    fixed-size pages addressed through a block table (vLLM's and SGLang's
    attention-backend contract). For sequence `b` (of `B`), its queries are
    rows `[cu_seqlens_q[b], cu_seqlens_q[b + 1])` of `query` (`q_b` of
    them), its keys the first `seq_lens[b]` tokens of its pages: key `j`
    is slot `j mod P` of page `block_table[b, j / P]`. Then, per query head
    `h`, as the dense op computes it:

    ```
    Y   = softmax(scale * Q_b[h] * K_b[h / R]^T + mask) * V_b[h / R]
    out = combine(Y, act(G_b[h or 0]))                R = Hq / Hkv
    ```

    | operand         | shape                | notes                               |
    |-----------------|----------------------|-------------------------------------|
    | `query`         | `T x Hq x D`         | T: the query tokens of all sequences |
    | `key_cache`     | `NB x P x Hkv x D`   | NB pages of P tokens                |
    | `value_cache`   | `NB x P x Hkv x Dv`  |                                     |
    | `block_table`   | `B x MB` (i32)       | page ids of each sequence's keys    |
    | `seq_lens`      | `B` (i32)            | keys of each sequence, new ones included |
    | `cu_seqlens_q`  | `B + 1` (i32)        | query offsets, from 0 to T          |
    | `gate_input`    | `T x Hg x Dg`        | optional; `Hg` in {Hq, 1}, `Dg` in {Dv, 1} |
    | result          | `T x Hq x Dv`        |                                     |

    `Hq`, `Hkv`, `D`, `Dv`, `P`, `Hg`, `Dg` are static; `P` is a positive
    multiple of 16 (528 and 1056, Qwen3-Next's hybrid-cache pages, are
    fine); `T`, `NB`, `B` and `MB` may be dynamic. The attributes are those
    of `gated_attention.attention`; `causal` is bottom-right per sequence:
    query `i` of sequence `b` sees key `j` iff
    `j <= i + seq_lens[b] - q_b`. A sequence with no queries contributes
    nothing; a query that sees no key gives `0` before the gate.

    Slots past a sequence's length and pages outside its table are never
    read: real caches hold garbage there (NaN included), and the result
    does not depend on it. The runtime contract, which the verifier cannot
    see and the Python and torch entry points check before a launch: page
    ids in `[0, NB)`, `0 <= q_b <= seq_lens[b] <= MB * P` for causal (and
    `seq_lens[b] <= MB * P` otherwise), `cu_seqlens_q` non-decreasing from
    0 to `T`.

    ```mlir
    %out = gated_attention.paged_attention %q, %kc, %vc, %table, %lens, %cu, %g
        {causal} : (tensor<?x16x256xbf16>, tensor<?x528x2x256xbf16>,
                    tensor<?x528x2x256xbf16>, tensor<?x?xi32>, tensor<?xi32>,
                    tensor<?xi32>, tensor<?x16x256xbf16>)
        -> tensor<?x16x256xbf16>
    ```
  }];

  let arguments = (ins
    GatedAttention_Tensor:$query,
    GatedAttention_Tensor:$key_cache,
    GatedAttention_Tensor:$value_cache,
    GatedAttention_Tensor:$block_table,
    GatedAttention_Tensor:$seq_lens,
    GatedAttention_Tensor:$cu_seqlens_q,
    Optional<GatedAttention_Tensor>:$gate_input,
    OptionalAttr<F32Attr>:$scale,
    UnitAttr:$causal,
    DefaultValuedAttr<GatedAttention_GateFunctionAttr, "sigmoid">:$gate,
    DefaultValuedAttr<GatedAttention_CombineAttr,
                      "::mlir::gated_attention::CombineKind::mul">:$combine
  );
  let results = (outs GatedAttention_Tensor:$result);

  let assemblyFormat = [{
    $query `,` $key_cache `,` $value_cache `,` $block_table `,` $seq_lens `,`
    $cu_seqlens_q (`,` $gate_input^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;

  let extraClassDeclaration = [{
    RankedTensorType getQueryType() { return getQuery().getType(); }
    RankedTensorType getKeyCacheType() { return getKeyCache().getType(); }
    RankedTensorType getValueCacheType() { return getValueCache().getType(); }
    bool hasGate() { return static_cast<bool>(getGateInput()); }
    RankedTensorType getGateType() {
      return hasGate() ? cast<RankedTensorType>(getGateInput().getType())
                       : RankedTensorType();
    }
    RankedTensorType getResultType() { return getResult().getType(); }
    int64_t getNumQueryHeads() { return getQueryType().getDimSize(1); }
    int64_t getNumKVHeads() { return getKeyCacheType().getDimSize(2); }
    int64_t getHeadDim() { return getQueryType().getDimSize(2); }
    int64_t getValueHeadDim() { return getValueCacheType().getDimSize(3); }
    /// Tokens per page.
    int64_t getPageSize() { return getKeyCacheType().getDimSize(1); }
    /// The softmax scale: the attribute, or 1/sqrt(D) when absent.
    float getScaleValue();
  }];
}

#endif // GATED_ATTENTION_OPS_TD
