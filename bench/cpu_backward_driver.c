// The CPU backward alone, without Python: calls the compiled function of
// one configuration (gated sigmoid, combine mul, reading the forward's
// log-sum-exp; B 1, Hq = Hkv = H, D 128, as bench/cpu_backward.py's 8 / 8
// rows) N times on random inputs, prints the best time and a hash of each
// gradient (bits, to compare builds). For perf, `perf stat -e page-faults`
// and callgrind, which a Python process would drown (valgrind 3.19 does
// not decode AVX-512: build the library for x86-64-v3 with
// --gated-attention-to-llvm="vector-bits=256 matrix-units=fma" to count).
//
//   gcc -O2 -o /tmp/drv bench/cpu_backward_driver.c -ldl
//   # the library the torch op loads (from the kernel cache):
//   .venv/bin/python -c 'import sys, torch; sys.path.insert(0, "python");
//   from gated_attention.torch import _backward, _args
//   q = torch.zeros(1, 8, 512, 128, dtype=torch.bfloat16)
//   print(_backward.kernel_for(_args.check(q, q, q, q, False, None,
//         "sigmoid", "mul", "bhsd"), lse=True)._built.path)'
//   # arguments: library, element bytes (4 f32, 2 bf16), S, calls[, H = 8]
//   OMP_NUM_THREADS=2 /tmp/drv LIB.so 2 512 24
//   OMP_NUM_THREADS=1 valgrind --tool=callgrind --collect-atstart=no
//     --toggle-collect=_mlir_ciface_attention_backward /tmp/drv LIB.so 2 512 2

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

// The C interface's memref descriptors (rank 4 and 3).
typedef struct {
  void *a, *b;
  int64_t off, sz[4], st[4];
} D4;
typedef struct {
  void *a, *b;
  int64_t off, sz[3], st[3];
} D3;
static uint16_t bf(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
static D4 mk(int64_t h, int64_t s, int64_t d, int eb, int fill) {
  D4 x;
  size_t n = h * s * d;
  void *p = aligned_alloc(64, n * eb + 64);
  for (size_t i = 0; i < n; ++i) {
    float f = fill ? (float)((rand() / (double)RAND_MAX) * 2 - 1) : 0;
    if (eb == 2)
      ((uint16_t *)p)[i] = bf(f);
    else
      ((float *)p)[i] = f;
  }
  x.a = x.b = p;
  x.off = 0;
  x.sz[0] = 1;
  x.sz[1] = h;
  x.sz[2] = s;
  x.sz[3] = d;
  x.st[0] = 1;
  x.st[1] = s * d;
  x.st[2] = d;
  x.st[3] = 1;
  return x;
}
int main(int argc, char **argv) {
  void *lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  void (*fn)(D4 *, D4 *, D4 *, D4 *, D4 *, D4 *, D3 *, D4 *, D4 *, D4 *, D4 *) =
      dlsym(lib, "_mlir_ciface_attention_backward");
  int eb = atoi(argv[2]);
  int64_t s = atoll(argv[3]);
  int n = atoi(argv[4]);
  int64_t h = argc > 5 ? atoll(argv[5]) : 8, d = 128;
  D4 q = mk(h, s, d, eb, 1), k = mk(h, s, d, eb, 1), v = mk(h, s, d, eb, 1),
     o = mk(h, s, d, eb, 1), dout = mk(h, s, d, eb, 1), g = mk(h, s, d, eb, 1);
  D4 dq = mk(h, s, d, eb, 0), dk = mk(h, s, d, eb, 0), dv = mk(h, s, d, eb, 0),
     dg = mk(h, s, d, eb, 0);
  D3 l;
  float *lp = aligned_alloc(64, h * s * 4 + 64);
  for (int64_t i = 0; i < h * s; ++i)
    lp[i] = 5.0f;
  l.a = l.b = lp;
  l.off = 0;
  l.sz[0] = 1;
  l.sz[1] = h;
  l.sz[2] = s;
  l.st[0] = 1;
  l.st[1] = s;
  l.st[2] = 1;
  double best = 1e9;
  struct rusage r0, r1;
  for (int i = 0; i < n; ++i) {
    if (i == 1)
      getrusage(RUSAGE_SELF, &r0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fn(&q, &k, &v, &o, &dout, &g, &l, &dq, &dk, &dv, &dg);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double t = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
    if (t < best)
      best = t;
  }
  getrusage(RUSAGE_SELF, &r1);
  uint64_t hs[4] = {0, 0, 0, 0};
  D4 *outs[4] = {&dq, &dk, &dv, &dg};
  for (int o = 0; o < 4; ++o) {
    unsigned char *p = outs[o]->b;
    for (size_t i = 0; i < (size_t)(h * s * d * eb); ++i)
      hs[o] = hs[o] * 1099511628211ull + p[i];
  }
  printf("best %.4f s (%d calls) hash %016llx %016llx %016llx %016llx "
         "faults/call %.0f\n",
         best, n, (unsigned long long)hs[0], (unsigned long long)hs[1],
         (unsigned long long)hs[2], (unsigned long long)hs[3],
         n > 1 ? (double)(r1.ru_minflt - r0.ru_minflt) / (n - 1) : 0.0);
  return 0;
}
