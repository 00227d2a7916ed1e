// RUN: gated-attention-opt %s -split-input-file -verify-diagnostics \
// RUN:   --verify-lowered="dialects=builtin,llvm nested-only=1 pipeline=my-pipeline"

// With nested-only (the pipelines run it first), what the top-level module
// holds is not checked; an op outside `dialects` in a nested module is an
// error, with a note that nests `pipeline` from the outermost module.
func.func @top(%x: f32) -> f32 {
  return %x : f32
}
// expected-note @+1 {{to lower this module, nest the pipeline: --pass-pipeline='builtin.module(builtin.module(my-pipeline))'}}
module @inner {
  llvm.func @lowered() {
    llvm.return
  }
  // expected-error @+1 {{'func.func' is in a nested module, which the pipeline does not enter (it lowers the top-level module's functions)}}
  func.func @f() {
    return
  }
}

// -----

// Two levels down (the outermost module is the implicit one around @top
// and @outer).
func.func @top() {
  return
}
module @outer {
  // expected-note @+1 {{--pass-pipeline='builtin.module(builtin.module(builtin.module(my-pipeline)))'}}
  module @inner {
    // expected-error @+1 {{'func.func' is in a nested module}}
    func.func @f() {
      return
    }
  }
}

// -----

// A nested module that holds only what the pipeline produces passes.
module @inner {
  llvm.func @lowered() {
    llvm.return
  }
}
