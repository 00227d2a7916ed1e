"""Model graphs as MLIR (tensor-level upstream ops + gated_attention ops)."""
