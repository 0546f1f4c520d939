/* lu: LU factorisation without pivoting of a random matrix over the integers modulo a prime, in place. Step k
 * launches lu_column over the n-k-1 rows below the pivot and lu_update over the (n-k-1)^2 trailing submatrix: the
 * NDRange shrinks every step (2(n-1) launches, each of a new shape). The host checks L (U r) = A r modulo the prime
 * for two random vectors r (Freivalds), exactly. */
#include <stdio.h>
#include <stdlib.h>

#include "app_common.h"

enum { P_N, P_COUNT };

#define PRIME 2147483647u /* 2^31 - 1 */

static cl_uint mulmod(cl_uint a, cl_uint b) { return (cl_uint)(((uint64_t)a * b) % PRIME); }
static cl_uint addmod(cl_uint a, cl_uint b) { return (cl_uint)(((uint64_t)a + b) % PRIME); }

/* L (U r) == A r modulo the prime, with L unit lower and U upper triangular, both in `lu`. */
static int freivalds(const cl_uint* a, const cl_uint* lu, int n, uint64_t seed) {
  cl_uint* r = app_alloc((size_t)n * sizeof(cl_uint));
  cl_uint* ur = app_alloc((size_t)n * sizeof(cl_uint));
  int ok = 1;
  for (int trial = 0; trial < 2 && ok; ++trial) {
    for (int i = 0; i < n; ++i) r[i] = (cl_uint)(app_random(&seed) % PRIME);
    for (int i = 0; i < n; ++i) {
      cl_uint s = 0;
      for (int j = i; j < n; ++j) s = addmod(s, mulmod(lu[(size_t)i * n + j], r[j]));
      ur[i] = s;
    }
    for (int i = 0; i < n && ok; ++i) {
      cl_uint got = ur[i], want = 0;
      for (int j = 0; j < i; ++j) got = addmod(got, mulmod(lu[(size_t)i * n + j], ur[j]));
      for (int j = 0; j < n; ++j) want = addmod(want, mulmod(a[(size_t)i * n + j], r[j]));
      if (got != want) {
        fprintf(stderr, "lu: row %d of L U r is %u, of A r %u\n", i, got, want);
        ok = 0;
      }
    }
  }
  free(r);
  free(ur);
  return ok;
}

int main(int argc, char** argv) {
  app_param params[P_COUNT] = {{"n", {16, 256, 2048}, "matrix side (2(n-1) launches)", 0, 0}};
  app_t app;
  app_init(&app, "lu", "LU factorisation modulo a prime, an NDRange that shrinks every step", argc, argv, params,
           P_COUNT);
  const int n = (int)params[P_N].value;
  if (n < 1 || n > 32768) app_die(&app, "--n must be in [1, 32768]");
  const size_t elems = (size_t)n * n, bytes = elems * sizeof(cl_uint);

  cl_uint* a = app_alloc(bytes);
  uint64_t seed = 31;
  for (size_t i = 0; i < elems; ++i) a[i] = (cl_uint)(app_random(&seed) % PRIME);

  char options[64];
  snprintf(options, sizeof options, "-DPRIME=%uu", PRIME);
  cl_program program = app_build(&app, options);
  cl_kernel k_col = app_kernel(program, "lu_column");
  cl_kernel k_upd = app_kernel(program, "lu_update");
  cl_mem d_a = app_buffer(&app, CL_MEM_READ_WRITE, bytes);
  CL_CHECK(clEnqueueWriteBuffer(app.queue, d_a, CL_TRUE, 0, bytes, a, 0, NULL, NULL));
  app_set_args(k_col, 0, 2, sizeof d_a, &d_a, sizeof n, &n);
  app_set_args(k_upd, 0, 2, sizeof d_a, &d_a, sizeof n, &n);

  long launches = 0;
  const double t0 = app_section_begin();
  for (int k = 0; k + 1 < n; ++k) {
    const size_t m = (size_t)(n - k - 1), upd_global[2] = {m, m};
    CL_CHECK(clSetKernelArg(k_col, 2, sizeof k, &k));
    CL_CHECK(clEnqueueNDRangeKernel(app.queue, k_col, 1, NULL, &m, NULL, 0, NULL, NULL));
    CL_CHECK(clSetKernelArg(k_upd, 2, sizeof k, &k));
    CL_CHECK(clEnqueueNDRangeKernel(app.queue, k_upd, 2, NULL, upd_global, NULL, 0, NULL, NULL));
    launches += 2;
  }
  double kernel_ms = 0;
  cl_uint* result = app_read_result(&app, d_a, bytes, t0, &kernel_ms);

  int ok = 1;
  for (int k = 0; k < n && ok; ++k)
    if (result[(size_t)k * n + k] == 0) {
      fprintf(stderr, "lu: pivot %d is zero (the matrix needs pivoting: another --n)\n", k);
      ok = 0;
    }
  ok = ok && freivalds(a, result, n, 5);
  const uint64_t checksum = app_hash(APP_HASH_INIT, result, bytes);

  app_release_buffers(1, d_a);
  CL_CHECK(clReleaseKernel(k_col));
  CL_CHECK(clReleaseKernel(k_upd));
  CL_CHECK(clReleaseProgram(program));
  free(a);
  free(result);
  return app_finish(&app, launches, kernel_ms, ok, checksum, 1);
}
