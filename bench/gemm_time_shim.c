/* LD_PRELOAD shim for bench/gemm_share.sh: adds up the CPU time the calling thread spends
 * inside single-precision GEMM (cblas_sgemm, which attn calls, and the Fortran sgemm_, which
 * PyTorch's CPU BLAS path calls), and writes "calls flops gemm_cpu_s process_cpu_s" to
 * $GEMM_SHIM_OUT when the process exits. Thread CPU time, not wall time: on a machine that
 * other jobs load, a descheduled thread accrues none, so the share stays measurable. Meant for
 * one-thread runs (BLAS then does all its work on the calling thread).
 * Square products of 2048 and more are left out, and their CPU time is taken off the process's:
 * they are `attn bench`'s one-second sgemm-rate measurement (its JSON's machine report), whose
 * call count depends on the machine's speed; no benchmarked model has such a product.
 *   gcc -O2 -shared -fPIC bench/gemm_time_shim.c -o gemm_time_shim.so -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

typedef int blasint;
typedef void (*cblas_fn)(int, int, int, blasint, blasint, blasint, float, const float*, blasint, const float*,
                         blasint, float, float*, blasint);
typedef void (*fortran_fn)(const char*, const char*, const blasint*, const blasint*, const blasint*, const float*,
                           const float*, const blasint*, const float*, const blasint*, const float*, float*,
                           const blasint*);

static long g_calls;
static double g_flops, g_seconds, g_skipped_seconds;
static __thread int g_depth; /* an sgemm_ that calls cblas_sgemm (or back) counts once */

/* The BLAS's own symbol. RTLD_NEXT finds it in a program linked against the BLAS (attn); a
 * library that Python dlopens later (libtorch's libblas.so.3) is not in that scope, so then
 * ask the already loaded BLAS libraries directly. */
static void* real_symbol(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  static const char* const libraries[] = {"libblas.so.3", "libopenblas.so.0", "libcblas.so.3"};
  for (unsigned i = 0; !f && i < sizeof libraries / sizeof libraries[0]; ++i) {
    void* h = dlopen(libraries[i], RTLD_LAZY | RTLD_NOLOAD);
    if (h) f = dlsym(h, name);
  }
  if (!f) {
    fprintf(stderr, "gemm_time_shim: no %s in the loaded BLAS\n", name);
    abort();
  }
  return f;
}

static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void account(double t0, double m, double n, double k) {
  const double dt = thread_cpu() - t0;
  if (m == n && n == k && m >= 2048) {
    g_skipped_seconds += dt;
    return;
  }
  __atomic_fetch_add(&g_calls, 1, __ATOMIC_RELAXED);
  /* doubles have no atomic add; the runs this is for are single-threaded */
  g_flops += 2.0 * m * n * k;
  g_seconds += dt;
}

void cblas_sgemm(int order, int ta, int tb, blasint m, blasint n, blasint k, float alpha, const float* a,
                 blasint lda, const float* b, blasint ldb, float beta, float* c, blasint ldc) {
  static cblas_fn real;
  if (!real) real = (cblas_fn)real_symbol("cblas_sgemm");
  if (g_depth++) {
    real(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    --g_depth;
    return;
  }
  const double t0 = thread_cpu();
  real(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  account(t0, m, n, k);
  --g_depth;
}

void sgemm_(const char* ta, const char* tb, const blasint* m, const blasint* n, const blasint* k, const float* alpha,
            const float* a, const blasint* lda, const float* b, const blasint* ldb, const float* beta, float* c,
            const blasint* ldc) {
  static fortran_fn real;
  if (!real) real = (fortran_fn)real_symbol("sgemm_");
  if (g_depth++) {
    real(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    --g_depth;
    return;
  }
  const double t0 = thread_cpu();
  real(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  account(t0, *m, *n, *k);
  --g_depth;
}

__attribute__((destructor)) static void report(void) {
  const char* path = getenv("GEMM_SHIM_OUT");
  if (!path) return;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
  FILE* f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "%ld %.6e %.6f %.6f\n", g_calls, g_flops, g_seconds, cpu - g_skipped_seconds);
  fclose(f);
}
