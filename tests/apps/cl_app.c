/* A plain OpenCL application for the interposer tests (tests/test_intercept.cpp). It knows nothing of dop: C,
 * linked only against OpenCL. It runs one of a few kernels on the first device of the first platform, checks the
 * results exactly and prints "<mode>: OK ..." (exit 0) or "<mode>: FAIL ..." (exit 1).
 *
 *   cl_app vecadd [N] [REPEAT]   1D, read-only inputs, write-only output, scalar n, an event waited on
 *   cl_app build                 vecadd's program built and its kernel made, no launch
 *   cl_app shapes [N] [REPEAT]   vecadd at REPEAT NDRanges shrinking by 64 from N (n and the output's last element
 *                                following), then one at N/2: launch classes that span shapes
 *   cl_app rw2d                  2D launch with an explicit local size, a read-write buffer, two launches
 *   cl_app local                 a __local argument (a work-group reduction), launched twice
 *   cl_app nullbuf               a buffer argument given as NULL (clSetKernelArg with no value): the kernel tests it
 *   cl_app threads               vecadd from two threads at once, each with its own queue, buffers and kernel
 *   cl_app poly [N] [ITERS]      compute-bound 1D kernel (an integer recurrence per element), read-write buffer
 *   cl_app rowsum M...           one kernel (rowsum: s[i] = the sum of row i of a, rows of m ints) launched once per
 *                                M over 256 rows, each result read and checked: a scalar its bytes per item read
 *   cl_app resid [N]             residency: two kernels sharing buffers, the app reading, writing, filling, copying
 *                                and mapping buffers between launches, a kernel with a __local argument using
 *                                results of dop's launches, an out-of-order queue with events; every step checked
 *   cl_app contexts              vecadd, then vecadd and resid in a second context on the same device, then vecadd
 *                                in the first again: kernels of one source in two contexts, in turn
 *   cl_app slice [N]             residency by footprints: a kernel writing part of a slice of a buffer at three
 *                                offsets (one a negative scalar), then one writing it through loaded indices; the
 *                                app reads the buffer whole and in part after each, every read checked exactly
 *   cl_app repeat                launches of one kernel (axpb: c = a + k b below n) that repeat a launch class, and
 *                                what must end a repeat: another scalar, the inputs swapped, shapes of the class and
 *                                of another one, a bigger buffer, a write of the output, writes of both inputs (fed
 *                                from the host), a large launch, then a small one; c checked after each launch
 *   cl_app fail [LAUNCHES] [wait|read]  launches of a read-write kernel (inc) that may fail (DOP_TEST_FAIL_CHUNK):
 *                                after each, its event waited for (wait: results left where they are) or the buffer
 *                                read (read). A launch whose enqueue, event or read reports an error is taken as not
 *                                run: the app writes the buffer back as it was before it (a new queue if the old one
 *                                is broken) and goes on. Every read is checked exactly against what the launches that
 *                                reported no error make of it, and "fail: OK errors=E" says how many reported one.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                \
  do {                                                                             \
    cl_int err_ = (call);                                                          \
    if (err_ != CL_SUCCESS) {                                                      \
      fprintf(stderr, "cl_app: %s failed: %d (line %d)\n", #call, err_, __LINE__); \
      exit(2);                                                                     \
    }                                                                              \
  } while (0)

static cl_context ctx;
static cl_device_id dev;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static cl_program build(const char* src) {
  cl_int err;
  cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
  CHECK(err);
  err = clBuildProgram(p, 1, &dev, "-DSCALE=3", NULL, NULL);
  if (err != CL_SUCCESS) {
    char log[8192] = {0};
    clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
    fprintf(stderr, "cl_app: build failed: %d\n%s\n", err, log);
    exit(2);
  }
  return p;
}

/* A kernel of `p` and a buffer of the context: the program stops on an error. */
static cl_kernel kernel(cl_program p, const char* name) {
  cl_int err;
  cl_kernel k = clCreateKernel(p, name, &err);
  CHECK(err);
  return k;
}

static cl_mem buffer(cl_mem_flags flags, size_t bytes, void* host) {
  cl_int err;
  cl_mem m = clCreateBuffer(ctx, flags, bytes, host, &err);
  CHECK(err);
  return m;
}

static const char* vecadd_src =
    "__kernel void vecadd(__global const float* a, __global const float* b, __global float* c, int n) {\n"
    "  int i = get_global_id(0);\n"
    "  if (i < n) c[i] = a[i] + b[i];\n"
    "}\n";

/* vecadd's inputs and output on the host and on the device, its kernel with the buffers set (n not yet). */
struct vecadd_data {
  int n;
  float *a, *b, *c;
  cl_program p;
  cl_kernel k;
  cl_mem da, db, dc;
};

static struct vecadd_data vecadd_make(cl_command_queue q, int n) {
  struct vecadd_data v = {n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
  size_t bytes = (size_t)n * sizeof(float);
  v.a = malloc(bytes);
  v.b = malloc(bytes);
  v.c = malloc(bytes);
  for (int i = 0; i < n; ++i) {
    v.a[i] = (float)i * 0.5f;
    v.b[i] = (float)(2 * i + 1);
    v.c[i] = -1.0f;
  }
  v.p = build(vecadd_src);
  v.k = kernel(v.p, "vecadd");
  v.da = buffer(CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, v.a);
  v.db = buffer(CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, v.b);
  v.dc = buffer(CL_MEM_WRITE_ONLY, bytes, NULL);
  CHECK(clEnqueueWriteBuffer(q, v.dc, CL_TRUE, 0, bytes, v.c, 0, NULL, NULL));
  CHECK(clSetKernelArg(v.k, 0, sizeof v.da, &v.da));
  CHECK(clSetKernelArg(v.k, 1, sizeof v.db, &v.db));
  CHECK(clSetKernelArg(v.k, 2, sizeof v.dc, &v.dc));
  return v;
}

/* Reads the output and counts the elements that are not a + b below `active` and -1 from there (printing a few). */
static int vecadd_check(cl_command_queue q, struct vecadd_data* v, int active, const char* mode) {
  CHECK(clEnqueueReadBuffer(q, v->dc, CL_TRUE, 0, (size_t)v->n * sizeof(float), v->c, 0, NULL, NULL));
  int bad = 0;
  for (int i = 0; i < v->n; ++i) {
    float want = i < active ? (float)i * 0.5f + (float)(2 * i + 1) : -1.0f;
    if (v->c[i] != want) {
      if (bad < 3) printf("%s: c[%d] = %g, want %g\n", mode, i, v->c[i], want);
      ++bad;
    }
  }
  return bad;
}

static void vecadd_free(struct vecadd_data* v) {
  clReleaseMemObject(v->da);
  clReleaseMemObject(v->db);
  clReleaseMemObject(v->dc);
  clReleaseKernel(v->k);
  clReleaseProgram(v->p);
  free(v->a);
  free(v->b);
  free(v->c);
}

/* vecadd of n floats, `repeat` launches; returns 0 when every element is exact. */
static int vecadd(cl_command_queue q, int n, int repeat, double* ms) {
  struct vecadd_data v = vecadd_make(q, n);
  /* Leave the last few elements out (n - 3): they must keep their -1. */
  int active = n - 3;
  CHECK(clSetKernelArg(v.k, 3, sizeof active, &active));
  size_t global = (size_t)n, local = 64;
  double t0 = now_ms();
  for (int r = 0; r < repeat; ++r) {
    cl_event ev;
    CHECK(clEnqueueNDRangeKernel(q, v.k, 1, NULL, &global, (n % 64 == 0) ? &local : NULL, 0, NULL, &ev));
    CHECK(clWaitForEvents(1, &ev));
    cl_int status = -1;
    CHECK(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
    if (status != CL_COMPLETE) {
      printf("vecadd: FAIL event status %d\n", status);
      return 1;
    }
    CHECK(clReleaseEvent(ev));
  }
  CHECK(clFinish(q));
  *ms = now_ms() - t0;
  int bad = vecadd_check(q, &v, active, "vecadd");
  vecadd_free(&v);
  return bad;
}

/* vecadd at global sizes n, n - 64, ..., n - 64 (repeat - 1), then n / 2 (a multiple of 64), local 64, each with
 * n = its global size - 3: the first launch's output is every later one's too (c[i] = a[i] + b[i] below n - 3, the
 * rest untouched). */
static int shapes(cl_command_queue q, int n, int repeat) {
  struct vecadd_data v = vecadd_make(q, n);
  const size_t local = 64;
  for (int r = 0; r <= repeat; ++r) {
    const size_t global = r < repeat ? (size_t)n - 64 * (size_t)r : (size_t)(n / 2 / 64 * 64);
    const int active = (int)global - 3;
    CHECK(clSetKernelArg(v.k, 3, sizeof active, &active));
    CHECK(clEnqueueNDRangeKernel(q, v.k, 1, NULL, &global, &local, 0, NULL, NULL));
  }
  int bad = vecadd_check(q, &v, n - 3, "shapes");
  vecadd_free(&v);
  return bad;
}

/* 2D, read-write: m[y][x] = m[y][x] * SCALE + x - y + k, launched twice (k = 5, then k = -2). */
static const char* rw2d_src =
    "__kernel void rw2d(__global int* m, int w, int k) {\n"
    "  int x = get_global_id(0), y = get_global_id(1);\n"
    "  m[y * w + x] = m[y * w + x] * SCALE + x - y + k;\n"
    "}\n";

static int rw2d(cl_command_queue q) {
  enum { W = 96, H = 256 };
  cl_int err;
  static int m[W * H], want[W * H];
  for (int i = 0; i < W * H; ++i) m[i] = want[i] = (i * 7) % 1000 - 500;
  cl_program p = build(rw2d_src);
  cl_kernel kern = clCreateKernel(p, "rw2d", &err);
  CHECK(err);
  cl_mem dm = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof m, m, &err);
  CHECK(err);
  int w = W;
  CHECK(clSetKernelArg(kern, 0, sizeof dm, &dm));
  CHECK(clSetKernelArg(kern, 1, sizeof w, &w));
  size_t global[2] = {W, H}, local[2] = {16, 4};
  const int ks[2] = {5, -2};
  for (int r = 0; r < 2; ++r) {
    CHECK(clSetKernelArg(kern, 2, sizeof ks[r], &ks[r]));
    CHECK(clEnqueueNDRangeKernel(q, kern, 2, NULL, global, local, 0, NULL, NULL));
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x) want[y * W + x] = want[y * W + x] * 3 + x - y + ks[r];
  }
  CHECK(clEnqueueReadBuffer(q, dm, CL_TRUE, 0, sizeof m, m, 0, NULL, NULL));
  int bad = 0;
  for (int i = 0; i < W * H; ++i)
    if (m[i] != want[i]) {
      if (bad < 3) printf("rw2d: m[%d] = %d, want %d\n", i, m[i], want[i]);
      ++bad;
    }
  clReleaseMemObject(dm);
  clReleaseKernel(kern);
  clReleaseProgram(p);
  return bad;
}

/* Work-group sums through __local scratch memory: out[g] = sum of in[g*64 .. g*64+63]. */
static const char* local_src =
    "__kernel void group_sum(__global const int* in, __global int* out, __local int* scratch) {\n"
    "  size_t l = get_local_id(0);\n"
    "  scratch[l] = in[get_global_id(0)];\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  for (size_t s = get_local_size(0) / 2; s > 0; s /= 2) {\n"
    "    if (l < s) scratch[l] += scratch[l + s];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  }\n"
    "  if (l == 0) out[get_group_id(0)] = scratch[0];\n"
    "}\n";

static int local_sum(cl_command_queue q) {
  enum { N = 64 * 256, L = 64, G = N / L };
  cl_int err;
  static int in[N], out[G];
  for (int i = 0; i < N; ++i) in[i] = (i * 13) % 101 - 50;
  cl_program p = build(local_src);
  cl_kernel k = clCreateKernel(p, "group_sum", &err);
  CHECK(err);
  cl_mem din = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof in, in, &err);
  CHECK(err);
  cl_mem dout = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof out, NULL, &err);
  CHECK(err);
  CHECK(clSetKernelArg(k, 0, sizeof din, &din));
  CHECK(clSetKernelArg(k, 1, sizeof dout, &dout));
  CHECK(clSetKernelArg(k, 2, L * sizeof(int), NULL));
  size_t global = N, local = L;
  int bad = 0;
  for (int run = 0; run < 2; ++run) {
    memset(out, 0, sizeof out);
    CHECK(clEnqueueWriteBuffer(q, dout, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL));
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, dout, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL));
    for (int g = 0; g < G; ++g) {
      int want = 0;
      for (int i = 0; i < L; ++i) want += in[g * L + i];
      if (out[g] != want) {
        if (bad < 3) printf("local: out[%d] = %d, want %d\n", g, out[g], want);
        ++bad;
      }
    }
  }
  clReleaseMemObject(din);
  clReleaseMemObject(dout);
  clReleaseKernel(k);
  clReleaseProgram(p);
  return bad;
}

/* A buffer argument given as NULL, which the kernel tests: out[i] = opt ? opt[i] : 3 i, opt NULL. */
static const char* nullbuf_src =
    "__kernel void pick(__global int* out, __global const int* opt) {\n"
    "  size_t i = get_global_id(0);\n"
    "  out[i] = opt ? opt[i] : (int)(3 * i);\n"
    "}\n";

static int nullbuf(cl_command_queue q) {
  enum { N = 64 * 256 };
  cl_int err;
  static int out[N];
  cl_program p = build(nullbuf_src);
  cl_kernel k = clCreateKernel(p, "pick", &err);
  CHECK(err);
  cl_mem dout = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof out, NULL, &err);
  CHECK(err);
  CHECK(clSetKernelArg(k, 0, sizeof dout, &dout));
  CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), NULL));
  size_t global = N;
  CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
  CHECK(clEnqueueReadBuffer(q, dout, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL));
  int bad = 0;
  for (int i = 0; i < N; ++i)
    if (out[i] != 3 * i) {
      if (bad < 3) printf("nullbuf: out[%d] = %d, want %d\n", i, out[i], 3 * i);
      ++bad;
    }
  clReleaseMemObject(dout);
  clReleaseKernel(k);
  clReleaseProgram(p);
  return bad;
}

/* Compute-bound: ITERS steps of an integer recurrence per element, in place (enough work for both devices). */
static const char* poly_src =
    "__kernel void poly(__global uint* x, int iters) {\n"
    "  size_t i = get_global_id(0);\n"
    "  uint v = x[i];\n"
    "  for (int k = 0; k < iters; ++k) v = (v * 1664525u + 1013904223u) ^ (v >> 7);\n"
    "  x[i] = v;\n"
    "}\n";

static int poly(cl_command_queue q, int n, int iters) {
  cl_int err;
  size_t bytes = (size_t)n * sizeof(cl_uint);
  cl_uint* x = malloc(bytes);
  for (int i = 0; i < n; ++i) x[i] = (cl_uint)i * 2654435761u;
  cl_program p = build(poly_src);
  cl_kernel k = clCreateKernel(p, "poly", &err);
  CHECK(err);
  cl_mem dx = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, x, &err);
  CHECK(err);
  CHECK(clSetKernelArg(k, 0, sizeof dx, &dx));
  CHECK(clSetKernelArg(k, 1, sizeof iters, &iters));
  size_t global = (size_t)n, local = 64;
  CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL));
  CHECK(clEnqueueReadBuffer(q, dx, CL_TRUE, 0, bytes, x, 0, NULL, NULL));
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    cl_uint v = (cl_uint)i * 2654435761u;
    for (int s = 0; s < iters; ++s) v = (v * 1664525u + 1013904223u) ^ (v >> 7);
    if (x[i] != v) {
      if (bad < 3) printf("poly: x[%d] = %u, want %u\n", i, x[i], v);
      ++bad;
    }
  }
  clReleaseMemObject(dx);
  clReleaseKernel(k);
  clReleaseProgram(p);
  free(x);
  return bad;
}

/* rowsum's bytes per work-item depend on the scalar m (its bundle's global_bytes_per_item_expr: "4*m + 4"). */
static const char* rowsum_src =
    "__kernel void rowsum(__global const int* a, __global int* s, int m) {\n"
    "  int i = get_global_id(0);\n"
    "  int t = 0;\n"
    "  for (int j = 0; j < m; ++j) t += a[i * m + j];\n"
    "  s[i] = t;\n"
    "}\n";

/* rowsum launched over 256 rows for each of the `count` row lengths `ms` (each at most 64), in turn. */
static int rowsum(cl_command_queue q, const int* ms, int count) {
  enum { ROWS = 256, MOST = 64 };
  int* a = malloc(ROWS * MOST * sizeof(int));
  int got[ROWS];
  for (int i = 0; i < ROWS * MOST; ++i) a[i] = i % 101 - 50;
  cl_program p = build(rowsum_src);
  cl_kernel k = kernel(p, "rowsum");
  cl_mem da = buffer(CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, ROWS * MOST * sizeof(int), a);
  cl_mem ds = buffer(CL_MEM_WRITE_ONLY, sizeof got, NULL);
  CHECK(clSetKernelArg(k, 0, sizeof da, &da));
  CHECK(clSetKernelArg(k, 1, sizeof ds, &ds));
  int bad = 0;
  for (int c = 0; c < count && !bad; ++c) {
    const int m = ms[c];
    const size_t global = ROWS, local = 64;
    CHECK(clSetKernelArg(k, 2, sizeof m, &m));
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, ds, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
    for (int i = 0; i < ROWS && !bad; ++i) {
      int want = 0;
      for (int j = 0; j < m; ++j) want += a[i * m + j];
      if (got[i] != want) {
        printf("rowsum: m=%d: s[%d] = %d, want %d\n", m, i, got[i], want);
        bad = 1;
      }
    }
  }
  clReleaseMemObject(da);
  clReleaseMemObject(ds);
  clReleaseKernel(k);
  clReleaseProgram(p);
  free(a);
  return bad;
}

struct thread_job {
  int n, bad;
  double ms;
};

static void* thread_main(void* arg) {
  struct thread_job* job = arg;
  cl_int err;
  cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
  CHECK(err);
  /* Eight launches each: once both threads' first launches (each a class decided anew) are past, the rest can repeat
   * their classes whatever the threads' interleaving (with three, a repeat needed the other thread to change nothing
   * between this one's second and third launch). */
  job->bad = vecadd(q, job->n, 8, &job->ms);
  clReleaseCommandQueue(q);
  return NULL;
}

/* Residency: every way an application touches its buffers between kernel launches, each followed by an exact check
 * against a host mirror. inc: a[i] += p[0]; blend: b[i] = a[i] * k + b[i]; gsum (a __local reduction): s[g] = sum of a
 * over work-group g. */
static const char* resid_src =
    "__kernel void inc(__global int* a, __global const int* p) { int i = get_global_id(0); a[i] += p[0]; }\n"
    "__kernel void blend(__global const int* a, __global int* b, int k) {\n"
    "  int i = get_global_id(0); b[i] = a[i] * k + b[i]; }\n"
    "__kernel void gsum(__global const int* a, __global int* s, __local int* tmp) {\n"
    "  int l = get_local_id(0); tmp[l] = a[get_global_id(0)]; barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  if (l == 0) { int t = 0; for (int j = 0; j < (int)get_local_size(0); ++j) t += tmp[j];\n"
    "    s[get_group_id(0)] = t; } }\n";

static int resid_check(const char* step, const int* got, const int* want, int n) {
  for (int i = 0; i < n; ++i)
    if (got[i] != want[i]) {
      printf("resid: FAIL at %s: [%d] = %d, want %d\n", step, i, got[i], want[i]);
      return 1;
    }
  return 0;
}

static int resid(cl_command_queue q, int n) {
  enum { G = 64 };
  cl_int err;
  size_t bytes = (size_t)n * sizeof(int), global = (size_t)n, local = G;
  int* a = malloc(bytes);
  int* b = malloc(bytes);
  int* got = malloc(bytes);
  int* s = malloc(bytes / G);
  int* want_s = malloc(bytes / G);
  for (int i = 0; i < n; ++i) {
    a[i] = i % 1000 - 300;
    b[i] = (i * 7) % 91;
  }
  int p = 1;
  cl_program prog = build(resid_src);
  cl_kernel inc = kernel(prog, "inc"), mix = kernel(prog, "blend"), gsum = kernel(prog, "gsum");
  cl_mem da = buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, a);
  cl_mem db = buffer(CL_MEM_READ_WRITE, bytes, NULL);
  cl_mem dp = buffer(CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof p, &p);
  cl_mem ds = buffer(CL_MEM_WRITE_ONLY, bytes / G, NULL);
  CHECK(clEnqueueWriteBuffer(q, db, CL_FALSE, 0, bytes, b, 0, NULL, NULL));
  CHECK(clSetKernelArg(inc, 0, sizeof da, &da));
  CHECK(clSetKernelArg(inc, 1, sizeof dp, &dp));
  CHECK(clSetKernelArg(mix, 0, sizeof da, &da));
  CHECK(clSetKernelArg(mix, 1, sizeof db, &db));
  CHECK(clSetKernelArg(gsum, 0, sizeof da, &da));
  CHECK(clSetKernelArg(gsum, 1, sizeof ds, &ds));
  CHECK(clSetKernelArg(gsum, 2, G * sizeof(int), NULL));
  int bad = 0;
  /* Three launches in a row, then the app reads the result (blocking) and a part of it (non-blocking). */
  for (int r = 0; r < 3; ++r) {
    CHECK(clEnqueueNDRangeKernel(q, inc, 1, NULL, &global, &local, 0, NULL, NULL));
    for (int i = 0; i < n; ++i) a[i] += p;
  }
  CHECK(clEnqueueReadBuffer(q, da, CL_TRUE, 0, bytes, got, 0, NULL, NULL));
  bad |= resid_check("read after 3 launches", got, a, n);
  cl_event ev;
  memset(got, 0, bytes);
  CHECK(clEnqueueReadBuffer(q, da, CL_FALSE, 64 * sizeof(int), 100 * sizeof(int), got, 0, NULL, &ev));
  CHECK(clWaitForEvents(1, &ev));
  CHECK(clReleaseEvent(ev));
  bad |= resid_check("non-blocking partial read", got, a + 64, 100);
  /* The app writes the parameter between launches, then the second kernel uses both buffers. */
  p = 5;
  CHECK(clEnqueueWriteBuffer(q, dp, CL_TRUE, 0, sizeof p, &p, 0, NULL, NULL));
  CHECK(clEnqueueNDRangeKernel(q, inc, 1, NULL, &global, &local, 0, NULL, NULL));
  for (int i = 0; i < n; ++i) a[i] += p;
  int k = 3;
  CHECK(clSetKernelArg(mix, 2, sizeof k, &k));
  CHECK(clEnqueueNDRangeKernel(q, mix, 1, NULL, &global, &local, 0, NULL, NULL));
  for (int i = 0; i < n; ++i) b[i] = a[i] * k + b[i];
  /* A copy of b's second half over a's first half, a fill of a's last 64 elements, then a launch. */
  CHECK(clEnqueueCopyBuffer(q, db, da, bytes / 2, 0, bytes / 2, 0, NULL, NULL));
  memcpy(a, b + n / 2, bytes / 2);
  int pattern = 42;
  CHECK(
      clEnqueueFillBuffer(q, da, &pattern, sizeof pattern, bytes - 64 * sizeof(int), 64 * sizeof(int), 0, NULL, NULL));
  for (int i = n - 64; i < n; ++i) a[i] = 42;
  CHECK(clEnqueueNDRangeKernel(q, inc, 1, NULL, &global, &local, 0, NULL, NULL));
  for (int i = 0; i < n; ++i) a[i] += p;
  /* A map for writing between launches. */
  int* m = clEnqueueMapBuffer(q, da, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, 16 * sizeof(int), 0, NULL, NULL, &err);
  CHECK(err);
  bad |= resid_check("mapped for writing", m, a, 16);
  for (int i = 0; i < 16; ++i) m[i] = a[i] = -i;
  CHECK(clEnqueueUnmapMemObject(q, da, m, 0, NULL, NULL));
  CHECK(clEnqueueNDRangeKernel(q, inc, 1, NULL, &global, &local, 0, NULL, NULL));
  for (int i = 0; i < n; ++i) a[i] += p;
  /* A kernel dop falls back on: the real launch must see what dop's launches wrote. */
  CHECK(clEnqueueNDRangeKernel(q, gsum, 1, NULL, &global, &local, 0, NULL, NULL));
  for (int g = 0; g < n / G; ++g) {
    want_s[g] = 0;
    for (int j = 0; j < G; ++j) want_s[g] += a[g * G + j];
  }
  CHECK(clEnqueueReadBuffer(q, ds, CL_TRUE, 0, bytes / G, s, 0, NULL, NULL));
  bad |= resid_check("real kernel after dop launches", s, want_s, n / G);
  /* Writes between launches (dop's copies take them where dop ran the launches before): part of a, part of b behind
   * a user event set after the enqueue (the application's buffer takes it, in order), then a blocking write of b's
   * first elements; both kernels run again and both buffers are read. */
  for (int i = n / 4; i < n / 2; ++i) {
    a[i] = i % 77;
    b[i] = i % 55 - 20;
  }
  const size_t quarter = bytes / 4;
  CHECK(clEnqueueWriteBuffer(q, da, CL_FALSE, quarter, quarter, a + n / 4, 0, NULL, NULL));
  cl_event user = clCreateUserEvent(ctx, &err);
  CHECK(err);
  CHECK(clEnqueueWriteBuffer(q, db, CL_FALSE, quarter, quarter, b + n / 4, 1, &user, &ev));
  CHECK(clSetUserEventStatus(user, CL_COMPLETE));
  CHECK(clWaitForEvents(1, &ev));
  CHECK(clReleaseEvent(ev));
  CHECK(clReleaseEvent(user));
  for (int i = 0; i < 16; ++i) b[i] = 1000 + i;
  CHECK(clEnqueueWriteBuffer(q, db, CL_TRUE, 0, 16 * sizeof(int), b, 0, NULL, NULL));
  CHECK(clEnqueueNDRangeKernel(q, inc, 1, NULL, &global, &local, 0, NULL, NULL));
  for (int i = 0; i < n; ++i) a[i] += p;
  CHECK(clEnqueueNDRangeKernel(q, mix, 1, NULL, &global, &local, 0, NULL, NULL));
  for (int i = 0; i < n; ++i) b[i] = a[i] * k + b[i];
  CHECK(clEnqueueReadBuffer(q, db, CL_TRUE, 0, bytes, got, 0, NULL, NULL));
  bad |= resid_check("written between launches: b", got, b, n);
  CHECK(clEnqueueReadBuffer(q, da, CL_TRUE, 0, bytes, got, 0, NULL, NULL));
  bad |= resid_check("written between launches: a", got, a, n);
  /* An out-of-order queue: mix after inc by an event. */
  cl_command_queue ooo = clCreateCommandQueue(ctx, dev, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
  if (err == CL_SUCCESS) {
    cl_event e1, e2;
    CHECK(clEnqueueNDRangeKernel(ooo, inc, 1, NULL, &global, &local, 0, NULL, &e1));
    for (int i = 0; i < n; ++i) a[i] += p;
    CHECK(clEnqueueNDRangeKernel(ooo, mix, 1, NULL, &global, &local, 1, &e1, &e2));
    for (int i = 0; i < n; ++i) b[i] = a[i] * k + b[i];
    CHECK(clEnqueueReadBuffer(ooo, db, CL_TRUE, 0, bytes, got, 1, &e2, NULL));
    bad |= resid_check("out-of-order queue", got, b, n);
    clReleaseEvent(e1);
    clReleaseEvent(e2);
    clReleaseCommandQueue(ooo);
  }
  /* Mapped for reading at the end. */
  m = clEnqueueMapBuffer(q, db, CL_TRUE, CL_MAP_READ, 0, bytes, 0, NULL, NULL, &err);
  CHECK(err);
  bad |= resid_check("mapped for reading", m, b, n);
  CHECK(clEnqueueUnmapMemObject(q, db, m, 0, NULL, NULL));
  CHECK(clEnqueueReadBuffer(q, da, CL_TRUE, 0, bytes, got, 0, NULL, NULL));
  bad |= resid_check("final read", got, a, n);
  clReleaseMemObject(da);
  clReleaseMemObject(db);
  clReleaseMemObject(dp);
  clReleaseMemObject(ds);
  clReleaseKernel(inc);
  clReleaseKernel(mix);
  clReleaseKernel(gsum);
  clReleaseProgram(prog);
  free(a);
  free(b);
  free(got);
  free(s);
  free(want_s);
  return bad;
}

/* Residency where a footprint bounds the writes: slice writes x[base + off + i] for i in [0, m) but each third
 * (which it leaves alone: its footprint's write range holds bytes it does not write), at base 0 and two offsets, then
 * at an offset below the base (a negative scalar, which the interposer cannot tell from a large unsigned one);
 * scatter writes x through loaded indices (its footprint cannot bound x). */
static const char* slice_src =
    "__kernel void slice(__global int* x, __global const int* y, int base, int off) {\n"
    "  int i = get_global_id(0);\n"
    "  if (i % 3 != 0) x[base + off + i] = y[base + off + i] + off;\n"
    "}\n"
    "__kernel void scatter(__global int* x, __global const int* idx) {\n"
    "  int i = get_global_id(0);\n"
    "  x[idx[i]] = -i;\n"
    "}\n";

static int slice(cl_command_queue q, int n) {
  int m = n / 8;
  size_t bytes = (size_t)n * sizeof(int), global = (size_t)m, local = 64;
  int* x = malloc(bytes);
  int* y = malloc(bytes);
  int* idx = malloc((size_t)m * sizeof(int));
  int* got = malloc(bytes);
  for (int i = 0; i < n; ++i) {
    x[i] = 1000 + i;
    y[i] = 3 * i - 7;
  }
  for (int i = 0; i < m; ++i) idx[i] = (int)(((long)i * 7919) % n); /* distinct: 7919 is prime, n a power of 2 */
  cl_program prog = build(slice_src);
  cl_kernel ks = kernel(prog, "slice"), kx = kernel(prog, "scatter");
  cl_mem dx = buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, x);
  cl_mem dy = buffer(CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, y);
  cl_mem di = buffer(CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)m * sizeof(int), idx);
  CHECK(clSetKernelArg(ks, 0, sizeof dx, &dx));
  CHECK(clSetKernelArg(ks, 1, sizeof dy, &dy));
  CHECK(clSetKernelArg(kx, 0, sizeof dx, &dx));
  CHECK(clSetKernelArg(kx, 1, sizeof di, &di));
  int bad = 0;
  int bases[3] = {0, 0, 3 * (n / 4)}, offs[3] = {n / 4, n / 2, -(n / 8)};
  const char* steps[3][2] = {{"untouched part after slice 1", "whole after slice 1"},
                             {"untouched part after slice 2", "whole after slice 2"},
                             {"untouched part after slice 3", "whole after slice 3 (negative offset)"}};
  for (int r = 0; r < 3; ++r) {
    int base = bases[r], off = offs[r];
    CHECK(clSetKernelArg(ks, 2, sizeof base, &base));
    CHECK(clSetKernelArg(ks, 3, sizeof off, &off));
    CHECK(clEnqueueNDRangeKernel(q, ks, 1, NULL, &global, &local, 0, NULL, NULL));
    for (int i = 0; i < m; ++i)
      if (i % 3 != 0) x[base + off + i] = y[base + off + i] + off;
    /* The part before the first slice (untouched), then the whole buffer. */
    memset(got, 0, bytes);
    CHECK(clEnqueueReadBuffer(q, dx, CL_TRUE, 0, (size_t)(n / 4) * sizeof(int), got, 0, NULL, NULL));
    bad |= resid_check(steps[r][0], got, x, n / 4);
    CHECK(clEnqueueReadBuffer(q, dx, CL_TRUE, 0, bytes, got, 0, NULL, NULL));
    bad |= resid_check(steps[r][1], got, x, n);
  }
  CHECK(clEnqueueNDRangeKernel(q, kx, 1, NULL, &global, &local, 0, NULL, NULL));
  for (int i = 0; i < m; ++i) x[idx[i]] = -i;
  CHECK(clEnqueueReadBuffer(q, dx, CL_TRUE, 0, bytes, got, 0, NULL, NULL));
  bad |= resid_check("whole after scatter", got, x, n);
  cl_mem mems[3] = {dx, dy, di};
  for (int i = 0; i < 3; ++i) clReleaseMemObject(mems[i]);
  cl_kernel kernels[2] = {ks, kx};
  for (int i = 0; i < 2; ++i) clReleaseKernel(kernels[i]);
  clReleaseProgram(prog);
  int* host[4] = {x, y, idx, got};
  for (int i = 0; i < 4; ++i) free(host[i]);
  return bad;
}

/* Three launches of a long kernel (x = x * 3 + i, ITERS times per element), each waited for at once: an enqueue that
 * returns before its kernel has run, as a real one does, takes little time and the wait the kernel's. */
/* Launch classes repeated under DOP_CONFIG=auto (tests/test_intercept.cpp, "repeat"): 22 launches of axpb, c read
 * and checked against the host after each. Buffers of 4096 ints (a second b of 8192), launches of 2560 work-items
 * unless said (local 64, n = global - 3). */
static const char* axpb_src =
    "__kernel void axpb(__global const int* a, __global const int* b, __global int* c, int n, int k) {\n"
    "  int i = get_global_id(0);\n"
    "  if (i < n) c[i] = a[i] + k * b[i];\n"
    "}\n";

struct axpb_run {
  cl_command_queue q;
  cl_kernel k;
  cl_mem dc;
  int *a, *b, *b2, *c, *got;
  const int *in0, *in1; /* the host copies of arguments 0 and 1 */
  int n, scale, launch, bad;
};

static void axpb_launch(struct axpb_run* r, size_t global) {
  const size_t local = 64;
  r->n = (int)global - 3;
  CHECK(clSetKernelArg(r->k, 3, sizeof r->n, &r->n));
  CHECK(clSetKernelArg(r->k, 4, sizeof r->scale, &r->scale));
  CHECK(clEnqueueNDRangeKernel(r->q, r->k, 1, NULL, &global, &local, 0, NULL, NULL));
  ++r->launch;
  for (int i = 0; i < r->n; ++i) r->c[i] = r->in0[i] + r->scale * r->in1[i];
  CHECK(clEnqueueReadBuffer(r->q, r->dc, CL_TRUE, 0, 4096 * sizeof(int), r->got, 0, NULL, NULL));
  for (int i = 0; i < 4096; ++i)
    if (r->got[i] != r->c[i]) {
      printf("repeat: FAIL after launch %d: c[%d] = %d, want %d\n", r->launch, i, r->got[i], r->c[i]);
      r->bad = 1;
      return;
    }
}

static int repeat_launches(cl_command_queue q) {
  enum { N = 4096 };
  const size_t bytes = N * sizeof(int);
  struct axpb_run r = {
      q, NULL, NULL, malloc(bytes), malloc(bytes), malloc(2 * bytes), malloc(bytes), malloc(bytes), NULL, NULL, 0,
      1, 0,    0};
  for (int i = 0; i < N; ++i) {
    r.a[i] = i % 97 - 40;
    r.b[i] = i % 13;
    r.c[i] = -1;
  }
  for (int i = 0; i < 2 * N; ++i) r.b2[i] = i % 7 + 100;
  cl_program p = build(axpb_src);
  r.k = kernel(p, "axpb");
  cl_mem da = buffer(CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, r.a);
  cl_mem db = buffer(CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, r.b);
  cl_mem db2 = buffer(CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, 2 * bytes, r.b2);
  r.dc = buffer(CL_MEM_READ_WRITE, bytes, NULL);
  CHECK(clEnqueueWriteBuffer(q, r.dc, CL_TRUE, 0, bytes, r.c, 0, NULL, NULL));
  CHECK(clSetKernelArg(r.k, 0, sizeof da, &da));
  CHECK(clSetKernelArg(r.k, 1, sizeof db, &db));
  CHECK(clSetKernelArg(r.k, 2, sizeof r.dc, &r.dc));
  r.in0 = r.a;
  r.in1 = r.b;
  for (int i = 0; i < 4; ++i) axpb_launch(&r, 2560); /* 1-4: the same launch */
  r.scale = 2;
  axpb_launch(&r, 2560); /* 5: another scale */
  CHECK(clSetKernelArg(r.k, 0, sizeof db, &db));
  CHECK(clSetKernelArg(r.k, 1, sizeof da, &da));
  r.in0 = r.b;
  r.in1 = r.a;
  axpb_launch(&r, 2560); /* 6: the inputs swapped */
  axpb_launch(&r, 2496); /* 7: another shape of the class (work-items in [2048, 4096)) */
  axpb_launch(&r, 1280); /* 8, 9: another power of two */
  axpb_launch(&r, 1280);
  axpb_launch(&r, 2560); /* 10, 11: back */
  axpb_launch(&r, 2560);
  CHECK(clSetKernelArg(r.k, 1, sizeof db2, &db2));
  r.in1 = r.b2;
  axpb_launch(&r, 2560); /* 12, 13: a bigger buffer */
  axpb_launch(&r, 2560);
  CHECK(clSetKernelArg(r.k, 1, sizeof da, &da));
  r.in1 = r.a;
  axpb_launch(&r, 2560); /* 14, 15: back */
  axpb_launch(&r, 2560);
  for (int i = 0; i < N; ++i) r.c[i] = -2;
  CHECK(clEnqueueWriteBuffer(q, r.dc, CL_TRUE, 0, bytes, r.c, 0, NULL, NULL));
  axpb_launch(&r, 2560); /* 16, 17: after a write of the output (a third of the bytes) */
  axpb_launch(&r, 2560);
  for (int i = 0; i < N; ++i) {
    r.a[i] = i % 31;
    r.b[i] = i % 5 - 2;
  }
  CHECK(clEnqueueWriteBuffer(q, da, CL_TRUE, 0, bytes, r.a, 0, NULL, NULL));
  CHECK(clEnqueueWriteBuffer(q, db, CL_TRUE, 0, bytes, r.b, 0, NULL, NULL));
  axpb_launch(&r, 2560); /* 18, 19: after writes of both inputs (fed from the host) */
  axpb_launch(&r, 2560);
  r.scale = 3;
  axpb_launch(&r, 4096); /* 20: a large launch */
  r.scale = 4;
  axpb_launch(&r, 2560); /* 21, 22: small ones after it */
  axpb_launch(&r, 2560);
  clReleaseMemObject(da);
  clReleaseMemObject(db);
  clReleaseMemObject(db2);
  clReleaseMemObject(r.dc);
  clReleaseKernel(r.k);
  clReleaseProgram(p);
  free(r.a);
  free(r.b);
  free(r.b2);
  free(r.c);
  free(r.got);
  return r.bad;
}

static const char* spin_src =
    "__kernel void spin(__global int* x, int iters) {\n"
    "  int i = get_global_id(0); int v = x[i];\n"
    "  for (int k = 0; k < iters; ++k) v = v * 3 + i;\n"
    "  x[i] = v; }\n";

static int async_launches(cl_command_queue q, int n, int iters) {
  cl_int err;
  size_t bytes = (size_t)n * sizeof(int), global = (size_t)n, local = 64;
  int* x = malloc(bytes);
  int* got = malloc(bytes);
  for (int i = 0; i < n; ++i) x[i] = i % 17;
  cl_program prog = build(spin_src);
  cl_kernel k = clCreateKernel(prog, "spin", &err);
  CHECK(err);
  cl_mem dx = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, x, &err);
  CHECK(err);
  CHECK(clSetKernelArg(k, 0, sizeof dx, &dx));
  CHECK(clSetKernelArg(k, 1, sizeof iters, &iters));
  for (int r = 0; r < 3; ++r) {
    cl_event ev;
    double t0 = now_ms();
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, &ev));
    double t1 = now_ms();
    CHECK(clWaitForEvents(1, &ev));
    printf("async: launch %d enqueue_ms=%.3f wait_ms=%.3f\n", r, t1 - t0, now_ms() - t1);
    cl_int status = -1;
    CHECK(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL));
    if (status != CL_COMPLETE) {
      printf("async: FAIL event status %d after waiting\n", status);
      return 1;
    }
    CHECK(clReleaseEvent(ev));
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < iters; ++j) x[i] = (int)((unsigned)x[i] * 3u + (unsigned)i);
  }
  CHECK(clEnqueueReadBuffer(q, dx, CL_TRUE, 0, bytes, got, 0, NULL, NULL));
  int bad = resid_check("after three launches", got, x, n);
  clReleaseMemObject(dx);
  clReleaseKernel(k);
  clReleaseProgram(prog);
  free(x);
  free(got);
  return bad;
}

/* One launch of `k` on `q` and what became of it: CL_SUCCESS, or the first error its enqueue, its event or (`read`)
 * the blocking read of `mem` into `got` reported. */
static cl_int launch_and_see(cl_command_queue q, cl_kernel k, size_t global, cl_mem mem, size_t bytes, int* got,
                             int read) {
  size_t local = 64;
  cl_event ev = NULL;
  cl_int err = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, &ev);
  if (err != CL_SUCCESS) return err;
  err = clWaitForEvents(1, &ev);
  cl_int status = CL_COMPLETE;
  if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL) == CL_SUCCESS && status < 0 &&
      err == CL_SUCCESS)
    err = status;
  clReleaseEvent(ev);
  if (err == CL_SUCCESS && read) err = clEnqueueReadBuffer(q, mem, CL_TRUE, 0, bytes, got, 0, NULL, NULL);
  return err;
}

static int fail_launches(cl_command_queue* q, int launches, int read) {
  const int n = 64 * 1024;
  cl_int err;
  size_t bytes = (size_t)n * sizeof(int);
  int* a = malloc(bytes);
  int* got = malloc(bytes);
  for (int i = 0; i < n; ++i) a[i] = i % 1000 - 300;
  int p = 7;
  cl_program prog = build(resid_src);
  cl_kernel inc = kernel(prog, "inc");
  cl_mem da = buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, a);
  cl_mem dp = buffer(CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof p, &p);
  CHECK(clSetKernelArg(inc, 0, sizeof da, &da));
  CHECK(clSetKernelArg(inc, 1, sizeof dp, &dp));
  int bad = 0, errors = 0;
  for (int r = 0; r < launches && !bad; ++r) {
    err = launch_and_see(*q, inc, (size_t)n, da, bytes, got, read);
    if (err != CL_SUCCESS) {
      printf("fail: launch %d reported error %d\n", r, err);
      ++errors;
      if (clEnqueueWriteBuffer(*q, da, CL_TRUE, 0, bytes, a, 0, NULL, NULL) != CL_SUCCESS) {
        printf("fail: the queue is broken after the error: a new one\n");
        clReleaseCommandQueue(*q);
        *q = clCreateCommandQueue(ctx, dev, 0, &err);
        CHECK(err);
        CHECK(clEnqueueWriteBuffer(*q, da, CL_TRUE, 0, bytes, a, 0, NULL, NULL));
      }
      continue;
    }
    for (int i = 0; i < n; ++i) a[i] += p;
    if (read) bad |= resid_check("read after a launch", got, a, n);
  }
  CHECK(clEnqueueReadBuffer(*q, da, CL_TRUE, 0, bytes, got, 0, NULL, NULL));
  bad |= resid_check("final read", got, a, n);
  printf("fail: %s errors=%d\n", bad ? "FAIL" : "OK", errors);
  clReleaseMemObject(da);
  clReleaseMemObject(dp);
  clReleaseKernel(inc);
  clReleaseProgram(prog);
  free(a);
  free(got);
  return bad;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "vecadd";
  if (strcmp(mode, "source") == 0) { /* prints a kernel's source, as the app builds it (for dop bundle) */
    const char* which = argc > 2 ? argv[2] : "";
    const char* src = strcmp(which, "vecadd") == 0   ? vecadd_src
                      : strcmp(which, "poly") == 0   ? poly_src
                      : strcmp(which, "slice") == 0  ? slice_src
                      : strcmp(which, "rowsum") == 0 ? rowsum_src
                                                     : NULL;
    if (!src) return 2;
    fputs(src, stdout);
    return 0;
  }
  cl_platform_id platform;
  cl_uint n_platforms = 0;
  CHECK(clGetPlatformIDs(1, &platform, &n_platforms));
  CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
  cl_int err;
  ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  CHECK(err);
  cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
  CHECK(err);
  int bad = 0;
  if (strcmp(mode, "vecadd") == 0) {
    int n = argc > 2 ? atoi(argv[2]) : (1 << 20);
    int repeat = argc > 3 ? atoi(argv[3]) : 2;
    double ms = 0;
    bad = vecadd(q, n, repeat, &ms);
    printf("vecadd: %s n=%d repeat=%d time_ms=%.3f\n", bad ? "FAIL" : "OK", n, repeat, ms);
  } else if (strcmp(mode, "build") == 0) {
    struct vecadd_data v = vecadd_make(q, 1024);
    vecadd_free(&v);
    printf("build: OK\n");
  } else if (strcmp(mode, "shapes") == 0) {
    int n = argc > 2 ? atoi(argv[2]) : 69632;
    int repeat = argc > 3 ? atoi(argv[3]) : 8;
    if (n < 128 || n % 64 != 0 || repeat < 1 || 64 * (repeat - 1) >= n) {
      fprintf(stderr, "cl_app: shapes needs N a multiple of 64 (>= 128) and 1 <= REPEAT <= N / 64\n");
      return 2;
    }
    bad = shapes(q, n, repeat);
    printf("shapes: %s n=%d repeat=%d\n", bad ? "FAIL" : "OK", n, repeat);
  } else if (strcmp(mode, "rw2d") == 0) {
    bad = rw2d(q);
    printf("rw2d: %s\n", bad ? "FAIL" : "OK");
  } else if (strcmp(mode, "local") == 0) {
    bad = local_sum(q);
    printf("local: %s\n", bad ? "FAIL" : "OK");
  } else if (strcmp(mode, "nullbuf") == 0) {
    bad = nullbuf(q);
    printf("nullbuf: %s\n", bad ? "FAIL" : "OK");
  } else if (strcmp(mode, "poly") == 0) {
    int n = argc > 2 ? atoi(argv[2]) : (1 << 18);
    int iters = argc > 3 ? atoi(argv[3]) : 400;
    bad = poly(q, n, iters);
    printf("poly: %s n=%d iters=%d\n", bad ? "FAIL" : "OK", n, iters);
  } else if (strcmp(mode, "rowsum") == 0) {
    int ms[16], count = 0;
    for (int i = 2; i < argc && count < 16; ++i) ms[count++] = atoi(argv[i]);
    for (int i = 0; i < count; ++i)
      if (ms[i] < 1 || ms[i] > 64) {
        fprintf(stderr, "cl_app: rowsum needs row lengths in [1, 64]\n");
        return 2;
      }
    bad = rowsum(q, ms, count);
    printf("rowsum: %s launches=%d\n", bad ? "FAIL" : "OK", count);
  } else if (strcmp(mode, "resid") == 0) {
    int n = argc > 2 ? atoi(argv[2]) : 64 * 1024;
    bad = resid(q, n);
    printf("resid: %s n=%d\n", bad ? "FAIL" : "OK", n);
  } else if (strcmp(mode, "contexts") == 0) {
    double ms = 0;
    cl_context first = ctx, second = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q2 = clCreateCommandQueue(second, dev, 0, &err);
    CHECK(err);
    bad = vecadd(q, 65536, 2, &ms);
    ctx = second; /* build() and buffer() make their objects in ctx */
    bad |= vecadd(q2, 65536, 2, &ms);
    bad |= resid(q2, 65536);
    ctx = first;
    bad |= vecadd(q, 65536, 2, &ms);
    clReleaseCommandQueue(q2);
    clReleaseContext(second);
    printf("contexts: %s\n", bad ? "FAIL" : "OK");
  } else if (strcmp(mode, "slice") == 0) {
    int n = argc > 2 ? atoi(argv[2]) : 64 * 1024;
    if (n < 1024 || (n & (n - 1)) != 0) {
      fprintf(stderr, "cl_app: slice needs N a power of two >= 1024\n");
      return 2;
    }
    bad = slice(q, n);
    printf("slice: %s n=%d\n", bad ? "FAIL" : "OK", n);
  } else if (strcmp(mode, "async") == 0) {
    int n = argc > 2 ? atoi(argv[2]) : 64 * 1024;
    int iters = argc > 3 ? atoi(argv[3]) : 20000;
    bad = async_launches(q, n, iters);
    printf("async: %s n=%d iters=%d\n", bad ? "FAIL" : "OK", n, iters);
  } else if (strcmp(mode, "fail") == 0) {
    int launches = argc > 2 ? atoi(argv[2]) : 4;
    const char* how = argc > 3 ? argv[3] : "wait";
    if (launches < 1 || (strcmp(how, "wait") != 0 && strcmp(how, "read") != 0)) {
      fprintf(stderr, "cl_app: fail needs LAUNCHES >= 1 and wait or read\n");
      return 2;
    }
    bad = fail_launches(&q, launches, strcmp(how, "read") == 0);
  } else if (strcmp(mode, "repeat") == 0) {
    bad = repeat_launches(q);
    printf("repeat: %s\n", bad ? "FAIL" : "OK");
  } else if (strcmp(mode, "threads") == 0) {
    pthread_t t[2];
    struct thread_job jobs[2] = {{1 << 18, 0, 0}, {(1 << 18) + 64 * 5, 0, 0}};
    for (int i = 0; i < 2; ++i) pthread_create(&t[i], NULL, thread_main, &jobs[i]);
    for (int i = 0; i < 2; ++i) pthread_join(t[i], NULL);
    bad = jobs[0].bad + jobs[1].bad;
    printf("threads: %s\n", bad ? "FAIL" : "OK");
  } else {
    fprintf(stderr, "cl_app: unknown mode %s\n", mode);
    return 2;
  }
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  return bad ? 1 : 0;
}
