// Host-layer costs on the selected CPU device: an empty kernel's launch+finish latency and a sub-device creation;
// a chunk's footprint ranges; a kernel's first launch on a fresh executor (compiled, or from the program cache on
// disk as a second process finds it) and a launch after a rebind to a new shape; a chain of launches with plain
// and with resident buffers (dop/device_data.hpp).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>

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

// First launches of saxpy at 1,0 on the selected devices (POCL_DEVICES="pthread pthread" for two).
static const char* kSaxpy = R"CL(
__kernel void saxpy(__global float* y, __global const float* x, float a, int n) {
  int i = get_global_id(0);
  if (i >= n) return;
  y[i] = a * x[i] + y[i];
}
)CL";

static dop::Spec saxpy_spec(size_t n) {
  dop::Spec s;
  s.name = s.kernel_name = "saxpy";
  s.global = {(n + 63) / 64 * 64};
  s.local = {64};
  s.args = {{"y", dop::ArgKind::buffer, dop::ElemType::f32, n, 0, dop::Access::read_write, true, {}},
            {"x", dop::ArgKind::buffer, dop::ElemType::f32, n, 0, dop::Access::read, false, {}},
            {"a", dop::ArgKind::scalar, dop::ElemType::f32, 0, 1.5, dop::Access::read, false, {}},
            {"n", dop::ArgKind::scalar, dop::ElemType::i32, 0, double(n), dop::Access::read, false, {}}};
  return s;
}

// A cache folder of this benchmark's own (removed at exit), with the entries of one primed executor's build.
static std::filesystem::path primed_cache(const cl::Selection& sel, const dop::Spec& s) {
  static const std::filesystem::path dir = [] {
    char tmpl[] = "/tmp/dop-bench-cache-XXXXXX";
    std::filesystem::path p = mkdtemp(tmpl);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    });
    return p;
  }();
  setenv("DOP_CACHE_DIR", (dir / "primed").c_str(), 1);
  unsetenv("DOP_CACHE");
  dop::Executor ex(s, kSaxpy, sel);
  auto args = dop::make_args(s);
  ex.launch(args, dop::Config{1, 0});
  return dir;
}

// Arg 0: the cache off (every first launch compiles the source; PoCL's own kernel cache still serves its part: set
// POCL_KERNEL_CACHE=0 for a compiler run from scratch). Arg 1: a fresh cache folder holding the entries another
// process stored, as a second process of the same application finds them.
static void BM_FirstLaunch(benchmark::State& state) {
  const auto sel = cl::select_devices(cl::discover());
  if (!sel.cpu) {
    state.SkipWithError("no CPU device");
    return;
  }
  const dop::Spec s = saxpy_spec(4096);
  const bool cached = state.range(0) == 1;
  const std::filesystem::path dir = primed_cache(sel, s);
  if (!cached) setenv("DOP_CACHE", "0", 1);
  static int run = 0;  // across repetitions: each iteration gets a folder of its own
  int built = 0, from_cache = 0;
  for (auto _ : state) {
    state.PauseTiming();
    if (cached) {  // a folder of its own per iteration: the process's memory of the cache does not serve it
      const auto fresh = dir / std::to_string(++run);
      std::filesystem::copy(dir / "primed", fresh, std::filesystem::copy_options::recursive);
      setenv("DOP_CACHE_DIR", fresh.c_str(), 1);
    }
    auto args = dop::make_args(s);
    state.ResumeTiming();
    dop::Executor ex(s, kSaxpy, sel);
    const auto r = ex.launch(args, dop::Config{1, 0});
    built += r.programs_built;
    from_cache += r.programs_from_cache;
  }
  unsetenv("DOP_CACHE");
  state.counters["built"] = benchmark::Counter(built, benchmark::Counter::kAvgIterations);
  state.counters["from_cache"] = benchmark::Counter(from_cache, benchmark::Counter::kAvgIterations);
  state.SetLabel(cached ? "disk cache warm" : "cache off");
}
BENCHMARK(BM_FirstLaunch)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(10);

// One executor, rebound before every launch to a 1D shape it has not run (Arg 1) or to the same shape (Arg 0).
static void BM_RebindLaunch(benchmark::State& state) {
  const auto sel = cl::select_devices(cl::discover());
  if (!sel.cpu) {
    state.SkipWithError("no CPU device");
    return;
  }
  primed_cache(sel, saxpy_spec(4096));
  dop::Executor ex(saxpy_spec(4096), kSaxpy, sel);
  auto first = dop::make_args(saxpy_spec(4096));
  ex.launch(first, dop::Config{1, 0});
  size_t n = 4096;
  for (auto _ : state) {
    state.PauseTiming();
    if (state.range(0) == 1) n += 64;
    const dop::Spec s = saxpy_spec(n);
    auto args = dop::make_args(s);
    state.ResumeTiming();
    ex.rebind(s);
    benchmark::DoNotOptimize(ex.launch(args, dop::Config{1, 0}));
  }
  state.SetLabel(state.range(0) == 1 ? "new shape" : "same shape");
}
BENCHMARK(BM_RebindLaunch)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// A chain of 16 launches over the same buffers (saxpy: y += a * x, 4 Mi floats each, copy mode with saxpy's
// footprint), the result read at the end: plain launches (every launch copies what the GPU needs and reads its
// results back) against resident buffers (ExecutorOptions::data: only what a device lacks moves; DeviceData::sync
// at the end). Arg 0: the configuration (0: 1,0; 1: 0,1; 2: 0.5,0.5); arg 1: resident. Counters: bytes moved per
// launch (to and from the GPU, sync included) and per chain.
static const char* kSaxpyFootprint = R"J({"footprint": {"args": {
  "y": {"whole": false, "accesses": [{"write": false, "bytes": 4, "terms": [[4, "get_global_id(0)"]]},
                                     {"write": true, "bytes": 4, "terms": [[4, "get_global_id(0)"]]}]},
  "x": {"whole": false, "accesses": [{"write": false, "bytes": 4, "terms": [[4, "get_global_id(0)"]]}]}},
  "ranges": {"get_global_id(0)": ["gid_lo_0", "gid_hi_0"]}}})J";

static void BM_Chain(benchmark::State& state) {
  const auto sel = cl::select_devices(cl::discover(), "", "");
  if (!sel.cpu || !sel.gpu) {
    state.SkipWithError("needs a CPU and a GPU device (POCL_DEVICES=\"pthread pthread\")");
    return;
  }
  const dop::Config cfgs[] = {{1, 0}, {0, 1}, {0.5, 0.5}};
  const dop::Config cfg = cfgs[state.range(0)];
  const bool resident = state.range(1) == 1;
  const int launches = 16;
  const dop::Spec s = saxpy_spec(size_t(4) << 20);
  dop::ExecutorOptions o;
  o.memory = dop::MemoryMode::copy;
  o.footprint = dop::parse_footprint(kSaxpyFootprint, "saxpy.json");
  if (resident) o.data = std::make_shared<dop::DeviceData>(sel);
  dop::Executor ex(s, kSaxpy, sel, o);
  auto args = dop::make_args(s);
  ex.launch(args, cfg);  // builds the programs, outside the measurement
  if (o.data) o.data->sync(args[0]);
  double bytes = 0;
  for (auto _ : state) {
    const auto before = o.data ? o.data->moved() : dop::DeviceData::Moved{};
    for (int k = 0; k < launches; ++k) {
      const dop::LaunchResult r = ex.launch(args, cfg);
      if (!o.data) bytes += double(r.h2d_bytes + r.d2h_bytes);
    }
    if (o.data) {
      o.data->sync(args[0]);
      const auto after = o.data->moved();
      bytes += double(after.h2d_bytes - before.h2d_bytes + after.d2h_bytes - before.d2h_bytes);
    }
  }
  state.counters["MB_per_launch"] = benchmark::Counter(bytes / 1e6 / launches, benchmark::Counter::kAvgIterations);
  state.counters["MB_per_chain"] = benchmark::Counter(bytes / 1e6, benchmark::Counter::kAvgIterations);
  state.SetLabel(std::string(resident ? "resident" : "plain") + " at " + dop::to_string(cfg));
}
BENCHMARK(BM_Chain)->ArgsProduct({{0, 1, 2}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

// Host data in pageable memory (copy mode: the GPU's inputs staged through pinned memory by the copy threads) against
// page-locked memory (pinned: the GPU's DMA reads the read-only input in place), a saxpy over 16 MB buffers, per
// launch (LaunchResult::total_ms) at (0, 1) and (0.5, 0.5), with the footprint.
static void BM_HostData(benchmark::State& state) {
  const auto sel = cl::select_devices(cl::discover(), "", "");
  if (!sel.cpu || !sel.gpu) {
    state.SkipWithError("needs a CPU and a GPU device (POCL_DEVICES=\"pthread pthread\")");
    return;
  }
  const dop::Config cfgs[] = {{0, 1}, {0.5, 0.5}};
  const dop::Config cfg = cfgs[state.range(0)];
  const bool pinned = state.range(1) == 1;
  const dop::Spec s = saxpy_spec(size_t(4) << 20);
  dop::ExecutorOptions o;
  o.memory = pinned ? dop::MemoryMode::pinned : dop::MemoryMode::copy;
  o.footprint = dop::parse_footprint(kSaxpyFootprint, "saxpy.json");
  dop::Executor ex(s, kSaxpy, sel, o);
  const auto initial = dop::make_args(s);
  auto args = ex.place(initial);
  ex.launch(args, cfg);  // builds the programs, outside the measurement
  double in_place = 0;
  for (auto _ : state) {
    dop::reset_writable(args, initial);
    const dop::LaunchResult r = ex.launch(args, cfg);
    state.SetIterationTime(r.total_ms / 1e3);
    in_place += double(r.h2d_in_place_bytes);
  }
  state.counters["MB_in_place"] = benchmark::Counter(in_place / 1e6, benchmark::Counter::kAvgIterations);
  state.SetLabel(std::string(pinned ? "pinned" : "copy") + " at " + dop::to_string(cfg));
}
BENCHMARK(BM_HostData)->ArgsProduct({{0, 1}, {0, 1}})->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(20);

BENCHMARK_MAIN();
