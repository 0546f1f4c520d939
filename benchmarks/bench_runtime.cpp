// Host-layer costs on the selected CPU device: an empty kernel's launch+finish latency and a sub-device creation.
#include <benchmark/benchmark.h>

#include "dop/cl.hpp"

using namespace dop;

static void BM_LaunchLatency(benchmark::State& state) {
  const auto devs = cl::discover();
  if (devs.empty()) {
    state.SkipWithError("no OpenCL device");
    return;
  }
  const auto& d = devs[0];
  auto ctx = cl::create_context({d.device});
  auto q = cl::create_queue(ctx, d.device, false);
  auto prog = cl::build_program(ctx, {d.device}, "__kernel void nop(__global int* x) { }");
  auto k = cl::create_kernel(prog, "nop");
  auto buf = cl::create_buffer(ctx, CL_MEM_READ_WRITE, 64);
  cl_mem m = buf.get();
  cl::set_arg(k, 0, m);
  const size_t global = size_t(state.range(0));
  for (auto _ : state) {
    cl::enqueue_ndrange(q, k, {global}, {64});
    cl::finish(q);
  }
  state.SetLabel(d.id);
}
BENCHMARK(BM_LaunchLatency)->Arg(64)->Arg(64 * 1024)->Unit(benchmark::kMicrosecond);

static void BM_SubDevice(benchmark::State& state) {
  const auto devs = cl::discover();
  if (devs.empty() || !devs[0].fission_by_counts) {
    state.SkipWithError("no device with fission");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(cl::create_sub_device(devs[0], 1));
}
BENCHMARK(BM_SubDevice)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
