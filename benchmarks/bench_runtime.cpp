// Host-layer costs on the selected CPU device: an empty kernel's launch+finish latency and a sub-device creation.
#include <benchmark/benchmark.h>

#include "dop/cl.hpp"
#include "dop/runtime.hpp"

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

// A GPU chunk's byte ranges on the launch path (copy mode with a footprint): GEMM's footprint as the analysis
// gives it, evaluated from scratch (footprint_ranges) and by the launch's FootprintEvaluator.
static const char* kGemmFootprint = R"J({"footprint": {"args": {
  "A": {"whole": false, "accesses": [{"write": false, "bytes": 4, "terms": [[4, "get_global_id(1)", "nk"], [4, "iter0"]]}]},
  "B": {"whole": false, "accesses": [{"write": false, "bytes": 4, "terms": [[4, "get_global_id(0)"], [4, "nj", "iter0"]]}]},
  "C": {"whole": false, "accesses": [{"write": false, "bytes": 4, "terms": [[4, "get_global_id(0)"], [4, "get_global_id(1)", "nj"]]},
                                     {"write": true, "bytes": 4, "terms": [[4, "get_global_id(0)"], [4, "get_global_id(1)", "nj"]]}]}},
  "ranges": {"get_global_id(0)": ["gid_lo_0", "gid_hi_0"], "get_global_id(1)": ["gid_lo_1", "gid_hi_1"],
             "iter0": ["0", "(nk)-1"], "nj": ["nj", "nj"], "nk": ["nk", "nk"]}}})J";

static dop::Spec gemm_spec() {
  dop::Spec s;
  s.name = s.kernel_name = "gemm";
  s.global = {512, 512};
  s.local = {16, 16};
  for (const char* n : {"A", "B", "C"})
    s.args.push_back({n, dop::ArgKind::buffer, dop::ElemType::f32, 512 * 512, 0, dop::Access::read_write, false, {}});
  for (const char* n : {"ni", "nj", "nk"})
    s.args.push_back({n, dop::ArgKind::scalar, dop::ElemType::i32, 0, 512, dop::Access::read, false, {}});
  return s;
}

static void BM_FootprintRanges(benchmark::State& state) {
  const dop::Spec s = gemm_spec();
  const auto args = dop::make_args(s);
  const dop::Footprint fp = dop::parse_footprint(kGemmFootprint, "gemm");
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(dop::footprint_ranges(fp, s, args, s.local, i % 400, i % 400 + 16));
    ++i;
  }
}
BENCHMARK(BM_FootprintRanges)->Unit(benchmark::kMicrosecond);

static void BM_FootprintEvaluator(benchmark::State& state) {
  const dop::Spec s = gemm_spec();
  const auto args = dop::make_args(s);
  const dop::Footprint fp = dop::parse_footprint(kGemmFootprint, "gemm");
  const dop::FootprintEvaluator ev(fp, s, args, s.local);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(ev(i % 400, i % 400 + 16));
    ++i;
  }
}
BENCHMARK(BM_FootprintEvaluator)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
