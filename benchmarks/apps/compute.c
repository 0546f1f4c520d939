/* compute: one long compute-bound kernel: all-pairs gravitational accelerations of n bodies (O(n^2), floats), a
 * single launch dominating the run. The host recomputes a sample of bodies in double precision and accepts a
 * relative error of 1e-3 of the sum of the terms' magnitudes (devices differ in rsqrt and fused multiply-adds, so
 * the output is not bit-exact across devices: exact=no). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "app_common.h"

enum { P_N, P_SAMPLES, P_COUNT };

#define SOFTENING2 0.01

int main(int argc, char** argv) {
  app_param params[P_COUNT] = {
      {"n", {4096, 32768, 131072}, "bodies", 0, 0},
      {"samples", {64, 64, 64}, "bodies the host checks", 0, 0},
  };
  app_t app;
  app_init(&app, "compute", "all-pairs N-body accelerations: one long compute-bound launch", argc, argv, params,
           P_COUNT);
  const int n = (int)params[P_N].value;
  if (n < 1 || n > (1 << 24)) app_die(&app, "--n must be in [1, 2^24]");
  const size_t bytes = (size_t)n * 4 * sizeof(float);

  float* pos = app_alloc(bytes);
  uint64_t seed = 42;
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < 3; ++c) pos[4 * i + c] = (float)(app_random(&seed) % 20001) / 1000.0f - 10.0f;
    pos[4 * i + 3] = 0.5f + (float)(app_random(&seed) % 1000) / 1000.0f;
  }

  cl_program program = app_build(&app, "-DSOFTENING2=0.01f");
  cl_kernel kernel = app_kernel(program, "accelerations");
  cl_mem d_pos = app_buffer(&app, CL_MEM_READ_ONLY, bytes);
  cl_mem d_acc = app_buffer(&app, CL_MEM_WRITE_ONLY, bytes);
  CL_CHECK(clEnqueueWriteBuffer(app.queue, d_pos, CL_TRUE, 0, bytes, pos, 0, NULL, NULL));
  app_set_args(kernel, 0, 3, sizeof d_pos, &d_pos, sizeof d_acc, &d_acc, sizeof n, &n);
  const size_t global = (size_t)n;

  const double t0 = app_section_begin();
  CL_CHECK(clEnqueueNDRangeKernel(app.queue, kernel, 1, NULL, &global, NULL, 0, NULL, NULL));
  double kernel_ms = 0;
  float* acc = app_read_result(&app, d_acc, bytes, t0, &kernel_ms);

  int ok = 1;
  const long samples = params[P_SAMPLES].value < n ? params[P_SAMPLES].value : n;
  for (long s = 0; s < samples && ok; ++s) {
    const int i = (int)((s * (long)n) / (samples > 0 ? samples : 1));
    double want[3] = {0, 0, 0}, scale = 0;
    for (int j = 0; j < n; ++j) {
      const double d[3] = {pos[4 * j] - pos[4 * i], pos[4 * j + 1] - pos[4 * i + 1], pos[4 * j + 2] - pos[4 * i + 2]};
      const double d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + SOFTENING2;
      const double f = pos[4 * j + 3] / (d2 * sqrt(d2));
      for (int c = 0; c < 3; ++c) want[c] += f * d[c];
      scale += f * sqrt(d2 - SOFTENING2);
    }
    for (int c = 0; c < 3; ++c)
      if (fabs(acc[4 * i + c] - want[c]) > 1e-3 * scale + 1e-6) {
        fprintf(stderr, "compute: body %d component %d is %.7g, the host says %.7g (scale %.3g)\n", i, c,
                acc[4 * i + c], want[c], scale);
        ok = 0;
      }
  }
  const uint64_t checksum = app_hash(APP_HASH_INIT, acc, bytes);

  app_release_buffers(2, d_pos, d_acc);
  CL_CHECK(clReleaseKernel(kernel));
  CL_CHECK(clReleaseProgram(program));
  free(pos);
  free(acc);
  return app_finish(&app, 1, kernel_ms, ok, checksum, 0);
}
