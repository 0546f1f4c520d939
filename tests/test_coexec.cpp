// Co-execution on PoCL with two devices: every configuration of the grid reproduces the reference, the range form
// is exact for every work-item builtin, and both memory modes merge outputs correctly.
#include <catch2/catch.hpp>

#include <thread>

#include "coexec_support.hpp"
#include "dop/runtime.hpp"

using namespace dop;
using dop::test::kSaxpy;
using dop::test::saxpy_reference;
using dop::test::saxpy_spec;
using dop::test::two_devices;

namespace {

// Every work-item writes what each builtin returns; the host computes what the full launch must give.
const char* kBuiltins = R"CL(
__kernel void builtins(__global uint* out, int stride) {
  size_t x = get_global_id(0), y = get_global_id(1);
  __global uint* o = out + (y * get_global_size(0) + x) * stride;
  o[0] = (uint)get_global_id(0);   o[1] = (uint)get_global_id(1);
  o[2] = (uint)get_group_id(0);    o[3] = (uint)get_group_id(1);
  o[4] = (uint)get_num_groups(0);  o[5] = (uint)get_num_groups(1);
  o[6] = (uint)get_global_size(0); o[7] = (uint)get_global_size(1);
  o[8] = (uint)get_global_offset(0); o[9] = (uint)get_global_offset(1);
  o[10] = (uint)get_local_id(0);   o[11] = (uint)get_local_id(1);
  o[12] = (uint)get_local_size(0); o[13] = (uint)get_local_size(1);
  o[14] = get_work_dim();          o[15] = (uint)get_num_groups(2);
  /* the unused third dimension, where the range form carries the split dimension's full size */
  o[16] = (uint)get_global_id(2);  o[17] = (uint)get_group_id(2);
  o[18] = (uint)get_global_size(2); o[19] = (uint)get_global_offset(2);
  o[20] = (uint)get_local_id(2);   o[21] = (uint)get_local_size(2);
}
)CL";

Spec builtins_spec(size_t gx, size_t gy, size_t lx, size_t ly) {
  Spec s;
  s.name = "builtins";
  s.kernel_name = "builtins";
  s.global = {gx, gy};
  s.local = {lx, ly};
  ArgSpec out;
  out.name = "out";
  out.type = ElemType::u32;
  out.count = gx * gy * 22;
  out.access = Access::write;
  out.output = true;
  ArgSpec stride;
  stride.name = "stride";
  stride.kind = ArgKind::scalar;
  stride.type = ElemType::i32;
  stride.value = 22;
  s.args = {out, stride};
  return s;
}

void builtins_reference(const Spec& s, std::vector<ArgData>& args) {
  uint32_t* o = args[0].as<uint32_t>();
  const size_t gx = s.global[0], gy = s.global[1], lx = s.local[0], ly = s.local[1];
  for (size_t y = 0; y < gy; ++y)
    for (size_t x = 0; x < gx; ++x) {
      uint32_t* w = o + (y * gx + x) * 22;
      const uint32_t v[22] = {uint32_t(x),
                              uint32_t(y),
                              uint32_t(x / lx),
                              uint32_t(y / ly),
                              uint32_t(gx / lx),
                              uint32_t(gy / ly),
                              uint32_t(gx),
                              uint32_t(gy),
                              0,
                              0,
                              uint32_t(x % lx),
                              uint32_t(y % ly),
                              uint32_t(lx),
                              uint32_t(ly),
                              2,
                              1,
                              0,
                              0,
                              1,
                              0,
                              0,
                              1};
      std::copy(v, v + 22, w);
    }
}

}  // namespace

TEST_CASE("the default grid has 44 configurations without (0,0)") {
  const auto cs = Grid{}.configs();
  CHECK(cs.size() == 44);
  for (const auto& c : cs) CHECK((c.cpu > 0 || c.gpu > 0));
  CHECK(parse_config("1,0.25") == Config{1, 0.25});
  CHECK_THROWS_WITH(parse_config("0,0"), Catch::Contains("uses no device"));
  CHECK_THROWS_WITH(parse_config("1.5,0"), Catch::Contains("'1.5' is not a number in [0,1]"));
  CHECK_THROWS_WITH(parse_config("abc"), Catch::Contains("must be CPU,GPU"));
}

TEST_CASE("range form: every builtin returns its full-launch value at every configuration") {
  const Spec s = builtins_spec(48, 40, 8, 4);  // 6 x 10 work-groups, odd split
  Executor ex(s, kBuiltins, two_devices());
  std::vector<ArgData> want = make_args(s);
  builtins_reference(s, want);
  for (const auto& cfg : Grid{}.configs()) {
    auto args = make_args(s);
    const auto r = ex.launch(args, cfg);
    const auto cmp = compare_outputs(s, args, want);
    INFO("config " << to_string(cfg) << ": " << cmp.first);
    REQUIRE(cmp.ok);
    CHECK(r.cpu.work_groups + r.gpu.work_groups == 60);
    if (cfg.cpu == 0) CHECK(r.cpu.work_groups == 0);
    if (cfg.gpu == 0) CHECK(r.gpu.work_groups == 0);
  }
}

TEST_CASE("all 44 configurations reproduce the reference in both memory modes") {
  const Spec s = saxpy_spec(100003, 64);  // odd size: the last work-group is partial
  auto want = make_args(s);
  saxpy_reference(s, want);
  for (MemoryMode mode : {MemoryMode::zero_copy, MemoryMode::copy}) {
    ExecutorOptions o;
    o.memory = mode;
    Executor ex(s, kSaxpy, two_devices(), o);
    for (const auto& cfg : Grid{}.configs()) {
      auto args = make_args(s);
      const auto r = ex.launch(args, cfg);
      const auto cmp = compare_outputs(s, args, want);
      INFO(memory_mode_name(mode) << " config " << to_string(cfg) << ": " << cmp.first);
      REQUIRE(cmp.ok);
      CHECK(r.memory == mode);
      CHECK(r.total_ms > 0);
      // Dynamic distribution: every work-group ran exactly once, on a device of the configuration.
      CHECK(r.cpu.work_groups + r.gpu.work_groups == s.work_groups());
      if (cfg.cpu == 0) CHECK(r.cpu.chunks == 0);
      if (cfg.gpu == 0) CHECK(r.gpu.chunks == 0);
      if (cfg.gpu > 0 && cfg.gpu < 1) CHECK_THAT(r.note, Catch::Contains("unthrottled"));
    }
  }
}

TEST_CASE("copy mode stages large buffers through pinned memory in pieces and merges every piece") {
  // 3,000,017 floats = 12 MB per buffer: several pieces per buffer, the last one partial.
  const Spec s = saxpy_spec(3000017, 64);
  auto want = make_args(s);
  saxpy_reference(s, want);
  ExecutorOptions o;
  o.memory = MemoryMode::copy;
  Executor ex(s, kSaxpy, two_devices(), o);
  for (double share : {0.0, 0.37, 0.5, 1.0}) {  // static splits: both devices run exactly their share
    auto args = make_args(s);
    const auto r = ex.launch_static(args, Config{1, 1}, share);
    INFO("CPU share " << share);
    REQUIRE(compare_outputs(s, args, want).ok);
    CHECK(r.h2d_ms > 0);
    CHECK((r.gpu.work_groups > 0) == (share < 1.0));
    if (r.gpu.work_groups > 0) CHECK(r.d2h_ms > 0);
    if (r.gpu.work_groups > 0 && r.cpu.work_groups > 0) CHECK(r.merge_ms > 0);
  }
  for (const Config& cfg : {Config{1, 1}, Config{0.25, 1}, Config{0, 1}}) {  // dynamic, repeated launches
    for (int rep = 0; rep < 2; ++rep) {
      auto args = make_args(s);
      ex.launch(args, cfg);
      INFO("config " << to_string(cfg) << " launch " << rep);
      REQUIRE(compare_outputs(s, args, want).ok);
    }
  }
}

TEST_CASE("a kernel with few work-groups runs on the CPU in finer ones when it cannot observe them") {
  const Spec s = saxpy_spec(4 * 256, 256);  // 4 work-groups of 256: too few to share
  auto want = make_args(s);
  saxpy_reference(s, want);
  for (MemoryMode mode : {MemoryMode::zero_copy, MemoryMode::copy}) {
    ExecutorOptions o;
    o.memory = mode;
    Executor ex(s, kSaxpy, two_devices(), o);
    for (const auto& cfg : Grid{}.configs()) {
      auto args = make_args(s);
      const auto r = ex.launch(args, cfg);
      INFO(memory_mode_name(mode) << " config " << to_string(cfg));
      REQUIRE(compare_outputs(s, args, want).ok);
      CHECK(r.cpu.work_items + r.gpu.work_items == 1024);
      CHECK_THAT(r.note, Catch::Contains("CPU work-groups of"));
    }
    for (double share : {0.1, 0.3, 0.55, 0.9}) {  // static splits inside a spec work-group: the GPU's head piece
      auto args = make_args(s);
      const auto r = ex.launch_static(args, Config{1, 1}, share);
      INFO(memory_mode_name(mode) << " share " << share);
      REQUIRE(compare_outputs(s, args, want).ok);
      CHECK(r.cpu.work_items > 0);
      CHECK(r.gpu.work_items > 0);
      CHECK(r.cpu.work_items + r.gpu.work_items == 1024);
    }
  }
  // A kernel that reads its group id keeps the spec's work-groups.
  const char* grouped = R"CL(
__kernel void grouped(__global float* y, __global const float* x, float a, int n) {
  int i = get_group_id(0) * 256 + get_local_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
)CL";
  Spec g = s;
  g.kernel_name = "grouped";
  Executor ex(g, grouped, two_devices());
  auto args = make_args(g);
  const auto r = ex.launch(args, Config{1, 1});
  REQUIRE(compare_outputs(g, args, want).ok);
  CHECK_THAT(r.note, !Catch::Contains("CPU work-groups of"));
  CHECK(r.cpu.work_groups + r.gpu.work_groups == 4);
}

TEST_CASE("an executor rebound to other sizes of its kernel runs them correctly") {
  const Spec first = saxpy_spec(1000, 64);
  ExecutorOptions o;
  o.memory = MemoryMode::copy;
  Executor ex(first, kSaxpy, two_devices(), o);
  for (const auto& [n, local] : std::vector<std::pair<size_t, size_t>>{{1000, 64}, {77777, 32}, {4 * 256, 256}}) {
    const Spec s = saxpy_spec(n, local);
    ex.rebind(s);
    auto want = make_args(s);
    saxpy_reference(s, want);
    for (const Config& cfg : {Config{1, 1}, Config{0.5, 0.25}, Config{0, 1}}) {
      auto args = make_args(s);
      const auto r = ex.launch(args, cfg);
      INFO("n " << n << " config " << to_string(cfg));
      REQUIRE(compare_outputs(s, args, want).ok);
      CHECK(r.cpu.work_items + r.gpu.work_items == s.global_items());
    }
  }
  Spec other = first;
  other.kernel_name = "other";
  CHECK_THROWS_WITH(ex.rebind(other), Catch::Contains("make a new executor"));
}

TEST_CASE("on a long run both devices take work and chunks adapt") {
  const char* heavy = R"CL(
__kernel void heavy(__global float* y, int iters) {
  int i = get_global_id(0);
  float v = y[i];
  for (int k = 0; k < iters; ++k) v = v * 0.999f + 0.001f;
  y[i] = v;
}
)CL";
  Spec s;
  s.name = "heavy";
  s.kernel_name = "heavy";
  s.global = {1 << 16};
  s.local = {64};
  s.args = {{"y", ArgKind::buffer, ElemType::f32, 1 << 16, 0, Access::read_write, true, {}},
            {"iters", ArgKind::scalar, ElemType::i32, 0, 2000, Access::read, false, {}}};
  Executor ex(s, heavy, two_devices());
  auto single = make_args(s);
  ex.launch(single, Config{1, 0});
  auto args = make_args(s);
  const auto r = ex.launch(args, Config{1, 1});
  CHECK(compare_outputs(s, args, single).ok);
  CHECK(r.cpu.work_groups > 0);
  CHECK(r.gpu.work_groups > 0);
  CHECK(r.cpu.chunks + r.gpu.chunks > 2);
  CHECK(r.cpu.work_groups + r.gpu.work_groups == 1024);
}

TEST_CASE("a 3D launch and a chosen local size run correctly") {
  const char* src = R"CL(
__kernel void idx3(__global int* o) {
  size_t i = (get_global_id(2) * get_global_size(1) + get_global_id(1)) * get_global_size(0) + get_global_id(0);
  o[i] = (int)(get_group_id(2) * 10000 + get_group_id(1) * 100 + get_group_id(0));
}
)CL";
  Spec s;
  s.name = "idx3";
  s.kernel_name = "idx3";
  s.global = {8, 6, 10};
  s.local = {4, 3, 2};
  s.args = {{"o", ArgKind::buffer, ElemType::i32, 480, 0, Access::write, true, {}}};
  Executor ex(s, src, two_devices());
  auto want = make_args(s);
  for (size_t z = 0; z < 10; ++z)
    for (size_t y = 0; y < 6; ++y)
      for (size_t x = 0; x < 8; ++x)
        want[0].as<int>()[(z * 6 + y) * 8 + x] = int((z / 2) * 10000 + (y / 3) * 100 + x / 4);
  for (const auto& cfg : {Config{1, 1}, Config{0.5, 0.5}, Config{0, 1}, Config{1, 0}}) {
    auto args = make_args(s);
    ex.launch(args, cfg);
    INFO(to_string(cfg));
    CHECK(compare_outputs(s, args, want).ok);
  }
}

TEST_CASE("concurrent launches from several threads are safe") {
  const Spec s = saxpy_spec(20000, 64);
  auto want = make_args(s);
  saxpy_reference(s, want);
  Executor ex(s, kSaxpy, two_devices());
  std::vector<std::thread> ts;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      auto args = make_args(s);
      ex.launch(args, Config{0.5, 0.5});
      ok[size_t(t)] = compare_outputs(s, args, want).ok ? 1 : 0;
    });
  for (auto& t : ts) t.join();
  CHECK(ok == std::vector<int>{1, 1, 1, 1});
}

TEST_CASE("bad launches are refused with names") {
  const Spec s = saxpy_spec(1000, 64);
  auto sel = two_devices();
  sel.gpu.reset();
  Executor ex(s, kSaxpy, sel);
  auto args = make_args(s);
  CHECK_THROWS_WITH(ex.launch(args, Config{0, 1}), Catch::Contains("needs a GPU device"));
  std::vector<ArgData> few(1);
  CHECK_THROWS_WITH(ex.launch(few, Config{1, 0}), Catch::Contains("1 arguments given, the spec has 4"));
  Spec bad = s;
  bad.args.pop_back();
  Executor ex2(bad, kSaxpy, two_devices());
  auto a2 = make_args(bad);
  CHECK_THROWS_WITH(ex2.launch(a2, Config{1, 0}), Catch::Contains("has 4 arguments, the spec gives 3"));
}

TEST_CASE("static splits run exactly the asked share on each device") {
  const Spec s = saxpy_spec(64 * 100, 64);  // 100 work-groups
  auto want = make_args(s);
  saxpy_reference(s, want);
  Executor ex(s, kSaxpy, two_devices());
  for (double share : {0.0, 0.05, 0.3, 0.95, 1.0}) {
    auto args = make_args(s);
    const auto r = ex.launch_static(args, Config{1, 1}, share);
    INFO("share " << share);
    CHECK(compare_outputs(s, args, want).ok);
    CHECK(r.cpu.work_groups == size_t(std::lround(share * 100)));
    CHECK(r.gpu.work_groups == 100 - r.cpu.work_groups);
    CHECK(r.cpu.chunks <= 1);
    CHECK(r.gpu.chunks <= 1);
  }
  auto args = make_args(s);
  CHECK_THROWS_WITH(ex.launch_static(args, Config{1, 1}, 1.5), Catch::Contains("not in [0,1]"));
}
