// Tokens apart: the lexer skips comments between them.
module attributes {x = array // c
  <index: 1>} {}
