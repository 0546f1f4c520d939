/* tiny: thousands of tiny launches. Each application thread (--threads) runs --chains independent chains of
 * --launches steps on its own queue, buffers and kernel; a chain's step t updates one of its two buffers from the
 * other (tiny_step), alternating. With --ooo the queue is out-of-order and each step waits on its chain's previous
 * step through events (the chains interleave freely). The host replays every chain exactly. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_common.h"

enum { P_N, P_LAUNCHES, P_CHAINS, P_THREADS, P_OOO, P_COUNT };

typedef struct {
  const app_t* app;
  cl_program program;
  int n, chains, ooo;
  long launches;
  pthread_barrier_t* start;
  double start_ms, end_ms; /* the thread's timed section */
  cl_uint* result;         /* chains x 2 x n: the two buffers of every chain */
  uint64_t seed;
} job_t;

static void init_chain(cl_uint* x, cl_uint* y, int n, uint64_t* seed) {
  for (int i = 0; i < n; ++i) x[i] = (cl_uint)app_random(seed);
  for (int i = 0; i < n; ++i) y[i] = (cl_uint)app_random(seed);
}

static void host_step(cl_uint* dst, const cl_uint* src, cl_uint t, int n) {
  for (int i = 0; i < n; ++i) dst[i] = (dst[i] ^ (src[i] * 2654435761u)) + t + (cl_uint)i;
}

static void* run_job(void* arg) {
  job_t* job = arg;
  const app_t* app = job->app;
  const int n = job->n, chains = job->chains;
  const size_t bytes = (size_t)n * sizeof(cl_uint);
  cl_command_queue q = job->ooo ? app_queue(app, 1) : app_queue(app, 0);
  cl_kernel kernel = app_kernel(job->program, "tiny_step");
  cl_mem* bufs = app_alloc((size_t)chains * 2 * sizeof(cl_mem));
  cl_event* last = app_alloc((size_t)chains * sizeof(cl_event));
  uint64_t seed = job->seed;
  cl_uint* x = app_alloc(bytes);
  cl_uint* y = app_alloc(bytes);
  for (int c = 0; c < chains; ++c) {
    init_chain(x, y, n, &seed);
    bufs[2 * c] = app_buffer(app, CL_MEM_READ_WRITE, bytes);
    bufs[2 * c + 1] = app_buffer(app, CL_MEM_READ_WRITE, bytes);
    CL_CHECK(clEnqueueWriteBuffer(q, bufs[2 * c], CL_TRUE, 0, bytes, x, 0, NULL, NULL));
    CL_CHECK(clEnqueueWriteBuffer(q, bufs[2 * c + 1], CL_TRUE, 0, bytes, y, 0, NULL, NULL));
    last[c] = NULL;
  }
  free(x);
  free(y);
  CL_CHECK(clSetKernelArg(kernel, 3, sizeof n, &n));
  const size_t global = (size_t)n;
  pthread_barrier_wait(job->start);
  job->start_ms = app_now_ms();
  for (long t = 0; t < job->launches; ++t)
    for (int c = 0; c < chains; ++c) {
      cl_mem dst = bufs[2 * c + (t % 2 == 0)], src = bufs[2 * c + (t % 2 != 0)];
      const cl_uint tt = (cl_uint)t;
      app_set_args(kernel, 0, 3, sizeof dst, &dst, sizeof src, &src, sizeof tt, &tt);
      if (job->ooo) {
        cl_event done = NULL;
        CL_CHECK(clEnqueueNDRangeKernel(q, kernel, 1, NULL, &global, NULL, last[c] ? 1 : 0, last[c] ? &last[c] : NULL,
                                        &done));
        if (last[c]) CL_CHECK(clReleaseEvent(last[c]));
        last[c] = done;
      } else {
        CL_CHECK(clEnqueueNDRangeKernel(q, kernel, 1, NULL, &global, NULL, 0, NULL, NULL));
      }
    }
  for (int c = 0; c < chains; ++c)
    for (int b = 0; b < 2; ++b)
      CL_CHECK(clEnqueueReadBuffer(q, bufs[2 * c + b], CL_FALSE, 0, bytes, job->result + ((size_t)2 * c + b) * n,
                                   last[c] ? 1 : 0, last[c] ? &last[c] : NULL, NULL));
  CL_CHECK(clFinish(q));
  job->end_ms = app_now_ms();

  for (int c = 0; c < chains; ++c) {
    if (last[c]) CL_CHECK(clReleaseEvent(last[c]));
    app_release_buffers(2, bufs[2 * c], bufs[2 * c + 1]);
  }
  free(bufs);
  free(last);
  CL_CHECK(clReleaseKernel(kernel));
  CL_CHECK(clReleaseCommandQueue(q));
  return NULL;
}

int main(int argc, char** argv) {
  app_param params[P_COUNT] = {
      {"n", {1024, 4096, 16384}, "elements per launch", 0, 0},
      {"launches", {200, 2000, 10000}, "steps per chain", 0, 0},
      {"chains", {2, 2, 2}, "independent chains per thread", 0, 0},
      {"threads", {1, 1, 1}, "application threads, each with its own queue and buffers", 0, 0},
      {"ooo", {0, 0, 0}, "out-of-order queues, steps ordered by events", 1, 0},
  };
  app_t app;
  app_init(&app, "tiny", "thousands of tiny launches, optionally out-of-order and from several threads", argc, argv,
           params, P_COUNT);
  const int n = (int)params[P_N].value, chains = (int)params[P_CHAINS].value;
  const int threads = (int)params[P_THREADS].value;
  const long steps = params[P_LAUNCHES].value;
  if (n < 1 || n > (1 << 26)) app_die(&app, "--n must be in [1, 2^26]");
  if (chains < 1 || chains > 64 || threads < 1 || threads > 64) app_die(&app, "--chains and --threads: 1 to 64");
  const size_t per_job = (size_t)chains * 2 * n;

  cl_program program = app_build(&app, "");
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
  job_t* jobs = app_alloc((size_t)threads * sizeof(job_t));
  pthread_t* tids = app_alloc((size_t)threads * sizeof(pthread_t));
  for (int i = 0; i < threads; ++i) {
    jobs[i] = (job_t){&app,
                      program,
                      n,
                      chains,
                      (int)params[P_OOO].value,
                      steps,
                      &start,
                      0.0,
                      0.0,
                      app_alloc(per_job * sizeof(cl_uint)),
                      1000u + (uint64_t)i};
    if (pthread_create(&tids[i], NULL, run_job, &jobs[i]) != 0) app_die(&app, "cannot start a thread");
  }
  pthread_barrier_wait(&start);
  double first = 0, last = 0; /* from the first thread's start to the last one's end */
  for (int i = 0; i < threads; ++i) {
    pthread_join(tids[i], NULL);
    if (i == 0 || jobs[i].start_ms < first) first = jobs[i].start_ms;
    if (i == 0 || jobs[i].end_ms > last) last = jobs[i].end_ms;
  }
  const double kernel_ms = last - first;
  pthread_barrier_destroy(&start);

  int ok = 1;
  uint64_t checksum = APP_HASH_INIT;
  cl_uint* ref = app_alloc(2 * (size_t)n * sizeof(cl_uint));
  for (int i = 0; i < threads; ++i) {
    uint64_t seed = jobs[i].seed;
    for (int c = 0; c < chains; ++c) {
      init_chain(ref, ref + n, n, &seed);
      for (long t = 0; t < steps; ++t)
        if (t % 2 == 0)
          host_step(ref + n, ref, (cl_uint)t, n);
        else
          host_step(ref, ref + n, (cl_uint)t, n);
      const cl_uint* got = jobs[i].result + (size_t)2 * c * n;
      if (ok && memcmp(got, ref, 2 * (size_t)n * sizeof(cl_uint)) != 0) {
        fprintf(stderr, "tiny: thread %d chain %d differs from the host's replay\n", i, c);
        ok = 0;
      }
    }
    checksum = app_hash(checksum, jobs[i].result, per_job * sizeof(cl_uint));
    free(jobs[i].result);
  }
  free(ref);
  free(jobs);
  free(tids);
  CL_CHECK(clReleaseProgram(program));
  return app_finish(&app, steps * chains * threads, kernel_ms, ok, checksum, 1);
}
