/* stream: the STREAM triad a = b + s c, memory-bound, on large float arrays: a few launches with s = 1, 2, ... The
 * inputs are small integers, so that every product and sum is exact in single precision whether or not a device
 * fuses them: the result is bit-exact everywhere, and the host checks it exactly. */
#include <stdio.h>
#include <stdlib.h>

#include "app_common.h"

enum { P_N, P_REPS, P_COUNT };

int main(int argc, char** argv) {
  app_param params[P_COUNT] = {
      {"n", {1L << 20, 1L << 24, 1L << 27}, "floats per array", 0, 0},
      {"reps", {5, 10, 10}, "launches", 0, 0},
  };
  app_t app;
  app_init(&app, "stream", "the STREAM triad on large arrays, a few launches", argc, argv, params, P_COUNT);
  const long nl = params[P_N].value, reps = params[P_REPS].value;
  if (nl < 1 || nl > (1L << 30)) app_die(&app, "--n must be in [1, 2^30]");
  if (reps < 1 || reps > 4096) app_die(&app, "--reps must be in [1, 4096]");
  const int n = (int)nl;
  const size_t bytes = (size_t)n * sizeof(float);

  float* b = app_alloc(bytes);
  float* c = app_alloc(bytes);
  for (int i = 0; i < n; ++i) {
    b[i] = (float)(i % 1024);
    c[i] = (float)((i * 7) % 1000);
  }

  cl_program program = app_build(&app, "");
  cl_kernel kernel = app_kernel(program, "triad");
  cl_mem d_a = app_buffer(&app, CL_MEM_WRITE_ONLY, bytes);
  cl_mem d_b = app_buffer(&app, CL_MEM_READ_ONLY, bytes);
  cl_mem d_c = app_buffer(&app, CL_MEM_READ_ONLY, bytes);
  CL_CHECK(clEnqueueWriteBuffer(app.queue, d_b, CL_FALSE, 0, bytes, b, 0, NULL, NULL));
  CL_CHECK(clEnqueueWriteBuffer(app.queue, d_c, CL_FALSE, 0, bytes, c, 0, NULL, NULL));
  CL_CHECK(clFinish(app.queue));
  app_set_args(kernel, 0, 3, sizeof d_a, &d_a, sizeof d_b, &d_b, sizeof d_c, &d_c);
  CL_CHECK(clSetKernelArg(kernel, 4, sizeof n, &n));
  const size_t global = (size_t)n;

  const double t0 = app_now_ms();
  for (long r = 0; r < reps; ++r) {
    const float s = (float)(r + 1);
    CL_CHECK(clSetKernelArg(kernel, 3, sizeof s, &s));
    CL_CHECK(clEnqueueNDRangeKernel(app.queue, kernel, 1, NULL, &global, NULL, 0, NULL, NULL));
  }
  double kernel_ms = 0;
  float* a = app_read_result(&app, d_a, bytes, t0, &kernel_ms);

  int ok = 1;
  const float s = (float)reps;
  for (int i = 0; i < n && ok; ++i)
    if (a[i] != b[i] + s * c[i]) {
      fprintf(stderr, "stream: a[%d] is %.9g, the host says %.9g\n", i, a[i], b[i] + s * c[i]);
      ok = 0;
    }
  const uint64_t checksum = app_hash(APP_HASH_INIT, a, bytes);

  app_release_buffers(3, d_a, d_b, d_c);
  CL_CHECK(clReleaseKernel(kernel));
  CL_CHECK(clReleaseProgram(program));
  free(a);
  free(b);
  free(c);
  return app_finish(&app, reps, kernel_ms, ok, checksum, 1);
}
