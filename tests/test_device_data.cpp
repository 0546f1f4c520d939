// Resident buffers across Executor launches (dop/device_data.hpp), on PoCL with two devices in copy mode, the
// GPU's copies poisoned where they are not current: chains of launches give exactly the plain path's results at
// every kind of configuration, with and without a footprint; host writes between launches, two kernels sharing
// buffers, results read mid-chain, a refused launch; and the byte-range sets both residency protocols keep.
#include <catch2/catch.hpp>

#include <memory>
#include <utility>

#include "coexec_support.hpp"
#include "dop/bounds.hpp"
#include "dop/range_set.hpp"
#include "dop/runtime.hpp"

using namespace dop;
using dop::test::buffer_arg;
using dop::test::kernel_spec;
using dop::test::scalar_arg;
using dop::test::two_devices;

namespace {

// A 1D three-point stencil written at a shifted index (shift 0 in a chain; a large one is refused by the bounds
// check), and a kernel that adds one buffer into another.
const char* kStep = R"CL(
__kernel void stencil(__global const int* in, __global int* out, int n, int shift) {
  int i = get_global_id(0);
  if (i >= n) return;
  int l = i > 0 ? in[i - 1] : 0, r = i + 1 < n ? in[i + 1] : 0;
  out[i + shift] = (l + 2 * in[i] + r + i) & 0xFFFF;
}
)CL";
const char* kStepFootprint = R"J({"footprint": {
  "args": {"in": {"whole": false, "accesses": [
              {"write": false, "bytes": 4, "terms": [[4, "get_global_id(0)"], [-4]]},
              {"write": false, "bytes": 4, "terms": [[4, "get_global_id(0)"]]},
              {"write": false, "bytes": 4, "terms": [[4, "get_global_id(0)"], [4]]}]},
           "out": {"whole": false, "accesses": [
              {"write": true, "bytes": 4, "terms": [[4, "get_global_id(0)"], [4, "shift"]]}]}},
  "ranges": {"get_global_id(0)": ["gid_lo_0", "gid_hi_0"], "shift": ["shift", "shift"]}}})J";
const char* kMix = R"CL(
__kernel void accumulate(__global int* y, __global const int* x, int n) {
  int i = get_global_id(0);
  if (i < n) y[i] = (y[i] + 3 * x[i]) & 0xFFFF;
}
)CL";

constexpr size_t kN = 3000;  // not a multiple of the work-group size

Spec step_spec() {
  return kernel_spec("stencil", {(kN + 15) / 16 * 16}, {16},
                     {buffer_arg("in", ElemType::i32, kN, Access::read, false, Init::Fill::random, 7),
                      buffer_arg("out", ElemType::i32, kN, Access::write, true), scalar_arg("n", ElemType::i32, kN),
                      scalar_arg("shift", ElemType::i32, 0)});
}
Spec mix_spec() {
  return kernel_spec("accumulate", {(kN + 15) / 16 * 16}, {16},
                     {buffer_arg("y", ElemType::i32, kN, Access::read_write, true),
                      buffer_arg("x", ElemType::i32, kN, Access::read, false), scalar_arg("n", ElemType::i32, kN)});
}

std::vector<int> step_ref(const std::vector<int>& in) {
  std::vector<int> out(in.size());
  const int n = int(in.size());
  for (int i = 0; i < n; ++i)
    out[size_t(i)] =
        ((i > 0 ? in[size_t(i) - 1] : 0) + 2 * in[size_t(i)] + (i + 1 < n ? in[size_t(i) + 1] : 0) + i) & 0xFFFF;
  return out;
}
std::vector<int> ints(const ArgData& a) { return {a.as<int>(), a.as<int>() + kN}; }

ExecutorOptions options(const std::shared_ptr<DeviceData>& data, bool footprint) {
  ExecutorOptions o;
  o.memory = MemoryMode::copy;
  o.poison_gpu_buffers = true;  // a byte the GPU needed but does not hold shows up as a wrong result
  o.data = data;
  if (footprint) o.footprint = parse_footprint(kStepFootprint, "stencil.json");
  return o;
}

// `launches` steps ping-ponging between the two buffers (their memory swapped between launches, so that the
// output of one is the input of the next); the final output in host memory (synchronised when resident).
struct Chain {
  std::vector<int> out;
  std::vector<LaunchResult> results;
};
Chain run_chain(const Config& cfg, bool resident, bool footprint, int launches) {
  const Spec s = step_spec();
  auto data = resident ? std::make_shared<DeviceData>(two_devices()) : nullptr;
  Executor ex(s, kStep, two_devices(), options(data, footprint));
  auto args = make_args(s);
  Chain c;
  for (int k = 0; k < launches; ++k) {
    if (k > 0) std::swap(args[0].storage, args[1].storage);
    c.results.push_back(ex.launch(args, cfg));
  }
  if (data) data->sync(args[1]);
  c.out = ints(args[1]);
  return c;
}

// The chain's output after `launches` steps from the spec's initial input, on the host.
std::vector<int> chain_ref(int launches) {
  const Spec s = step_spec();
  const auto a = make_args(s);
  std::vector<int> out = ints(a[0]);
  for (int k = 0; k < launches; ++k) out = step_ref(out);
  return out;
}

}  // namespace

TEST_CASE("range sets: add merges, remove splits, missing and within answer for a range") {
  RangeSet r;
  r.add(10, 20);
  r.add(30, 40);
  r.add(20, 25);  // touching: merged
  CHECK(r.covers(10, 25));
  CHECK_FALSE(r.covers(10, 26));
  CHECK(r.covers(5, 5));
  CHECK(r.intersects(24, 31));
  CHECK_FALSE(r.intersects(25, 30));
  CHECK(r.missing(0, 50) == std::vector<RangeSet::Range>{{0, 10}, {25, 30}, {40, 50}});
  CHECK(r.within(15, 35) == std::vector<RangeSet::Range>{{15, 25}, {30, 35}});
  r.remove(12, 32);
  CHECK(r.within(0, 50) == std::vector<RangeSet::Range>{{10, 12}, {32, 40}});
  r.clear();
  CHECK(r.empty());
}

TEST_CASE("resident buffers: a chain of launches gives exactly the plain path's results at every configuration") {
  const int launches = 6;
  const std::vector<int> expect = chain_ref(launches);
  for (const bool footprint : {false, true}) {
    for (const Config cfg : {Config{1, 0}, Config{0, 1}, Config{1, 1}, Config{0.5, 0.5}}) {
      CAPTURE(footprint, cfg.cpu, cfg.gpu);
      const Chain plain = run_chain(cfg, false, footprint, launches);
      const Chain res = run_chain(cfg, true, footprint, launches);
      CHECK(plain.out == expect);
      CHECK(res.out == expect);
      // One device alone: after the first launch everything it needs is where it ran, and nothing comes back.
      if (cfg.cpu == 0 || cfg.gpu == 0)
        for (size_t k = 1; k < res.results.size(); ++k) {
          CHECK(res.results[k].h2d_bytes == 0);
          CHECK(res.results[k].d2h_bytes == 0);
        }
      if (cfg.cpu == 0) CHECK(plain.results.back().d2h_bytes == kN * 4);  // the plain path reads back every time
    }
  }
}

// `launches` steps of the chain over resident buffers in `data`, each run by launch(executor, args, k); the output
// synchronised to host memory.
template <typename Launch>
std::vector<int> resident_chain(const std::shared_ptr<DeviceData>& data, bool footprint, int launches, Launch launch) {
  const Spec s = step_spec();
  Executor ex(s, kStep, two_devices(), options(data, footprint));
  auto args = make_args(s);
  for (int k = 0; k < launches; ++k) {
    if (k > 0) std::swap(args[0].storage, args[1].storage);
    launch(ex, args, k);
  }
  data->sync(args[1]);
  return ints(args[1]);
}

TEST_CASE("resident buffers: with both devices and a footprint, each device gets only what its chunks touch") {
  const int launches = 8;
  const std::vector<int> expect = chain_ref(launches);
  const size_t whole = 2 * kN * 4;  // both buffers, the whole of them
  // Dynamic distribution: exact results, and less moved than the whole buffers per launch, and than without the
  // footprint (whole buffers to each device that runs).
  DeviceData::Moved with, without;
  for (const bool footprint : {true, false}) {
    CAPTURE(footprint);
    auto data = std::make_shared<DeviceData>(two_devices());
    CHECK(resident_chain(data, footprint, launches, [&](Executor& ex, std::vector<ArgData>& args, int k) {
            const LaunchResult r = ex.launch(args, Config{0.5, 0.5});
            CAPTURE(k, r.cpu.work_groups, r.gpu.work_groups);
            if (footprint && r.cpu.work_groups > 0 && r.gpu.work_groups > 0) CHECK(r.h2d_bytes + r.d2h_bytes < whole);
          }) == expect);
    (footprint ? with : without) = data->moved();
  }
  CHECK(with.h2d_bytes + with.d2h_bytes < launches * whole);
  CHECK(with.h2d_bytes + with.d2h_bytes < without.h2d_bytes + without.d2h_bytes);

  // A static split at the same share every launch: after the first, only the bytes around the boundary move (each
  // device reads one element past its part, which the other wrote the launch before).
  auto data = std::make_shared<DeviceData>(two_devices());
  CHECK(resident_chain(data, true, launches, [&](Executor& ex, std::vector<ArgData>& args, int k) {
          const DeviceData::Moved before = data->moved();
          ex.launch_static(args, Config{0.5, 0.5}, 0.5);
          const DeviceData::Moved after = data->moved();
          CAPTURE(k);
          // The first launch: the GPU's half of each buffer (of the output too: what it may write, for a merge).
          if (k == 0) CHECK(after.h2d_bytes - before.h2d_bytes <= kN * 4 + 128);
          if (k > 0) CHECK(after.h2d_bytes + after.d2h_bytes - before.h2d_bytes - before.d2h_bytes <= 256);
        }) == expect);
}

TEST_CASE("resident buffers: with both devices, bytes both may write are merged with the launch's initial ones") {
  // A footprint that bounds y's writes only by the whole buffer: every chunk of either device may write all of it.
  const char* wide = R"J({"footprint": {
    "args": {"y": {"whole": false, "accesses": [
                {"write": false, "bytes": 4, "terms": [[4, "get_global_id(0)"]]},
                {"write": true, "bytes": 4, "terms": [[4, "any"]]}]},
             "x": {"whole": false, "accesses": [{"write": false, "bytes": 4, "terms": [[4, "get_global_id(0)"]]}]}},
    "ranges": {"get_global_id(0)": ["gid_lo_0", "gid_hi_0"], "any": ["0", "n-1"]}}})J";
  const Spec s = mix_spec();
  auto data = std::make_shared<DeviceData>(two_devices());
  ExecutorOptions o = options(data, false);
  o.footprint = parse_footprint(wide, "accumulate.json");
  Executor ex(s, kMix, two_devices(), o);
  auto args = make_args(s);
  std::vector<int> y = ints(args[0]);
  const std::vector<int> x = ints(args[1]);
  auto step = [&] {
    for (size_t i = 0; i < kN; ++i) y[i] = (y[i] + 3 * x[i]) & 0xFFFF;
  };
  ex.launch(args, Config{0, 1});  // y current on the GPU alone
  step();
  CHECK_FALSE(data->host_current(args[0]));
  for (int k = 0; k < 4; ++k) {
    ex.launch(args, Config{0.5, 0.5});
    step();
  }
  data->sync(args[0]);
  CHECK(ints(args[0]) == y);
}

TEST_CASE("resident buffers: results stay on the GPU until synced, and host writes between launches are seen") {
  for (const Config cfg : {Config{0, 1}, Config{0.5, 0.5}}) {
    CAPTURE(cfg.cpu, cfg.gpu);
    const Spec s = step_spec();
    auto data = std::make_shared<DeviceData>(two_devices());
    Executor ex(s, kStep, two_devices(), options(data, true));
    auto args = make_args(s);
    std::vector<int> expect = step_ref(ints(args[0]));
    ex.launch(args, cfg);
    if (cfg.cpu == 0) CHECK_FALSE(data->host_current(args[1]));  // the output is on the GPU only
    if (cfg.cpu == 0) CHECK(data->gpu_current(args[0]));         // both devices: the GPU got its chunks' part
    CHECK(data->host_current(args[0]));                          // an input stays current where it was
    // The output becomes the next input; the host overwrites part of it without reading it first.
    std::swap(args[0].storage, args[1].storage);
    for (size_t i = 100; i < 200; ++i) args[0].as<int>()[i] = int(i) * 7, expect[i] = int(i) * 7;
    data->wrote(args[0], 100 * 4, 200 * 4);
    CHECK(data->host_current(args[0], 100 * 4, 200 * 4));
    CHECK_FALSE(data->gpu_current(args[0], 100 * 4, 200 * 4));
    ex.launch(args, cfg);
    expect = step_ref(expect);
    // A second write, to the whole of the other buffer's host memory, then one more launch.
    std::swap(args[0].storage, args[1].storage);
    data->sync(args[0]);
    for (size_t i = 0; i < kN; i += 3) args[0].as<int>()[i] = -int(i), expect[i] = -int(i);
    data->wrote(args[0]);
    ex.launch(args, cfg);
    expect = step_ref(expect);
    data->sync(args[1]);
    CHECK(ints(args[1]) == expect);
    CHECK(data->host_current(args[1]));
    CHECK(data->sync(args[1]) == 0);  // already current: nothing moves
  }
}

TEST_CASE("resident buffers: two kernels on two executors share buffers, and results are read mid-chain") {
  for (const Config cfg : {Config{1, 0}, Config{0, 1}, Config{1, 1}, Config{0.5, 0.5}}) {
    CAPTURE(cfg.cpu, cfg.gpu);
    auto data = std::make_shared<DeviceData>(two_devices());
    const Spec ss = step_spec(), ms = mix_spec();
    Executor step(ss, kStep, two_devices(), options(data, true));
    ExecutorOptions mo = options(data, false);  // no footprint: every buffer whole
    Executor mix(ms, kMix, two_devices(), mo);
    auto sa = make_args(ss);  // step: in = A, out = B
    auto ma = make_args(ms);  // mix: y = A, x = B (the same memory, moved between the two argument lists)
    std::vector<int> a = ints(sa[0]), b;
    for (int k = 0; k < 4; ++k) {
      step.launch(sa, cfg);
      b = step_ref(a);
      std::swap(ma[0].storage, sa[0].storage);
      std::swap(ma[1].storage, sa[1].storage);
      mix.launch(ma, cfg);
      for (size_t i = 0; i < kN; ++i) a[i] = (a[i] + 3 * b[i]) & 0xFFFF;
      if (k == 1) {  // mid-chain: both buffers read while they stay tracked
        data->sync(ma[0]);
        data->sync(ma[1]);
        CHECK(ints(ma[0]) == a);
        CHECK(ints(ma[1]) == b);
      }
      std::swap(ma[0].storage, sa[0].storage);
      std::swap(ma[1].storage, sa[1].storage);
    }
    data->sync(sa[0]);
    data->sync(sa[1]);
    CHECK(ints(sa[0]) == a);
    CHECK(ints(sa[1]) == b);
    const DeviceData::Moved m = data->moved();
    if (cfg.gpu == 0) CHECK(m.h2d_bytes + m.d2h_bytes == 0);  // the CPU alone: host memory is the only copy used
  }
}

TEST_CASE("resident buffers: a refused launch leaves every copy as it was, and misuse is refused by name") {
  const Spec s = step_spec();
  auto data = std::make_shared<DeviceData>(two_devices());
  Executor ex(s, kStep, two_devices(), options(data, true));
  auto args = make_args(s);
  const std::vector<int> expect = step_ref(ints(args[0]));
  ex.launch(args, Config{0, 1});
  std::swap(args[0].storage, args[1].storage);
  *args[3].as<int>() = 1 << 20;  // the output index shifted far past the buffer: refused before any enqueue
  CHECK_THROWS_AS(ex.launch(args, Config{0.5, 0.5}), LaunchError);
  CHECK_FALSE(data->host_current(args[0]));  // the first launch's result is still on the GPU alone
  data->sync(args[0]);
  CHECK(ints(args[0]) == expect);
  *args[3].as<int>() = 0;
  ex.launch(args, Config{0.5, 0.5});
  data->sync(args[1]);
  CHECK(ints(args[1]) == step_ref(expect));

  // A buffer's memory handed to another of another size without forget; after forget it is a new buffer.
  ArgData smaller;
  smaller.storage = std::move(args[1].storage);
  smaller.bytes = 16;
  CHECK_THROWS_WITH(data->track(smaller), Catch::Contains("forget a buffer before its memory is freed"));
  args[1].storage = std::move(smaller.storage);
  data->forget(args[1]);
  smaller.storage = std::move(args[1].storage);
  CHECK_NOTHROW(data->track(smaller));
  // Modes without GPU copies, and a selection without a GPU.
  ExecutorOptions svm = options(data, false);
  svm.memory = MemoryMode::svm;
  CHECK_THROWS_WITH(Executor(s, kStep, two_devices(), svm), Catch::Contains("need memory mode copy or auto"));
  cl::Selection cpu_only = two_devices();
  cpu_only.gpu.reset();
  CHECK_THROWS_WITH(DeviceData(cpu_only), Catch::Contains("no GPU"));
}

namespace {

// An application's own buffers on the GPU device: its context and queue, and two buffers holding the step chain's
// initial input and zeros. Each launch adopts them with what the caller (here this test, as the interposer does)
// knows to be current where, and releases them afterwards, keeping the copies' record between launches.
struct AppBuffers {
  cl::Context ctx;
  cl::Queue queue;
  cl::Buffer mem[2];
  DeviceData::Copies copies[2];  // where each buffer's bytes are current between launches
  explicit AppBuffers(cl_device_id gpu, const std::vector<ArgData>& init) {
    ctx = cl::create_context({gpu});
    queue = cl::create_queue(ctx, gpu, false);
    for (int b = 0; b < 2; ++b) {
      mem[b] = cl::create_buffer(ctx, CL_MEM_READ_WRITE, init[size_t(b)].bytes);
      cl::check(clEnqueueWriteBuffer(queue.get(), mem[b].get(), CL_TRUE, 0, init[size_t(b)].bytes,
                                     init[size_t(b)].data(), 0, nullptr, nullptr),
                "clEnqueueWriteBuffer", "the application's data");
      copies[b].gpu.add(0, init[size_t(b)].bytes);  // the application's copy alone is current
    }
  }
  // Bytes current on the GPU read from the application's buffer, the others taken from host memory.
  std::vector<int> read(int b, const ArgData& host) {
    std::vector<int> out = ints(host);
    for (const auto& [lo, hi] : copies[b].gpu.within(0, host.bytes))
      cl::check(clEnqueueReadBuffer(queue.get(), mem[b].get(), CL_TRUE, lo, hi - lo,
                                    reinterpret_cast<unsigned char*>(out.data()) + lo, 0, nullptr, nullptr),
                "clEnqueueReadBuffer", "the application's result");
    return out;
  }
};

}  // namespace

TEST_CASE("resident buffers: the application's own GPU buffers are adopted and used in place at every configuration") {
  const int launches = 6;
  const Spec s = step_spec();
  const std::vector<int> expect = chain_ref(launches);
  for (const bool footprint : {false, true}) {
    for (const Config cfg : {Config{1, 0}, Config{0, 1}, Config{1, 1}, Config{0.5, 0.5}}) {
      CAPTURE(footprint, cfg.cpu, cfg.gpu);
      const Chain plain = run_chain(cfg, false, footprint, launches);
      auto args = make_args(s);
      AppBuffers app(two_devices().gpu->device, args);
      for (int b = 0; b < 2; ++b) std::fill(args[size_t(b)].as<int>(), args[size_t(b)].as<int>() + kN, -1);
      auto data = std::make_shared<DeviceData>(app.ctx.get(), two_devices().gpu->device);
      ExecutorOptions o = options(data, footprint);
      o.memory = MemoryMode::automatic;  // over the caller's buffers: copy mode, though PoCL's GPU shares host memory
      Executor ex(s, kStep, two_devices(), o);
      for (int k = 0; k < launches; ++k) {
        const int in = k % 2, out = 1 - in;  // the buffers change roles every launch, host memory with them
        if (k > 0) std::swap(args[0].storage, args[1].storage);
        data->adopt(args[0], app.mem[in].get(), app.copies[in].host, app.copies[in].gpu);
        data->adopt(args[1], app.mem[out].get(), app.copies[out].host, app.copies[out].gpu);
        const LaunchResult r = ex.launch(args, cfg);
        if (cfg.gpu > 0) CHECK(r.memory == MemoryMode::copy);
        app.copies[in] = data->release(args[0]);
        app.copies[out] = data->release(args[1]);
        for (const auto& c : app.copies) {  // every byte current somewhere, none lost
          CHECK(c.lost.empty());
          for (const auto& [lo, hi] : c.host.missing(0, kN * 4)) CHECK(c.gpu.covers(lo, hi));
        }
        if (cfg.gpu > 0 && k == 0) CHECK(r.h2d_bytes == 0);  // the GPU holds everything already
        if (cfg.cpu == 0) {  // the GPU alone: its results stay in the application's buffer, nothing moves
          CHECK(r.h2d_bytes + r.d2h_bytes == 0);
          CHECK(app.copies[out].host.empty());
        }
        if (cfg.gpu == 0 && k > 0) CHECK(r.h2d_bytes + r.d2h_bytes == 0);  // the CPU alone, after its first fetch
      }
      const std::vector<int> got = app.read(1 - (launches - 1) % 2, args[1]);  // the last launch's output
      CHECK(got == expect);
      CHECK(got == plain.out);
      const DeviceData::Moved m = data->moved();
      if (cfg.cpu == 0) CHECK(m.h2d_bytes + m.d2h_bytes == 0);
      if (cfg.gpu == 0) CHECK(m.d2h_bytes == 2 * kN * 4);  // both buffers read once, for the CPU
      if (cfg.gpu == 0) CHECK(m.h2d_bytes == 0);
    }
  }
}

TEST_CASE("resident buffers: an adopted buffer of another context, too small, or current nowhere is refused") {
  const cl::Selection sel = two_devices();
  const cl_device_id gpu = sel.gpu->device;
  cl::Context app_ctx = cl::create_context({gpu}), other_ctx = cl::create_context({gpu});
  DeviceData data(app_ctx.get(), gpu);
  CHECK(data.gpu_device() == gpu);
  const Spec s = step_spec();
  auto args = make_args(s);
  RangeSet all;
  all.add(0, args[0].bytes);
  cl::Buffer other = cl::create_buffer(other_ctx, CL_MEM_READ_WRITE, args[0].bytes);
  CHECK_THROWS_WITH(data.adopt(args[0], other.get(), {}, all), Catch::Contains("another context"));
  cl::Buffer small = cl::create_buffer(app_ctx, CL_MEM_READ_WRITE, 64);
  CHECK_THROWS_WITH(data.adopt(args[0], small.get(), {}, all), Catch::Contains("has 64 bytes"));
  cl::Buffer mem = cl::create_buffer(app_ctx, CL_MEM_READ_WRITE, args[0].bytes);
  RangeSet part;
  part.add(0, 100);
  CHECK_THROWS_WITH(data.adopt(args[0], mem.get(), part, {}), Catch::Contains("current neither"));
  CHECK_FALSE(data.host_current(args[0]));  // nothing adopted
  data.adopt(args[0], mem.get(), part, all);
  CHECK(data.gpu_current(args[0]));
  CHECK(data.host_current(args[0], 0, 100));
  CHECK_THROWS_WITH(data.adopt(args[0], other.get(), {}, all), Catch::Contains("another context"));
  cl::Buffer second = cl::create_buffer(app_ctx, CL_MEM_READ_WRITE, args[0].bytes);
  CHECK_THROWS_WITH(data.adopt(args[0], second.get(), {}, all), Catch::Contains("tracked already"));
  const DeviceData::Copies c = data.release(args[0]);
  CHECK(c.gpu.covers(0, args[0].bytes));
  CHECK(c.host.within(0, args[0].bytes) == std::vector<RangeSet::Range>{{0, 100}});
  CHECK(data.release(args[0]).host.covers(0, args[0].bytes));  // not tracked: host memory is the only copy
  // An executor on another GPU than the data's is refused.
  cl::Selection swapped = sel;
  std::swap(swapped.cpu, swapped.gpu);
  auto shared = std::make_shared<DeviceData>(app_ctx.get(), gpu);
  CHECK_THROWS_WITH(Executor(s, kStep, swapped, options(shared, false)), Catch::Contains("another GPU"));
}
