module attributes {x = array< index: 1>} {}
