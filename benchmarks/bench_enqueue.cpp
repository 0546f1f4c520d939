// What an application's clEnqueueNDRangeKernel costs the calling thread: run it alone and under the interposer
// (benchmarks/intercept_overhead.sh runs both and prints the difference). The launch is one the interposer routes
// natively when DOP_CONFIG gives the queue's device in whole (`1,0` for a CPU device, `0,1` for a GPU): the added
// cost is the decision and the residency bookkeeping. Only the enqueue call is timed; the queue is finished (not
// timed) every 64 launches.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

namespace {

const char* kSource =
    "__kernel void axpy(__global float* y, __global const float* x, float a) {\n"
    "  size_t i = get_global_id(0); y[i] += a * x[i]; }\n";

struct App {
  cl_context ctx = nullptr;
  cl_command_queue q = nullptr;
  cl_program p = nullptr;
  cl_kernel k = nullptr;
  cl_mem x = nullptr, y = nullptr;
  App() {
    cl_platform_id platform;
    cl_device_id dev;
    cl_int err = clGetPlatformIDs(1, &platform, nullptr);
    if (err == CL_SUCCESS) err = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &dev, nullptr);
    if (err != CL_SUCCESS) fail("no OpenCL device", err);
    ctx = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err);
    q = clCreateCommandQueue(ctx, dev, 0, &err);
    p = clCreateProgramWithSource(ctx, 1, &kSource, nullptr, &err);
    if ((err = clBuildProgram(p, 1, &dev, "", nullptr, nullptr)) != CL_SUCCESS) fail("build", err);
    k = clCreateKernel(p, "axpy", &err);
    x = clCreateBuffer(ctx, CL_MEM_READ_ONLY, 4096 * sizeof(float), nullptr, &err);
    y = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096 * sizeof(float), nullptr, &err);
    const float a = 0.5f;
    clSetKernelArg(k, 0, sizeof y, &y);
    clSetKernelArg(k, 1, sizeof x, &x);
    clSetKernelArg(k, 2, sizeof a, &a);
  }
  static void fail(const char* what, cl_int err) {
    std::fprintf(stderr, "bench_enqueue: %s: %d\n", what, err);
    std::exit(1);
  }
};

void BM_EnqueueNDRange(benchmark::State& state) {
  static App app;
  const size_t global = 4096, local = 64;
  int n = 0;
  for (auto _ : state) {
    if (clEnqueueNDRangeKernel(app.q, app.k, 1, nullptr, &global, &local, 0, nullptr, nullptr) != CL_SUCCESS)
      state.SkipWithError("clEnqueueNDRangeKernel failed");
    if (++n % 64 == 0) {
      state.PauseTiming();
      clFinish(app.q);
      state.ResumeTiming();
    }
  }
  clFinish(app.q);
}
BENCHMARK(BM_EnqueueNDRange)->Iterations(4096)->Repetitions(9)->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
