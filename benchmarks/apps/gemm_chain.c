/* gemm_chain: a chain of dependent matrix products reusing buffers, on integers modulo 2^32. Starting from X = A
 * (clEnqueueCopyBuffer), every step launches two kernels that share buffers: T = X * B (matmul), then X = T + A
 * (matadd). Half-way, between launches, the application copies X to a snapshot buffer (clEnqueueCopyBuffer),
 * maps the snapshot to read it, and maps A to add 1 to its diagonal. The host checks the snapshot and the final X
 * exactly with Freivalds' test (X_k r computed from the chain's definition with matrix-vector products). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_common.h"

enum { P_N, P_STEPS, P_COUNT };

/* y = M x, modulo 2^32. */
static void matvec(const cl_uint* m, const cl_uint* x, cl_uint* y, int n) {
  for (int i = 0; i < n; ++i) {
    cl_uint s = 0;
    for (int k = 0; k < n; ++k) s += m[(size_t)i * n + k] * x[k];
    y[i] = s;
  }
}

/* Freivalds' test of X_k, the chain after k steps: X_{i+1} = X_i B + A_i, X_0 = A_0, where A_i is `a0` before step
 * `change` and `a1` from it on. X_k r = X_0 B^k r + sum_i A_i B^(k-1-i) r. Two random vectors r. */
static int freivalds(const cl_uint* xk, long k, const cl_uint* a0, const cl_uint* a1, long change, const cl_uint* b,
                     int n, uint64_t seed) {
  cl_uint* w = app_alloc((size_t)(k + 1) * n * sizeof(cl_uint)); /* w_j = B^j r */
  cl_uint* want = app_alloc((size_t)n * sizeof(cl_uint));
  cl_uint* got = app_alloc((size_t)n * sizeof(cl_uint));
  cl_uint* tmp = app_alloc((size_t)n * sizeof(cl_uint));
  int ok = 1;
  for (int trial = 0; trial < 2 && ok; ++trial) {
    for (int i = 0; i < n; ++i) w[i] = (cl_uint)app_random(&seed);
    for (long j = 1; j <= k; ++j) matvec(b, w + (size_t)(j - 1) * n, w + (size_t)j * n, n);
    matvec(a0, w + (size_t)k * n, want, n);
    for (long i = 0; i < k; ++i) {
      matvec(i < change ? a0 : a1, w + (size_t)(k - 1 - i) * n, tmp, n);
      for (int e = 0; e < n; ++e) want[e] += tmp[e];
    }
    matvec(xk, w, got, n);
    for (int e = 0; e < n && ok; ++e)
      if (got[e] != want[e]) {
        fprintf(stderr, "gemm_chain: after %ld steps, row %d of X r is %u, the host says %u\n", k, e, got[e], want[e]);
        ok = 0;
      }
  }
  free(w);
  free(want);
  free(got);
  free(tmp);
  return ok;
}

int main(int argc, char** argv) {
  app_param params[P_COUNT] = {
      {"n", {96, 512, 2048}, "matrix side", 0, 0},
      {"steps", {6, 8, 8}, "chain steps (two launches each)", 0, 0},
  };
  app_t app;
  app_init(&app, "gemm_chain", "a chain of dependent integer matrix products with copies and maps between launches",
           argc, argv, params, P_COUNT);
  const int n = (int)params[P_N].value;
  const long steps = params[P_STEPS].value;
  if (n < 1 || n > 16384) app_die(&app, "--n must be in [1, 16384]");
  if (steps < 1) app_die(&app, "--steps must be positive");
  const size_t elems = (size_t)n * n, bytes = elems * sizeof(cl_uint);
  const long half = steps / 2;

  cl_uint* a0 = app_alloc(bytes);
  cl_uint* b = app_alloc(bytes);
  uint64_t seed = 2048;
  for (size_t i = 0; i < elems; ++i) a0[i] = (cl_uint)app_random(&seed);
  for (size_t i = 0; i < elems; ++i) b[i] = (cl_uint)app_random(&seed);

  cl_program program = app_build(&app, "-DELEM=uint");
  cl_kernel k_mul = app_kernel(program, "matmul");
  cl_kernel k_add = app_kernel(program, "matadd");
  cl_mem d_a = app_buffer(&app, CL_MEM_READ_ONLY, bytes);
  cl_mem d_b = app_buffer(&app, CL_MEM_READ_ONLY, bytes);
  cl_mem d_x = app_buffer(&app, CL_MEM_READ_WRITE, bytes);
  cl_mem d_t = app_buffer(&app, CL_MEM_READ_WRITE, bytes);
  cl_mem d_snap = app_buffer(&app, CL_MEM_READ_WRITE, bytes);
  CL_CHECK(clEnqueueWriteBuffer(app.queue, d_a, CL_FALSE, 0, bytes, a0, 0, NULL, NULL));
  CL_CHECK(clEnqueueWriteBuffer(app.queue, d_b, CL_FALSE, 0, bytes, b, 0, NULL, NULL));
  CL_CHECK(clEnqueueCopyBuffer(app.queue, d_a, d_x, 0, 0, bytes, 0, NULL, NULL));
  CL_CHECK(clFinish(app.queue));
  app_set_args(k_mul, 0, 4, sizeof d_t, &d_t, sizeof d_x, &d_x, sizeof d_b, &d_b, sizeof n, &n);
  app_set_args(k_add, 0, 4, sizeof d_x, &d_x, sizeof d_t, &d_t, sizeof d_a, &d_a, sizeof n, &n);
  const size_t mul_global[2] = {(size_t)n, (size_t)n}, add_global = elems;

  cl_uint* snap = app_alloc(bytes);
  cl_uint* a1 = app_alloc(bytes);
  long launches = 0;
  cl_int err = CL_SUCCESS;
  const double t0 = app_section_begin();
  for (long s = 0; s < steps; ++s) {
    if (s == half) {
      CL_CHECK(clEnqueueCopyBuffer(app.queue, d_x, d_snap, 0, 0, bytes, 0, NULL, NULL));
      cl_uint* view = clEnqueueMapBuffer(app.queue, d_snap, CL_TRUE, CL_MAP_READ, 0, bytes, 0, NULL, NULL, &err);
      CL_CHECK(err);
      memcpy(snap, view, bytes);
      CL_CHECK(clEnqueueUnmapMemObject(app.queue, d_snap, view, 0, NULL, NULL));
      cl_uint* av =
          clEnqueueMapBuffer(app.queue, d_a, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL, NULL, &err);
      CL_CHECK(err);
      for (int i = 0; i < n; ++i) av[(size_t)i * n + i] += 1u;
      memcpy(a1, av, bytes);
      CL_CHECK(clEnqueueUnmapMemObject(app.queue, d_a, av, 0, NULL, NULL));
    }
    CL_CHECK(clEnqueueNDRangeKernel(app.queue, k_mul, 2, NULL, mul_global, NULL, 0, NULL, NULL));
    CL_CHECK(clEnqueueNDRangeKernel(app.queue, k_add, 1, NULL, &add_global, NULL, 0, NULL, NULL));
    launches += 2;
  }
  double kernel_ms = 0;
  cl_uint* result = app_read_result(&app, d_x, bytes, t0, &kernel_ms);

  int ok = 1;
  for (int i = 0; i < n && ok; ++i)
    if (a1[(size_t)i * n + i] != a0[(size_t)i * n + i] + 1u) {
      fprintf(stderr, "gemm_chain: the mapped A's diagonal did not read back as written\n");
      ok = 0;
    }
  ok = ok && freivalds(snap, half, a0, a0, half, b, n, 7);
  ok = ok && freivalds(result, steps, a0, a1, half, b, n, 11);
  const uint64_t checksum = app_hash(app_hash(APP_HASH_INIT, result, bytes), snap, bytes);

  app_release_buffers(5, d_a, d_b, d_x, d_t, d_snap);
  CL_CHECK(clReleaseKernel(k_mul));
  CL_CHECK(clReleaseKernel(k_add));
  CL_CHECK(clReleaseProgram(program));
  free(a0);
  free(a1);
  free(b);
  free(snap);
  free(result);
  return app_finish(&app, launches, kernel_ms, ok, checksum, 1);
}
