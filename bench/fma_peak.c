/* The f32 FMA peak of this CPU: T threads, each pinned to its own CPU,
 * each running 12 independent chains of vfmadd on W-bit vectors (12 chains
 * cover 4-cycle FMA latency on two pipes with room to spare). Built and run
 * by bench/fma_peak.py:
 *
 *   fma_peak THREADS WIDTH ITERATIONS   (WIDTH 256 or 512)
 *
 * prints "seconds" (wall time of the slowest thread's loop, all threads
 * started together) and the FLOP count on one line.
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHAINS 12
#define MAX_THREADS 256

static long iterations;
static int width;
static pthread_barrier_t start;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The sums are returned so that the compiler keeps every chain. */
__attribute__((target("avx512f"))) static float chains512(void) {
  __m512 a[CHAINS];
  for (int i = 0; i < CHAINS; i++)
    a[i] = _mm512_set1_ps(i * 1e-3f);
  __m512 x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(1e-6f);
  for (long k = 0; k < iterations; k++) {
#pragma GCC unroll 12
    for (int i = 0; i < CHAINS; i++)
      a[i] = _mm512_fmadd_ps(a[i], x, y);
  }
  float s = 0;
  for (int i = 0; i < CHAINS; i++)
    s += _mm512_reduce_add_ps(a[i]);
  return s;
}

__attribute__((target("avx2,fma"))) static float chains256(void) {
  __m256 a[CHAINS];
  for (int i = 0; i < CHAINS; i++)
    a[i] = _mm256_set1_ps(i * 1e-3f);
  __m256 x = _mm256_set1_ps(0.999f), y = _mm256_set1_ps(1e-6f);
  for (long k = 0; k < iterations; k++) {
#pragma GCC unroll 12
    for (int i = 0; i < CHAINS; i++)
      a[i] = _mm256_fmadd_ps(a[i], x, y);
  }
  float t[8], s = 0;
  for (int i = 0; i < CHAINS; i++) {
    _mm256_storeu_ps(t, a[i]);
    s += t[0];
  }
  return s;
}

struct worker {
  pthread_t thread;
  int cpu;
  double seconds;
  float sum;
};

static void *run(void *p) {
  struct worker *w = p;
  if (w->cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(w->cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  }
  pthread_barrier_wait(&start);
  double t = now();
  w->sum = width == 512 ? chains512() : chains256();
  w->seconds = now() - t;
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s THREADS WIDTH ITERATIONS\n", argv[0]);
    return 2;
  }
  int threads = atoi(argv[1]);
  width = atoi(argv[2]);
  iterations = atol(argv[3]);
  if (threads < 1 || threads > MAX_THREADS || (width != 256 && width != 512) ||
      iterations < 1) {
    fprintf(stderr,
            "fma_peak: bad THREADS (1-%d), WIDTH (256, 512) or "
            "ITERATIONS\n",
            MAX_THREADS);
    return 2;
  }
  __builtin_cpu_init();
  if (width == 512 ? !__builtin_cpu_supports("avx512f")
                   : !__builtin_cpu_supports("fma")) {
    fprintf(stderr, "fma_peak: this CPU has no %d-bit FMA\n", width);
    return 3;
  }
  /* One CPU per thread, from the set this process may run on. */
  cpu_set_t allowed;
  sched_getaffinity(0, sizeof(allowed), &allowed);
  static struct worker workers[MAX_THREADS];
  int cpu = 0;
  for (int i = 0; i < threads; i++) {
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &allowed))
      cpu++;
    workers[i].cpu = cpu < CPU_SETSIZE ? cpu++ : -1;
  }
  pthread_barrier_init(&start, 0, threads);
  for (int i = 0; i < threads; i++)
    pthread_create(&workers[i].thread, 0, run, &workers[i]);
  double seconds = 0, sum = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(workers[i].thread, 0);
    if (workers[i].seconds > seconds)
      seconds = workers[i].seconds;
    sum += workers[i].sum;
  }
  double flop = 2.0 * (width / 32) * CHAINS * (double)iterations * threads;
  printf("%.6f %.6g %g\n", seconds, flop, sum);
  return 0;
}
