// RUN: gated-attention-opt %s -split-input-file -verify-diagnostics \
// RUN:   --verify-module-attributes

// Found by the fuzzer: under another name than dlti.dl_spec nothing
// verifies the layout, yet the module takes it, and translation to LLVM IR
// crashed on this f16 entry (a dense pair expected).
// expected-error @+1 {{'builtin.module' carries a data layout specification ('flti.dl_spec'), which the pipelines do not take: they lower for their target (64-bit index; the host's or NVPTX's layout), and translation to LLVM IR aborts on layouts MLIR's verifier accepts. Remove it ('llvm.data_layout', a string LLVM checks, sets the layout of the LLVM IR module)}}
module attributes {flti.dl_spec = #dlti.dl_spec<f16 = 32 : i64>} {
}

// -----

// Verified, and still fatal to translation: LLVM's parser rejects an ABI
// alignment of 0 bits with an abort.
// expected-error @+1 {{'builtin.module' carries a data layout specification ('dlti.dl_spec')}}
module attributes {dlti.dl_spec = #dlti.dl_spec<i32 = dense<[0]> : vector<1xi64>>} {
}

// -----

module {
  // expected-error @+1 {{'gpu.module' carries a data layout specification ('dlti.target_system_spec')}}
  gpu.module @kernels attributes {dlti.target_system_spec = #dlti.target_system_spec<"CPU" = #dlti.target_device_spec<"L1_cache_size_in_bytes" = 4096 : i32>>} {
  }
}

// -----

// Translation casts these without checking: each crashed it.
module {
  // expected-error @+1 {{'llvm.target_triple' must be a string (translation to LLVM IR reads it as one), not 3 : i64}}
  gpu.module @kernels attributes {llvm.target_triple = 3 : i64} {
  }
}

// -----

// expected-error @+1 {{'llvm.dependent_libraries' must be an array of strings (translation to LLVM IR reads it as one), not ["m", 3]}}
module attributes {llvm.dependent_libraries = ["m", 3]} {
}

// -----

// expected-error @+1 {{'llvm.ident' must be a string}}
module attributes {llvm.ident = 3 : i64} {
}

// -----

// What translation can read passes.
module attributes {llvm.data_layout = "e-i64:64", llvm.target_triple = "x86_64-unknown-linux-gnu",
                   llvm.ident = "gated-attention", llvm.commandline = "opt",
                   llvm.dependent_libraries = ["m"], foo.spec = "not a layout"} {
  gpu.module @kernels attributes {llvm.target_triple = "nvptx64-nvidia-cuda"} {
  }
}
