/* stream: the STREAM triad a = b + s c, memory-bound, on large float arrays: a few launches with s = 1, 2, ... The
 * inputs are small integers, so that every product and sum is exact in single precision whether or not a device
 * fuses them: the result is bit-exact everywhere, and the host checks it exactly.
 * With --host the data comes from the host at every step, as in an application that processes batches: each step
 * writes new b and c (clEnqueueWriteBuffer), launches, and reads a back (blocking), and the host checks it; the timed
 * section is the steps' OpenCL calls (the host's making and checking of each batch is not timed). */
#include <stdio.h>
#include <stdlib.h>

#include "app_common.h"

enum { P_N, P_REPS, P_HOST, P_COUNT };

/* Batch r's inputs: small integers (b + s c stays below 2^24, exact in single precision). */
static void make_batch(float* b, float* c, int n, long r) {
  for (int i = 0; i < n; ++i) {
    b[i] = (float)((i + r) % 1024);
    c[i] = (float)((i * 7 + r) % 1000);
  }
}

/* Whether a = b + s c everywhere; says where not. */
static int check_triad(const float* a, const float* b, const float* c, float s, int n) {
  for (int i = 0; i < n; ++i)
    if (a[i] != b[i] + s * c[i]) {
      fprintf(stderr, "stream: a[%d] is %.9g, the host says %.9g\n", i, a[i], b[i] + s * c[i]);
      return 0;
    }
  return 1;
}

typedef struct {
  const app_t* app;
  cl_kernel kernel;
  cl_mem d_a, d_b, d_c;
  float *b, *c; /* the host's inputs */
  int n;
  long reps;
  size_t global;
} stream_t;

typedef struct {
  double kernel_ms;
  int ok;
  uint64_t checksum;
} result_t;

/* The inputs written once (before the call), then reps launches and one read of the result. */
static result_t resident(const stream_t* st) {
  const double t0 = app_now_ms();
  for (long r = 0; r < st->reps; ++r) {
    const float s = (float)(r + 1);
    CL_CHECK(clSetKernelArg(st->kernel, 3, sizeof s, &s));
    CL_CHECK(clEnqueueNDRangeKernel(st->app->queue, st->kernel, 1, NULL, &st->global, NULL, 0, NULL, NULL));
  }
  result_t res = {0, 0, 0};
  const size_t bytes = (size_t)st->n * sizeof(float);
  float* a = app_read_result(st->app, st->d_a, bytes, t0, &res.kernel_ms);
  res.ok = check_triad(a, st->b, st->c, (float)st->reps, st->n);
  res.checksum = app_hash(APP_HASH_INIT, a, bytes);
  free(a);
  return res;
}

/* --host: each step writes batch r's inputs, launches and reads the result back; only the OpenCL calls are timed. */
static result_t from_host(const stream_t* st) {
  const size_t bytes = (size_t)st->n * sizeof(float);
  cl_command_queue q = st->app->queue;
  float* a = app_alloc(bytes);
  result_t res = {0, 1, APP_HASH_INIT};
  for (long r = 0; r < st->reps && res.ok; ++r) {
    make_batch(st->b, st->c, st->n, r);
    const float s = (float)(r + 1);
    const double t0 = app_now_ms();
    CL_CHECK(clEnqueueWriteBuffer(q, st->d_b, CL_FALSE, 0, bytes, st->b, 0, NULL, NULL));
    CL_CHECK(clEnqueueWriteBuffer(q, st->d_c, CL_FALSE, 0, bytes, st->c, 0, NULL, NULL));
    CL_CHECK(clSetKernelArg(st->kernel, 3, sizeof s, &s));
    CL_CHECK(clEnqueueNDRangeKernel(q, st->kernel, 1, NULL, &st->global, NULL, 0, NULL, NULL));
    CL_CHECK(clEnqueueReadBuffer(q, st->d_a, CL_TRUE, 0, bytes, a, 0, NULL, NULL));
    res.kernel_ms += app_now_ms() - t0;
    res.ok = check_triad(a, st->b, st->c, s, st->n);
    res.checksum = app_hash(res.checksum, a, bytes);
  }
  free(a);
  return res;
}

int main(int argc, char** argv) {
  app_param params[P_COUNT] = {
      {"n", {1L << 20, 1L << 24, 1L << 27}, "floats per array", 0, 0},
      {"reps", {5, 10, 10}, "launches", 0, 0},
      {"host", {0, 0, 0}, "the inputs written and the result read at every step", 1, 0},
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
  make_batch(b, c, n, 0);

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

  const stream_t st = {&app, kernel, d_a, d_b, d_c, b, c, n, reps, global};
  const result_t res = params[P_HOST].value ? from_host(&st) : resident(&st);
  app_release_buffers(3, d_a, d_b, d_c);
  CL_CHECK(clReleaseKernel(kernel));
  CL_CHECK(clReleaseProgram(program));
  free(b);
  free(c);
  return app_finish(&app, reps, res.kernel_ms, res.ok, res.checksum, 1);
}
