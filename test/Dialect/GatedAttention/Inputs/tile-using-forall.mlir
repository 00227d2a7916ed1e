// A user schedule: tile every gated_attention.attention by (1 batch, 2 query
// heads, 8 query rows) with scf.forall, through the op's TilingInterface.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %ops = transform.structured.match ops{["gated_attention.attention"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %ops : !transform.any_op {
    ^bb0(%op: !transform.any_op):
      %tiled, %loop = transform.structured.tile_using_forall %op tile_sizes [1, 2, 8]
          : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    }
    transform.yield
  }
}
