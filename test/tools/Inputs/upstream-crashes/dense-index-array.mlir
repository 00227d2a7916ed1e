module attributes {x = array<index: 16, 1, 1>} {}
