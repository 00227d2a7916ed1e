// Host code with a synchronous gpu.alloc, which upstream's host lowering
// (gpu-to-llvm) does not lower: its memref type is left behind a cast.
func.func @staged(%a: memref<16xf32>) -> memref<16xf32> {
  %m = gpu.alloc () : memref<16xf32>
  gpu.memcpy %m, %a : memref<16xf32>, memref<16xf32>
  return %m : memref<16xf32>
}
