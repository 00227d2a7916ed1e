// The PTX pipeline frees host buffers after the launches that use them, so
// its launches must complete before the next op: an asynchronous launch
// given a buffer is an error at the launch, not a kernel that may read
// freed memory.
// RUN: gated-attention-opt %s --gated-attention-to-ptx -verify-diagnostics

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @fill(%m: memref<16xf32>) kernel {
      gpu.return
    }
  }
  func.func @async_launch() {
    %c1 = arith.constant 1 : index
    %m = memref.alloc() : memref<16xf32>
    // expected-error @below {{'gpu.launch_func' op is asynchronous and is passed a memref}}
    %t = gpu.launch_func async @kernels::@fill blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%m : memref<16xf32>)
    gpu.wait [%t]
    return
  }
}
