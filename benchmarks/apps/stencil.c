/* stencil: an iterative 2D Jacobi-like stencil on an integer grid, as a heat-diffusion application would run it.
 * Every iteration launches two kernels that share the two grids (stencil_step A->B, then boundary on B, then the
 * grids swap); every --check-every iterations a third kernel (a __local reduction) sums |A - B| and the application
 * reads those partial sums back between launches; half-way it writes new edge sources into a parameter buffer
 * between launches. The host replays all of it exactly: the residuals seen between launches and the final grid. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_common.h"

enum { P_W, P_H, P_ITERS, P_EVERY, P_COUNT };

#define CENTER_WEIGHT 4
#define SHIFT 3
#define RESIDUAL_GROUPS 64
#define RESIDUAL_WG 64

static const char* const kOptions = "-DCENTER_WEIGHT=4 -DSHIFT=3";

static void host_step(const int* in, int* out, int w, int h) {
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const int i = y * w + x;
      if (x == 0 || y == 0 || x == w - 1 || y == h - 1)
        out[i] = in[i];
      else
        out[i] = (CENTER_WEIGHT * in[i] + in[i - 1] + in[i + 1] + in[i - w] + in[i + w]) >> SHIFT;
    }
}

static void host_boundary(int* grid, const int* params, int w, int h) {
  for (int y = 0; y < h; ++y) {
    grid[y * w] = params[0] + (y & 7);
    grid[y * w + w - 1] = params[1];
  }
}

static cl_uint host_residual(const int* a, const int* b, size_t n) {
  cl_uint sum = 0;
  for (size_t i = 0; i < n; ++i) sum += (cl_uint)abs(a[i] - b[i]);
  return sum;
}

int main(int argc, char** argv) {
  app_param params[P_COUNT] = {
      {"width", {256, 1024, 4096}, "grid width", 0, 0},
      {"height", {256, 1024, 4096}, "grid height", 0, 0},
      {"iters", {100, 150, 120}, "iterations (two launches each)", 0, 0},
      {"check-every", {10, 10, 10}, "iterations between residual reads", 0, 0},
  };
  app_t app;
  app_init(&app, "stencil", "iterative 2D integer stencil, two alternating kernels, reads and writes between launches",
           argc, argv, params, P_COUNT);
  const int w = (int)params[P_W].value, h = (int)params[P_H].value;
  const long iters = params[P_ITERS].value, every = params[P_EVERY].value;
  if (w < 3 || h < 3 || (long)w * h > (1L << 30)) app_die(&app, "the grid must be at least 3x3 and at most 2^30 cells");
  if (iters < 1 || every < 1) app_die(&app, "--iters and --check-every must be positive");
  const size_t n = (size_t)w * h, bytes = n * sizeof(int);

  int* init = app_alloc(bytes);
  uint64_t seed = 15;
  for (size_t i = 0; i < n; ++i) init[i] = (int)(app_random(&seed) % 4096);
  int sources[2][2] = {{4000, 0}, {0, 3000}}; /* edge sources before and after the half-way write */
  const long half = iters / 2;
  const long nres = iters / every;
  cl_uint* residuals = app_alloc((size_t)(nres + 1) * sizeof(cl_uint));

  cl_program program = app_build(&app, kOptions);
  cl_kernel k_step = app_kernel(program, "stencil_step");
  cl_kernel k_bound = app_kernel(program, "boundary");
  cl_kernel k_res = app_kernel(program, "residual");
  cl_mem grid[2] = {app_buffer(&app, CL_MEM_READ_WRITE, bytes), app_buffer(&app, CL_MEM_READ_WRITE, bytes)};
  cl_mem d_params = app_buffer(&app, CL_MEM_READ_ONLY, sizeof sources[0]);
  cl_mem d_partial = app_buffer(&app, CL_MEM_WRITE_ONLY, RESIDUAL_GROUPS * sizeof(cl_uint));
  CL_CHECK(clEnqueueWriteBuffer(app.queue, grid[0], CL_TRUE, 0, bytes, init, 0, NULL, NULL));
  CL_CHECK(clEnqueueWriteBuffer(app.queue, d_params, CL_TRUE, 0, sizeof sources[0], sources[0], 0, NULL, NULL));
  const int ni = (int)n;
  app_set_args(k_step, 2, 2, sizeof w, &w, sizeof h, &h);
  app_set_args(k_bound, 1, 3, sizeof d_params, &d_params, sizeof w, &w, sizeof h, &h);
  app_set_args(k_res, 2, 3, sizeof d_partial, &d_partial, RESIDUAL_WG * sizeof(cl_uint), NULL, sizeof ni, &ni);
  const size_t step_global[2] = {(size_t)w, (size_t)h}, bound_global = (size_t)h;
  const size_t res_global = RESIDUAL_GROUPS * RESIDUAL_WG, res_local = RESIDUAL_WG;

  long launches = 0, r = 0;
  cl_uint partial[RESIDUAL_GROUPS];
  const double t0 = app_section_begin();
  for (long it = 0; it < iters; ++it) {
    if (it == half)
      CL_CHECK(clEnqueueWriteBuffer(app.queue, d_params, CL_TRUE, 0, sizeof sources[1], sources[1], 0, NULL, NULL));
    cl_mem in = grid[it % 2], out = grid[(it + 1) % 2];
    app_set_args(k_step, 0, 2, sizeof in, &in, sizeof out, &out);
    CL_CHECK(clEnqueueNDRangeKernel(app.queue, k_step, 2, NULL, step_global, NULL, 0, NULL, NULL));
    CL_CHECK(clSetKernelArg(k_bound, 0, sizeof out, &out));
    CL_CHECK(clEnqueueNDRangeKernel(app.queue, k_bound, 1, NULL, &bound_global, NULL, 0, NULL, NULL));
    launches += 2;
    if ((it + 1) % every == 0) {
      app_set_args(k_res, 0, 2, sizeof in, &in, sizeof out, &out);
      CL_CHECK(clEnqueueNDRangeKernel(app.queue, k_res, 1, NULL, &res_global, &res_local, 0, NULL, NULL));
      ++launches;
      CL_CHECK(clEnqueueReadBuffer(app.queue, d_partial, CL_TRUE, 0, sizeof partial, partial, 0, NULL, NULL));
      cl_uint sum = 0;
      for (int g = 0; g < RESIDUAL_GROUPS; ++g) sum += partial[g];
      residuals[r++] = sum;
    }
  }
  double kernel_ms = 0;
  int* result = app_read_result(&app, grid[iters % 2], bytes, t0, &kernel_ms);

  /* The host's replay. */
  int* ref[2] = {init, app_alloc(bytes)};
  int ok = 1;
  for (long it = 0, rr = 0; it < iters; ++it) {
    int* in = ref[it % 2];
    int* out = ref[(it + 1) % 2];
    host_step(in, out, w, h);
    host_boundary(out, sources[it < half ? 0 : 1], w, h);
    if ((it + 1) % every == 0) {
      const cl_uint want = host_residual(in, out, n);
      if (residuals[rr] != want && ok) {
        fprintf(stderr, "stencil: residual after iteration %ld is %u, the host says %u\n", it + 1, residuals[rr], want);
        ok = 0;
      }
      ++rr;
    }
  }
  const int* want = ref[iters % 2];
  for (size_t i = 0; i < n && ok; ++i)
    if (result[i] != want[i]) {
      fprintf(stderr, "stencil: cell (%zu,%zu) is %d, the host says %d\n", i % (size_t)w, i / (size_t)w, result[i],
              want[i]);
      ok = 0;
    }
  const uint64_t checksum = app_hash(app_hash(APP_HASH_INIT, result, bytes), residuals, (size_t)r * sizeof(cl_uint));

  app_release_buffers(4, grid[0], grid[1], d_params, d_partial);
  CL_CHECK(clReleaseKernel(k_step));
  CL_CHECK(clReleaseKernel(k_bound));
  CL_CHECK(clReleaseKernel(k_res));
  CL_CHECK(clReleaseProgram(program));
  free(ref[0]);
  free(ref[1]);
  free(result);
  free(residuals);
  return app_finish(&app, launches, kernel_ms, ok, checksum, 1);
}
