// Warm starts (ExecutorOptions::warm_start), on PoCL with two devices: a dynamic launch learns the CPU share at
// which both devices finish together, and the next launch at that configuration and shape starts from it.
#include <catch2/catch.hpp>

#include <cmath>

#include "coexec_support.hpp"
#include "dop/runtime.hpp"

using namespace dop;
using dop::test::two_devices;

namespace {

// Every item loops `iters` times; items below `heavy_items` loop `heavy_iters` times instead.
const char* kLoop = R"CL(
__kernel void loop(__global float* y, int iters, int heavy_items, int heavy_iters) {
  int i = get_global_id(0);
  float v = y[i];
  int n = i < heavy_items ? heavy_iters : iters;
  for (int k = 0; k < n; ++k) v = v * 0.999f + 0.001f;
  y[i] = v;
}
)CL";

// y at 4 * gid, read and written: what the analysis proves for kLoop.
const char* kLoopFootprint = R"J({"footprint": {
  "args": {"y": {"whole": false, "accesses": [{"write": false, "bytes": 4, "terms": [[4, "get_global_id(0)"]]},
                                              {"write": true, "bytes": 4, "terms": [[4, "get_global_id(0)"]]}]}},
  "ranges": {"get_global_id(0)": ["gid_lo_0", "gid_hi_0"]}}})J";

Spec loop_spec(size_t items, int iters, int heavy_items, int heavy_iters) {
  using dop::test::scalar_arg;
  return dop::test::kernel_spec(
      "loop", {items}, {64},
      {dop::test::buffer_arg("y", ElemType::f32, items, Access::read_write, true, Init::Fill::random, 11),
       scalar_arg("iters", ElemType::i32, double(iters)), scalar_arg("heavy_items", ElemType::i32, double(heavy_items)),
       scalar_arg("heavy_iters", ElemType::i32, double(heavy_iters))});
}

// Each of a few work-items doubles one element of a large input that is copied to the GPU whole (no footprint):
// on a cold launch on both devices the CPU has run every work-item long before the GPU's inputs have arrived.
const char* kHead = R"CL(
__kernel void head(__global const float* big, __global float* y) {
  int i = get_global_id(0);
  y[i] = 2.0f * big[i];
}
)CL";

Spec head_spec() {
  using dop::test::buffer_arg;
  return dop::test::kernel_spec(
      "head", {256}, {64},
      {buffer_arg("big", ElemType::f32, size_t(16) << 20, Access::read, false, Init::Fill::random, 3),
       buffer_arg("y", ElemType::f32, 256, Access::write, true, Init::Fill::zero, 0)});
}

// The output of a plain run on one device, for the co-executed launches to reproduce.
std::vector<ArgData> single_device_output(const Spec& s, const char* source, const Config& one_device) {
  auto out = make_args(s);
  Executor(s, source, two_devices()).launch(out, one_device);
  return out;
}

double cpu_share_measured(const LaunchResult& r) {
  return learn_cpu_share(double(r.cpu.work_items), r.cpu.finish_ms, double(r.gpu.work_items),
                         r.gpu.finish_ms + (r.memory == MemoryMode::resident ? 0.0 : r.d2h_ms));
}

// The learned share after a launch that measured `balanced` on both devices (warm or cold), given whether a warm
// launch has measured it before.
double learned(double share, double balanced, bool warm, bool& measured_warm) {
  const bool keep = share >= 0 && (measured_warm || !warm) && std::abs(balanced - share) <= 0.25;
  measured_warm = measured_warm || warm;
  return keep ? 0.5 * (share + balanced) : balanced;
}

}  // namespace

TEST_CASE("the learned share is the one at which both devices finish together") {
  // The CPU ran 30 units in 10 ms (3 per ms), the GPU 70 in 5 ms (14 per ms).
  const double s = learn_cpu_share(30, 10, 70, 5);
  CHECK(s == Approx(3.0 / 17.0));
  // At that share both devices take the same time over 100 units.
  CHECK(s * 100 / 3.0 == Approx((1 - s) * 100 / 14.0));
  CHECK(learn_cpu_share(50, 10, 50, 10) == Approx(0.5));
  CHECK(learn_cpu_share(40, 8, 0, 0) == 1.0);  // the GPU ran nothing
  CHECK(learn_cpu_share(0, 0, 40, 8) == 0.0);  // the CPU ran nothing
}

TEST_CASE("warm launches start from the learned share and reproduce the reference at every configuration") {
  const Spec s = loop_spec(64 * 512, 400, 0, 0);
  const auto want = single_device_output(s, kLoop, Config{1, 0});
  for (MemoryMode mode : {MemoryMode::zero_copy, MemoryMode::copy}) {
    ExecutorOptions o;
    o.memory = mode;
    if (mode == MemoryMode::copy) {
      o.footprint = parse_footprint(kLoopFootprint, "loop");
      o.poison_gpu_buffers = true;
    }
    Executor ex(s, kLoop, two_devices(), o);
    int warm = 0;
    for (const auto& cfg : Grid{}.configs()) {
      if (cfg.cpu == 0 || cfg.gpu == 0) continue;  // one device: nothing to learn
      ex.forget_warm_starts();                     // configurations the GPU runs unthrottled share what they learn
      // The rule, replayed: the learned share averages the balanced shares of the launches that ran both devices
      // (the first warm one replaces what cold ones measured; one that disagrees by more than 0.25 replaces the
      // average); a launch is warm once both devices have measured rates (each has run a chunk); before that, once
      // a launch on both left one device with nothing, that device runs the next launch alone (left out, not warm).
      double share = -1;
      bool cpu_rate = false, gpu_rate = false, measured_warm = false, tried_alone = false;
      for (int k = 0; k < 3; ++k) {
        auto args = make_args(s);
        const auto r = ex.launch(args, cfg);
        const auto cmp = compare_outputs(s, args, want);
        INFO(memory_mode_name(mode) << " config " << to_string(cfg) << " launch " << k << ": " << cmp.first);
        REQUIRE(cmp.ok);
        CHECK(r.cpu.work_items + r.gpu.work_items == s.global_items());
        CHECK(r.balanced_cpu_share == Approx(cpu_share_measured(r)));
        if (cpu_rate && gpu_rate) {
          REQUIRE(r.warm);
          CHECK(r.start_cpu_share == Approx(share));
          ++warm;
        } else if (cpu_rate != gpu_rate && !tried_alone) {  // the device that ran nothing, timed alone
          tried_alone = true;
          CHECK_FALSE(r.warm);
          CHECK(r.left_out);
          CHECK((r.cpu.chunks > 0) == !cpu_rate);
          CHECK((r.gpu.chunks > 0) == !gpu_rate);
        } else {
          CHECK_FALSE(r.warm);
        }
        // A device left out by choice teaches no balance; one that declined every chunk of a launch on both does
        // (under load the GPU may decline them all: the CPU alone would finish first).
        if (r.left_out) CHECK((r.cpu.chunks == 0) != (r.gpu.chunks == 0));  // by choice: the other ran everything
        if (!r.left_out) share = learned(share, r.balanced_cpu_share, r.warm, measured_warm);
        cpu_rate = cpu_rate || r.cpu.chunks > 0;
        gpu_rate = gpu_rate || r.gpu.chunks > 0;
      }
    }
    INFO(memory_mode_name(mode));
    CHECK(warm >= 16);  // most of the 32 two-device configurations give both devices work on their first launch
  }
}

// A cold launch on both devices of the head kernel in copy mode; the GPU runs nothing (the precondition of the tests
// below: a launch whose GPU ran something after all is tried again on a forgotten record, the fewest tries needed).
LaunchResult cold_launch_gpu_idle(Executor& ex, const Spec& s, const std::vector<ArgData>& want) {
  LaunchResult cold;
  for (int attempt = 0; attempt < 5; ++attempt) {
    ex.forget_warm_starts();
    auto args = make_args(s);
    cold = ex.launch(args, Config{1, 1});
    REQUIRE(compare_outputs(s, args, want).ok);
    if (cold.gpu.chunks == 0) break;
  }
  REQUIRE(cold.gpu.chunks == 0);
  REQUIRE(cold.cpu.work_items == s.global_items());
  REQUIRE_FALSE(cold.warm);
  return cold;
}

TEST_CASE("a device that ran nothing on both is timed alone once, then the faster device alone runs") {
  // The engine's give-up rule leaves a GPU with large host inputs idle the same way: without this, such a launch
  // never learns a GPU rate, never starts warm, and runs the CPU alone however fast the GPU alone would be.
  const Spec s = head_spec();
  const auto want = single_device_output(s, kHead, Config{1, 0});
  ExecutorOptions o;
  o.memory = MemoryMode::copy;
  Executor ex(s, kHead, two_devices(), o);
  const LaunchResult cold = cold_launch_gpu_idle(ex, s, want);
  CHECK(cold.balanced_cpu_share == 1.0);

  auto args = make_args(s);
  const auto trial = ex.launch(args, Config{1, 1});
  REQUIRE(compare_outputs(s, args, want).ok);
  CHECK(trial.left_out);
  CHECK_FALSE(trial.warm);
  CHECK(trial.cpu.chunks == 0);
  CHECK(trial.gpu.chunks == 1);  // everything in one chunk, as at a configuration of the GPU alone
  CHECK(trial.gpu.work_items == s.global_items());

  CHECK(trial.learning);

  // Then the CPU alone, timed by choice (a cold launch is not: it pays for what later ones do not); then a device
  // whose one run lost runs once more (its second run replaces its first); from then on the faster device alone,
  // each way's later times averaged in.
  struct Timed {
    int runs = 0;
    double ms = 0;
  } cpu, gpu;
  gpu = {1, trial.total_ms};
  for (int k = 0; k < 8; ++k) {
    bool want_gpu, learning = true;
    if (cpu.runs == 0) {
      want_gpu = false;
    } else {
      const bool gpu_best = gpu.ms < cpu.ms;
      const Timed& loser = gpu_best ? cpu : gpu;
      want_gpu = loser.runs == 1 ? !gpu_best : gpu_best;
      learning = loser.runs == 1;
    }
    args = make_args(s);
    const auto r = ex.launch(args, Config{1, 1});
    REQUIRE(compare_outputs(s, args, want).ok);
    INFO("launch " << k << ": CPU alone " << cpu.ms << " ms (" << cpu.runs << " runs), GPU alone " << gpu.ms << " ms ("
                   << gpu.runs << ")");
    CHECK(r.warm);
    CHECK(r.left_out);
    CHECK(r.learning == learning);
    CHECK((r.gpu.chunks > 0) == want_gpu);
    CHECK((r.cpu.chunks > 0) == !want_gpu);
    CHECK((want_gpu ? r.gpu : r.cpu).work_items == s.global_items());
    Timed& t = want_gpu ? gpu : cpu;
    t.ms = t.runs < 2 ? r.total_ms : 0.5 * (t.ms + r.total_ms);
    ++t.runs;
  }
  CHECK(cpu.runs + gpu.runs >= 4);
}

TEST_CASE("exploring switched off: a device that ran nothing is not timed alone") {
  const Spec s = head_spec();
  const auto want = single_device_output(s, kHead, Config{1, 0});
  ExecutorOptions o;
  o.memory = MemoryMode::copy;
  o.warm_explore = 0;
  Executor ex(s, kHead, two_devices(), o);
  cold_launch_gpu_idle(ex, s, want);
  auto args = make_args(s);
  const auto r = ex.launch(args, Config{1, 1});  // cold again: the GPU still has no rate
  REQUIRE(compare_outputs(s, args, want).ok);
  CHECK_FALSE(r.left_out);
  CHECK_FALSE(r.warm);
  CHECK(r.cpu.chunks > 0);
}

TEST_CASE("a device whose learned share rounds to nothing sits the next launch out") {
  // 64 work-groups; the first one is heavy. The CPU claims from the front, so on the first launch it gets the heavy
  // group while the GPU runs the other 63: the CPU's rate is so low that its learned share is under half a unit
  // (2^22 iterations: at 2^20 a CPU that also ran a light group came to 0.54 units on a loaded machine).
  // Each side's program is built at its first use, inside the launch: on a loaded machine the GPU could claim every
  // group while the CPU still builds, and the cold launch would teach nothing. So both sides are built first (a launch
  // on each device alone teaches no share), and a cold launch that still went to one device is tried again on a fresh
  // executor (the precondition, not the behaviour under test).
  const Spec s = loop_spec(64 * 64, 10, 64, 1 << 22);
  const auto want = single_device_output(s, kLoop, Config{0, 1});
  for (int attempt = 0;; ++attempt) {
    Executor ex(s, kLoop, two_devices());
    auto args = make_args(s);
    for (const Config& alone : {Config{1, 0}, Config{0, 1}}) REQUIRE_FALSE(ex.launch(args, alone).warm);
    args = make_args(s);
    const auto cold = ex.launch(args, Config{1, 1});
    REQUIRE_FALSE(cold.warm);
    REQUIRE(compare_outputs(s, args, want).ok);
    INFO("attempt " << attempt << ": CPU " << cold.cpu.work_items << " work-items, GPU " << cold.gpu.work_items
                    << ", learned CPU share " << cold.balanced_cpu_share);
    if (attempt < 4 && (cold.cpu.work_items == 0 || cold.gpu.work_items == 0)) continue;
    REQUIRE(cold.cpu.work_items > 0);
    REQUIRE(cold.gpu.work_items > 0);
    REQUIRE(cold.balanced_cpu_share * 64 < 0.5);
    args = make_args(s);
    const auto r = ex.launch(args, Config{1, 1});
    REQUIRE(compare_outputs(s, args, want).ok);
    CHECK(r.warm);
    CHECK(r.cpu.chunks == 0);
    CHECK(r.gpu.work_items == s.global_items());
    break;
  }
}

TEST_CASE("warm starts can be forgotten and switched off") {
  const Spec s = loop_spec(64 * 256, 400, 0, 0);
  const auto want = single_device_output(s, kLoop, Config{1, 0});
  for (bool on : {true, false}) {
    ExecutorOptions o;
    o.warm_start = on;
    Executor ex(s, kLoop, two_devices(), o);
    bool learned = false;
    for (int k = 0; k < 4; ++k) {
      auto args = make_args(s);
      const auto r = ex.launch(args, Config{1, 1});
      REQUIRE(compare_outputs(s, args, want).ok);
      if (!on) {
        CHECK_FALSE(r.warm);
        CHECK(r.start_cpu_share == -1);
      }
      if (on && learned) CHECK(r.warm);
      learned = learned || (r.cpu.chunks > 0 && r.gpu.chunks > 0);
    }
    if (!on) continue;
    REQUIRE(learned);
    ex.forget_warm_starts();
    auto args = make_args(s);
    CHECK_FALSE(ex.launch(args, Config{1, 1}).warm);
    // Static splits neither use nor change what was learned.
    CHECK_FALSE(ex.launch_static(args, Config{1, 1}, 0.5).warm);
  }
}

TEST_CASE(
    "after a warm launch on both devices each device is timed alone, a way that lost once gets a second run, and the "
    "fastest is kept") {
  // warm_explore = 1: both single-device ways are plausible whatever the share, so both are tried.
  const Spec s = loop_spec(64 * 256, 400, 0, 0);
  const auto want = single_device_output(s, kLoop, Config{1, 0});
  ExecutorOptions o;
  o.warm_explore = 1;
  o.warm_recheck = 8;
  Executor ex(s, kLoop, two_devices(), o);
  std::vector<LaunchResult> rs;
  for (int k = 0; k < 9; ++k) {
    auto args = make_args(s);
    rs.push_back(ex.launch(args, Config{1, 1}));
    INFO("launch " << k);
    REQUIRE(compare_outputs(s, args, want).ok);
  }
  auto ran = [](const LaunchResult& r) {
    return std::string(r.cpu.chunks > 0 ? "C" : "") + (r.gpu.chunks > 0 ? "G" : "");
  };
  REQUIRE(ran(rs[0]) == "CG");  // cold; a long loop keeps both devices busy
  REQUIRE(rs[1].warm);
  CHECK(ran(rs[1]) == "CG");
  CHECK(ran(rs[2]) == "C");  // the CPU alone, timed once
  CHECK(ran(rs[3]) == "G");  // the GPU alone, timed once
  // From then on the fastest way measured, except that a way whose one run lost runs once more (its second run
  // replaces the first; later ones are averaged in); the 8th warm launch runs both again.
  double ms[3] = {rs[1].total_ms, rs[2].total_ms, rs[3].total_ms};
  int runs[3] = {1, 1, 1};
  for (int k = 4; k < 9; ++k) {
    const int best = int(std::min_element(ms, ms + 3) - ms);
    int want_way = best;
    for (int w = 0; w < 3; ++w)
      if (w != best && runs[w] == 1) {
        want_way = w;
        break;
      }
    if (k == 8) want_way = 0;
    const char* want_ran = want_way == 0 ? "CG" : want_way == 1 ? "C" : "G";
    INFO("launch " << k << ": both " << ms[0] << " ms, CPU alone " << ms[1] << " ms, GPU alone " << ms[2] << " ms");
    CHECK(ran(rs[k]) == want_ran);
    CHECK(rs[k].learning == (k == 8 || want_way != best));
    CHECK(rs[k].start_cpu_share >= 0);
    const int way = ran(rs[k]) == "CG" ? 0 : ran(rs[k]) == "C" ? 1 : 2;
    ms[way] = runs[way] < 2 ? rs[k].total_ms : 0.5 * (ms[way] + rs[k].total_ms);
    ++runs[way];
  }
}
