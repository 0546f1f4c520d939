// What an application's clEnqueueNDRangeKernel costs the calling thread: run it alone and under the interposer
// (benchmarks/intercept_overhead.sh runs both and prints the difference). The launch is one the interposer routes
// natively when DOP_CONFIG gives the queue's device in whole (`1,0` for a CPU device, `0,1` for a GPU): the added
// cost is the decision and the residency bookkeeping. Six launch patterns: the same launch again
// (BM_EnqueueNDRange), a scalar argument that changes at every launch, as a step counter does (BM_EnqueueNDRangeArgs,
// its clSetKernelArg timed too), an NDRange that shrinks at every launch within one power of two, as a
// factorisation's does (BM_EnqueueNDRangeShapes), tiny's step: two buffers that swap roles and a step counter,
// three clSetKernelArg a launch (BM_EnqueueNDRangePingPong), two kernels that alternate, each launch after two
// clSetKernelArg of its own, as lu's and stencil's steps (BM_EnqueueNDRangeTwoKernels), and a launch class new at every
// launch, as lu's are when its NDRange meets another power of two (BM_EnqueueNDRangeNewClass). Only those calls are
// timed; the queue is finished (not timed) every 64 launches. BENCH_ENQUEUE_DEVICE=N takes the first platform's N-th
// device (default 0); BENCH_ENQUEUE_GPU=1 the first GPU of any platform instead, as applications that ask for a GPU
// by type do. The device's name goes to stderr.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

const char* kSource =
    "__kernel void axpy(__global float* y, __global const float* x, float a) {\n"
    "  size_t i = get_global_id(0); y[i] += a * x[i]; }\n";

struct App {
  cl_context ctx = nullptr;
  cl_command_queue q = nullptr;
  cl_program p = nullptr;
  cl_kernel k = nullptr;
  cl_kernel k2 = nullptr;  // a second kernel of the program, for the pattern of two kernels that alternate
  cl_mem x = nullptr, y = nullptr, x2 = nullptr;  // x2: y's twin (same size and flags), for the ping-pong
  App() {
    cl_platform_id platform;
    cl_device_id dev;
    cl_device_id devs[16];
    cl_uint n = 0;
    cl_int err = CL_SUCCESS;
    const char* gpu = std::getenv("BENCH_ENQUEUE_GPU");
    if (gpu && std::string(gpu) == "1") {
      cl_platform_id platforms[16];
      cl_uint np = 0;
      err = clGetPlatformIDs(16, platforms, &np);
      for (cl_uint j = 0; err == CL_SUCCESS && j < np && n == 0; ++j)
        if (clGetDeviceIDs(platforms[j], CL_DEVICE_TYPE_GPU, 16, devs, &n) != CL_SUCCESS) n = 0;
      if (n == 0) fail("BENCH_ENQUEUE_GPU=1: no GPU device", CL_DEVICE_NOT_FOUND);
      dev = devs[0];
    } else {
      err = clGetPlatformIDs(1, &platform, nullptr);
      if (err == CL_SUCCESS) err = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 16, devs, &n);
      if (err != CL_SUCCESS) fail("no OpenCL device", err);
      const char* which = std::getenv("BENCH_ENQUEUE_DEVICE");
      const cl_uint i = which ? cl_uint(std::strtoul(which, nullptr, 10)) : 0;
      if (i >= n) fail("BENCH_ENQUEUE_DEVICE: no such device", CL_DEVICE_NOT_FOUND);
      dev = devs[i];
    }
    char name[256] = {};
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name - 1, name, nullptr);
    std::fprintf(stderr, "bench_enqueue: device %s\n", name);
    ctx = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err);
    q = clCreateCommandQueue(ctx, dev, 0, &err);
    p = clCreateProgramWithSource(ctx, 1, &kSource, nullptr, &err);
    if ((err = clBuildProgram(p, 1, &dev, "", nullptr, nullptr)) != CL_SUCCESS) fail("build", err);
    k = clCreateKernel(p, "axpy", &err);
    k2 = clCreateKernel(p, "axpy", &err);
    x = clCreateBuffer(ctx, CL_MEM_READ_ONLY, 4096 * sizeof(float), nullptr, &err);
    y = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096 * sizeof(float), nullptr, &err);
    x2 = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096 * sizeof(float), nullptr, &err);
    const float a = 0.5f;
    clSetKernelArg(k, 0, sizeof y, &y);
    clSetKernelArg(k, 1, sizeof x, &x);
    clSetKernelArg(k, 2, sizeof a, &a);
    for (cl_kernel kk : {k, k2}) {
      clSetKernelArg(kk, 0, sizeof y, &y);
      clSetKernelArg(kk, 1, sizeof x, &x);
      clSetKernelArg(kk, 2, sizeof a, &a);
    }
  }
  static void fail(const char* what, cl_int err) {
    std::fprintf(stderr, "bench_enqueue: %s: %d\n", what, err);
    std::exit(1);
  }
};

App& app() {
  static App a;
  return a;
}

// Times `launch(n)` (n: the launch's index) over the benchmark's iterations, the queue finished untimed every 64.
template <typename Launch>
void run_launches(benchmark::State& state, Launch launch) {
  int n = 0;
  for (auto _ : state) {
    if (launch(n) != CL_SUCCESS) state.SkipWithError("clEnqueueNDRangeKernel failed");
    if (++n % 64 == 0) {
      state.PauseTiming();
      clFinish(app().q);
      state.ResumeTiming();
    }
  }
  clFinish(app().q);
}

const size_t kLocal = 64;

void BM_EnqueueNDRange(benchmark::State& state) {
  const size_t global = 4096;
  run_launches(state, [&](int) {
    return clEnqueueNDRangeKernel(app().q, app().k, 1, nullptr, &global, &kLocal, 0, nullptr, nullptr);
  });
}

void BM_EnqueueNDRangeArgs(benchmark::State& state) {
  const size_t global = 4096;
  run_launches(state, [&](int n) {
    const float a = 1.0f / float(n + 1);
    cl_int err = clSetKernelArg(app().k, 2, sizeof a, &a);
    if (err == CL_SUCCESS)
      err = clEnqueueNDRangeKernel(app().q, app().k, 1, nullptr, &global, &kLocal, 0, nullptr, nullptr);
    return err;
  });
  const float a = 0.5f;
  clSetKernelArg(app().k, 2, sizeof a, &a);
}

// As tiny's step (benchmarks/apps/tiny.c): two buffers that swap roles and a step counter, three clSetKernelArg and
// the launch, each timed.
void BM_EnqueueNDRangePingPong(benchmark::State& state) {
  const size_t global = 4096;
  run_launches(state, [&](int n) {
    const float a = 1.0f / float(n + 1);
    cl_mem dst = n % 2 ? app().x2 : app().y, src = n % 2 ? app().y : app().x2;
    cl_int err = clSetKernelArg(app().k, 0, sizeof dst, &dst);
    if (err == CL_SUCCESS) err = clSetKernelArg(app().k, 1, sizeof src, &src);
    if (err == CL_SUCCESS) err = clSetKernelArg(app().k, 2, sizeof a, &a);
    if (err == CL_SUCCESS)
      err = clEnqueueNDRangeKernel(app().q, app().k, 1, nullptr, &global, &kLocal, 0, nullptr, nullptr);
    return err;
  });
  const float a = 0.5f;
  clSetKernelArg(app().k, 0, sizeof app().y, &app().y);
  clSetKernelArg(app().k, 1, sizeof app().x, &app().x);
  clSetKernelArg(app().k, 2, sizeof a, &a);
}

// As lu's and stencil's steps (benchmarks/apps/): two kernels that alternate, each launch after its kernel's
// clSetKernelArg of a step counter and of the buffer it writes (two of one size and flags, swapping every step).
void BM_EnqueueNDRangeTwoKernels(benchmark::State& state) {
  const size_t global = 4096;
  run_launches(state, [&](int n) {
    const cl_kernel k = n % 2 ? app().k2 : app().k;
    const cl_int step = n / 2;
    const cl_mem dst = step % 2 ? app().x2 : app().y;
    cl_int err = clSetKernelArg(k, 2, sizeof step, &step);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 0, sizeof dst, &dst);
    if (err == CL_SUCCESS) err = clEnqueueNDRangeKernel(app().q, k, 1, nullptr, &global, &kLocal, 0, nullptr, nullptr);
    return err;
  });
  const float a = 0.5f;
  for (cl_kernel k : {app().k, app().k2}) {
    clSetKernelArg(k, 0, sizeof app().y, &app().y);
    clSetKernelArg(k, 2, sizeof a, &a);
  }
}

void BM_EnqueueNDRangeShapes(benchmark::State& state) {
  run_launches(state, [&](int n) {
    const size_t global = 4096 - kLocal * size_t(1 + n % 31);  // 4032 down to 2112: work-items within [2048, 4096)
    return clEnqueueNDRangeKernel(app().q, app().k, 1, nullptr, &global, &kLocal, 0, nullptr, nullptr);
  });
}

// Every launch of a launch class the process has not launched before, whose decision the interposer makes in full
// (docs/intercept.md, "Overhead"), as lu's launches are each time its shrinking NDRange meets another power of two.
// Before each launch (untimed), argument 1 gets a buffer of a size no launch has had, which makes the class new as
// another power of two of the work-items does, with no end to them. Fewer launches than the other patterns: each
// leaves a class behind in the interposer (thousands per process, where lu leaves a few dozen).
void BM_EnqueueNDRangeNewClass(benchmark::State& state) {
  const size_t global = 4096;
  static size_t bytes = 4096 * sizeof(float);  // grows across the repetitions: each size is new to the process
  cl_mem x = nullptr;
  int n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    if (x) clReleaseMemObject(x);
    bytes += sizeof(float);
    cl_int err = CL_SUCCESS;
    x = clCreateBuffer(app().ctx, CL_MEM_READ_ONLY, bytes, nullptr, &err);
    if (err == CL_SUCCESS) err = clSetKernelArg(app().k, 1, sizeof x, &x);
    if (++n % 64 == 0) clFinish(app().q);
    state.ResumeTiming();
    if (err == CL_SUCCESS)
      err = clEnqueueNDRangeKernel(app().q, app().k, 1, nullptr, &global, &kLocal, 0, nullptr, nullptr);
    if (err != CL_SUCCESS) state.SkipWithError("clEnqueueNDRangeKernel failed");
  }
  clFinish(app().q);
  clSetKernelArg(app().k, 1, sizeof app().x, &app().x);
  if (x) clReleaseMemObject(x);
}

BENCHMARK(BM_EnqueueNDRange)->Iterations(4096)->Repetitions(9)->ReportAggregatesOnly(true);
BENCHMARK(BM_EnqueueNDRangeArgs)->Iterations(4096)->Repetitions(9)->ReportAggregatesOnly(true);
BENCHMARK(BM_EnqueueNDRangePingPong)->Iterations(4096)->Repetitions(9)->ReportAggregatesOnly(true);
BENCHMARK(BM_EnqueueNDRangeTwoKernels)->Iterations(4096)->Repetitions(9)->ReportAggregatesOnly(true);
BENCHMARK(BM_EnqueueNDRangeShapes)->Iterations(4096)->Repetitions(9)->ReportAggregatesOnly(true);
BENCHMARK(BM_EnqueueNDRangeNewClass)->Iterations(512)->Repetitions(9)->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
