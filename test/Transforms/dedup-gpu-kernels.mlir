// RUN: gated-attention-opt %s --dedup-gpu-kernels | FileCheck %s

// @b is @a under another name: its launch goes to @a and it is erased. @c
// differs in one constant and @d in its launch bounds attribute; both stay.
// CHECK-LABEL: func.func @host
// CHECK:         gpu.launch_func @a::@a
// CHECK-NEXT:    gpu.launch_func @a::@a
// CHECK-NEXT:    gpu.launch_func @c::@c
// CHECK-NEXT:    gpu.launch_func @d::@d
// CHECK:       gpu.module @a
// CHECK-NOT:   gpu.module @b
// CHECK:       gpu.module @c
// CHECK:       gpu.module @d
module attributes {gpu.container_module} {
  func.func @host(%m: memref<16xf32>) {
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    gpu.launch_func @a::@a blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(%m : memref<16xf32>)
    gpu.launch_func @b::@b blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(%m : memref<16xf32>)
    gpu.launch_func @c::@c blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(%m : memref<16xf32>)
    gpu.launch_func @d::@d blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(%m : memref<16xf32>)
    return
  }
  gpu.module @a {
    gpu.func @a(%m: memref<16xf32>) kernel {
      %t = gpu.thread_id x
      %x = memref.load %m[%t] : memref<16xf32>
      %two = arith.constant 2.0 : f32
      %y = arith.mulf %x, %two : f32
      memref.store %y, %m[%t] : memref<16xf32>
      gpu.return
    }
  }
  gpu.module @b {
    gpu.func @b(%m: memref<16xf32>) kernel {
      %t = gpu.thread_id x
      %x = memref.load %m[%t] : memref<16xf32>
      %two = arith.constant 2.0 : f32
      %y = arith.mulf %x, %two : f32
      memref.store %y, %m[%t] : memref<16xf32>
      gpu.return
    }
  }
  gpu.module @c {
    gpu.func @c(%m: memref<16xf32>) kernel {
      %t = gpu.thread_id x
      %x = memref.load %m[%t] : memref<16xf32>
      %two = arith.constant 3.0 : f32
      %y = arith.mulf %x, %two : f32
      memref.store %y, %m[%t] : memref<16xf32>
      gpu.return
    }
  }
  gpu.module @d {
    gpu.func @d(%m: memref<16xf32>) kernel attributes {known_block_size = array<i32: 16, 1, 1>} {
      %t = gpu.thread_id x
      %x = memref.load %m[%t] : memref<16xf32>
      %two = arith.constant 2.0 : f32
      %y = arith.mulf %x, %two : f32
      memref.store %y, %m[%t] : memref<16xf32>
      gpu.return
    }
  }
}
