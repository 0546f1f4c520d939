// Memory on a discrete GPU, on PoCL with two devices: footprints (which slices of a buffer a chunk needs) and the
// copies made from them, resident data, and launches at the configuration a model chooses.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <memory>

#include "coexec_support.hpp"
#include "dop/runtime.hpp"

using namespace dop;
using dop::test::kSaxpy;
using dop::test::saxpy_reference;
using dop::test::saxpy_spec;
using dop::test::two_devices;

namespace {

// What the analysis proves for saxpy (docs/features.md, "Memory footprint"): y and x at 4 * gid.
const char* kSaxpyFootprint = R"J({"footprint": {
  "args": {"y": {"whole": false, "accesses": [{"write": false, "bytes": 4, "terms": [[4, "get_global_id(0)"]]},
                                              {"write": true, "bytes": 4, "terms": [[4, "get_global_id(0)"]]}]},
           "x": {"whole": false, "accesses": [{"write": false, "bytes": 4, "terms": [[4, "get_global_id(0)"]]}]}},
  "ranges": {"get_global_id(0)": ["gid_lo_0", "gid_hi_0"]}}})J";

// Rows mirrored: out[y][x] = 2 * in[y][x] + in[y][w - 1 - x]. The footprint has a negative coefficient and a
// second dimension whose whole range every chunk covers.
const char* kMirror = R"CL(
__kernel void mirror(__global const int* in, __global int* out, int w) {
  size_t x = get_global_id(0), y = get_global_id(1);
  out[y * w + x] = 2 * in[y * w + x] + in[y * w + (w - 1 - x)];
}
)CL";
const char* kMirrorFootprint = R"J({"footprint": {
  "args": {"in": {"whole": false, "accesses": [
              {"write": false, "bytes": 4, "terms": [[4, "w", "get_global_id(1)"], [4, "get_global_id(0)"]]},
              {"write": false, "bytes": 4, "terms": [[4, "w", "get_global_id(1)"], [4, "w"], [-4],
                                                     [-4, "get_global_id(0)"]]}]},
           "out": {"whole": false, "accesses": [
              {"write": true, "bytes": 4, "terms": [[4, "w", "get_global_id(1)"], [4, "get_global_id(0)"]]}]}},
  "ranges": {"get_global_id(0)": ["gid_lo_0", "gid_hi_0"], "get_global_id(1)": ["gid_lo_1", "gid_hi_1"],
             "w": ["w", "w"]}}})J";

Spec mirror_spec(size_t w, size_t h) {
  ArgSpec in = dop::test::buffer_arg("in", ElemType::i32, w * h, Access::read, false, Init::Fill::random, 3);
  in.init.min = -1000;
  in.init.max = 1000;
  return dop::test::kernel_spec("mirror", {w, h}, {16, 4},
                                {in, dop::test::buffer_arg("out", ElemType::i32, w * h, Access::write, true),
                                 dop::test::scalar_arg("w", ElemType::i32, double(w))});
}

void mirror_reference(const Spec& s, std::vector<ArgData>& a) {
  const size_t w = s.global[0], h = s.global[1];
  for (size_t y = 0; y < h; ++y)
    for (size_t x = 0; x < w; ++x)
      a[1].as<int>()[y * w + x] = 2 * a[0].as<int>()[y * w + x] + a[0].as<int>()[y * w + (w - 1 - x)];
}

}  // namespace

TEST_CASE("footprints: parsed from features JSON and evaluated per chunk by interval arithmetic") {
  const Spec s = mirror_spec(64, 40);
  const auto args = make_args(s);
  const Footprint fp = parse_footprint(kMirrorFootprint, "mirror.json");
  REQUIRE(fp.args.size() == 2);
  CHECK(fp.atoms.size() == 3);
  // Rows [10, 20): in covers rows 10..19 whole (the mirrored access spans the row), out the same bytes.
  auto r = footprint_ranges(fp, s, args, s.local, 10, 20);
  REQUIRE(r.size() == 3);
  REQUIRE(r[0].read);
  CHECK(r[0].read->lo == 10 * 64 * 4);
  CHECK(r[0].read->hi == 20 * 64 * 4);
  CHECK(r[0].write->empty());  // never written
  REQUIRE(r[1].write);
  CHECK(r[1].write->lo == 10 * 64 * 4);
  CHECK(r[1].write->hi == 20 * 64 * 4);
  CHECK(r[1].read->empty());
  CHECK(!r[2].read);  // a scalar
  // The whole launch, and clamping to the buffer.
  r = footprint_ranges(fp, s, args, s.local, 0, 40);
  CHECK(r[0].read->lo == 0);
  CHECK(r[0].read->hi == int64_t(s.args[0].bytes()));
  // A footprint whose atom cannot be evaluated (a float argument) leaves the buffer unbounded.
  const char* float_atom = R"J({"footprint": {"args": {"y": {"whole": false, "accesses": [
      {"bytes": 4, "terms": [[4, "a"]]}]}}, "ranges": {"a": ["a", "a"]}}})J";
  const Spec sx = saxpy_spec(1000, 64);
  const auto ax = make_args(sx);
  const auto rx = footprint_ranges(parse_footprint(float_atom, "f.json"), sx, ax, sx.local, 0, 64);
  CHECK(!rx[0].read);
  CHECK(!rx[1].read);  // not listed: whole
  // No footprint at all: empty, every buffer whole.
  CHECK(parse_footprint(R"J({"features": {"loops": 1}})J", "k.json").empty());
  // Malformed footprints are refused with the file and what is wrong.
  CHECK_THROWS_WITH(parse_footprint("{", "k.json"), Catch::Contains("k.json") && Catch::Contains("not valid JSON"));
  CHECK_THROWS_WITH(parse_footprint(R"J({"footprint": {"args": {"y": {"whole": false, "accesses": [
      {"bytes": 4, "terms": [[4, "q"]]}]}}, "ranges": {}}})J",
                                    "k.json"),
                    Catch::Contains("k.json: footprint: argument 'y'") && Catch::Contains("atom 'q' has no range"));
  CHECK_THROWS_WITH(parse_footprint(R"J({"footprint": {"args": {"y": {"whole": false, "accesses": [
      {"bytes": 0, "terms": []}]}}}})J",
                                    "k.json"),
                    Catch::Contains("an access of 0 bytes"));
  CHECK_THROWS_WITH(parse_footprint(R"J({"footprint": {"args": {"y": {"whole": false, "accesses": [
      {"bytes": 4, "terms": [["x"]]}]}}, "ranges": {}}})J",
                                    "k.json"),
                    Catch::Contains("a term is not [coefficient, atom...]"));
  CHECK_THROWS_WITH(parse_footprint(R"J({"footprint": [1]})J", "k.json"), Catch::Contains("expected an object"));
}

TEST_CASE("copy mode with a footprint sends each device only its slices at all 44 configurations") {
  struct Case {
    Spec spec;
    const char* source;
    const char* footprint;
  };
  std::vector<Case> cases{{saxpy_spec(100003, 64), kSaxpy, kSaxpyFootprint},
                          {mirror_spec(64, 400), kMirror, kMirrorFootprint}};
  for (auto& c : cases) {
    auto want = make_args(c.spec);
    if (c.spec.name == "saxpy")
      saxpy_reference(c.spec, want);
    else
      mirror_reference(c.spec, want);
    ExecutorOptions o;
    o.memory = MemoryMode::copy;
    o.footprint = parse_footprint(c.footprint, c.spec.name);
    o.poison_gpu_buffers = true;  // a byte the GPU needed and did not get is garbage, not a stale right value
    Executor ex(c.spec, c.source, two_devices(), o);
    for (const auto& cfg : Grid{}.configs()) {
      auto args = make_args(c.spec);
      const auto r = ex.launch(args, cfg);
      const auto cmp = compare_outputs(c.spec, args, want);
      INFO(c.spec.name << " config " << to_string(cfg) << ": " << cmp.first);
      REQUIRE(cmp.ok);
      CHECK(r.cpu.work_groups + r.gpu.work_groups == c.spec.work_groups());
    }
    // Static splits: the GPU receives exactly its share's slices and returns exactly what it wrote.
    size_t in_bytes = 0, out_bytes = 0;
    for (const auto& a : c.spec.args) {
      if (a.kind != ArgKind::buffer) continue;
      in_bytes += a.bytes();
      if (a.access != Access::read) out_bytes += a.bytes();
    }
    for (double share : {0.0, 0.5, 0.75}) {
      auto args = make_args(c.spec);
      const auto r = ex.launch_static(args, Config{1, 1}, share);
      INFO(c.spec.name << " share " << share);
      REQUIRE(compare_outputs(c.spec, args, want).ok);
      const double gpu_items = double(r.gpu.work_items) / double(c.spec.global_items());
      CHECK(std::abs(double(r.h2d_bytes) - gpu_items * double(in_bytes)) <= 4 * 64 * 8);
      CHECK(std::abs(double(r.d2h_bytes) - gpu_items * double(out_bytes)) <= 4 * 64 * 8);
      if (share == 0.0) CHECK(r.h2d_bytes == in_bytes);
    }
  }
}

TEST_CASE("a footprint that misses bytes the kernel reads gives wrong results: the poisoned test can fail") {
  const Spec s = saxpy_spec(64 * 100, 64);
  auto want = make_args(s);
  saxpy_reference(s, want);
  // x claimed to be read only at element 0.
  const char* wrong = R"J({"footprint": {
    "args": {"y": {"whole": false, "accesses": [{"write": true, "bytes": 4, "terms": [[4, "get_global_id(0)"]]},
                                                {"bytes": 4, "terms": [[4, "get_global_id(0)"]]}]},
             "x": {"whole": false, "accesses": [{"bytes": 4, "terms": []}]}},
    "ranges": {"get_global_id(0)": ["gid_lo_0", "gid_hi_0"]}}})J";
  ExecutorOptions o;
  o.memory = MemoryMode::copy;
  o.footprint = parse_footprint(wrong, "wrong.json");
  o.poison_gpu_buffers = true;
  Executor ex(s, kSaxpy, two_devices(), o);
  auto args = make_args(s);
  const auto r = ex.launch_static(args, Config{1, 1}, 0.5);
  CHECK(r.gpu.work_groups == 50);
  CHECK_FALSE(compare_outputs(s, args, want).ok);
}

TEST_CASE("resident data: inputs on the GPU before the timed region and outputs merged after it") {
  const Spec s = saxpy_spec(200003, 64);
  auto want = make_args(s);
  saxpy_reference(s, want);
  ExecutorOptions o;
  o.memory = MemoryMode::resident;
  o.poison_gpu_buffers = true;
  Executor ex(s, kSaxpy, two_devices(), o);
  for (const auto& cfg : Grid{}.configs()) {
    auto args = make_args(s);
    const auto r = ex.launch(args, cfg);
    const auto cmp = compare_outputs(s, args, want);
    INFO("config " << to_string(cfg) << ": " << cmp.first);
    REQUIRE(cmp.ok);
    CHECK(r.memory == MemoryMode::resident);
    CHECK(r.h2d_ms == 0);  // not timed
    CHECK(r.h2d_bytes == 0);
    if (r.gpu.work_groups > 0) CHECK(r.d2h_bytes == s.args[0].bytes());
  }
  CHECK(parse_memory_mode("resident") == MemoryMode::resident);
  CHECK_THROWS_WITH(parse_memory_mode("shared"), Catch::Contains("auto, zero-copy, copy, resident, pinned or svm"));
}

TEST_CASE("launch_auto runs the configuration the model picks for the launch shape the executor runs") {
  auto predictor = std::make_shared<pred::Predictor>(
      pred::Predictor::load(std::string(DOP_SOURCE_DIR) + "/tests/data/models/gbt.json"));
  AutoModel m;
  m.predictor = predictor;
  for (const auto& k : predictor->model().code_keys()) m.code.values[k] = 2;
  m.kernel_id = "saxpy-test";
  Spec s = saxpy_spec(64 * 300, 64);
  s.local.clear();  // the executor chooses the work-group size
  ExecutorOptions o;
  o.model = m;
  Executor ex(s, kSaxpy, two_devices(), o);
  const auto local = ex.local_size();
  REQUIRE(local.size() == 1);
  CHECK(local[0] <= 64);
  CHECK(s.global[0] % local[0] == 0);
  auto args = make_args(s);
  const pred::Decision d = ex.decide(args);
  // The decision was taken (and memoised) for the executor's local size, not for the global size, with the spec's
  // buffer bytes and the data on the host (memory mode auto).
  pred::LaunchShape shape;
  shape.global[0] = s.global[0];
  shape.local[0] = local[0];
  shape.in_bytes = s.in_bytes();
  shape.out_bytes = s.out_bytes();
  REQUIRE(shape.in_bytes > 0);
  const pred::ArgValues values{{"n", int64_t(64 * 300)}};
  CHECK(predictor->cached("saxpy-test", shape, values));
  pred::LaunchShape wrong = shape;
  wrong.local[0] = s.global[0];
  CHECK_FALSE(predictor->cached("saxpy-test", wrong, values));
  const pred::Decision direct = predictor->decide(m.code, shape, values);
  CHECK(d.config.cpu == direct.config.cpu);
  CHECK(d.config.gpu == direct.config.gpu);
  auto want = make_args(s);
  saxpy_reference(s, want);
  const LaunchResult r = ex.launch_auto(args);
  CHECK(r.automatic);
  CHECK(r.config == Config{d.config.cpu, d.config.gpu});
  CHECK(r.predicted == d.predicted);
  CHECK(r.decide_us >= 0);
  CHECK(compare_outputs(s, args, want).ok);
  // Without a model, auto launches are refused.
  Executor plain(s, kSaxpy, two_devices());
  CHECK_THROWS_WITH(plain.launch_auto(args), Catch::Contains("has no model"));
  // An executor whose arguments are in page-locked memory asks with the data there (data_pinned), a decision of its
  // own; one with resident data asks with it on the GPU.
  for (const MemoryMode mode : {MemoryMode::pinned, MemoryMode::resident}) {
    ExecutorOptions po = o;
    po.memory = mode;
    Executor px(s, kSaxpy, two_devices(), po);
    auto pargs = px.make_args();
    px.decide(pargs);
    pred::LaunchShape where = shape;
    where.data_pinned = mode == MemoryMode::pinned;
    where.data_on_gpu = mode == MemoryMode::resident;
    CHECK(predictor->cached("saxpy-test", where, values));
  }
}

TEST_CASE("pinned memory: the GPU's DMA reads read-only inputs in place, and results match at all 44 configurations") {
  const Spec s = saxpy_spec(100003, 64);
  auto want = make_args(s);
  saxpy_reference(s, want);
  for (const bool with_footprint : {false, true}) {
    ExecutorOptions o;
    o.memory = MemoryMode::pinned;
    if (with_footprint) o.footprint = parse_footprint(kSaxpyFootprint, "saxpy");
    o.poison_gpu_buffers = true;  // a byte the GPU needed and did not get is garbage, not a stale right value
    Executor ex(s, kSaxpy, two_devices(), o);
    const auto initial = make_args(s);
    auto args = ex.place(initial);
    for (size_t i = 0; i < s.args.size(); ++i) {
      if (s.args[i].kind != ArgKind::buffer) continue;
      CHECK(args[i].storage.get_allocator().memory != nullptr);  // in the executor's page-locked memory
      CHECK(reinterpret_cast<std::uintptr_t>(args[i].data()) % 4096 == 0);
    }
    const size_t x_bytes = s.args[1].bytes();  // saxpy(y, x, a): x is read-only, y read and written
    for (const auto& cfg : Grid{}.configs()) {
      reset_writable(args, initial);
      const auto r = ex.launch(args, cfg);
      const auto cmp = compare_outputs(s, args, want);
      INFO("footprint " << with_footprint << ", config " << to_string(cfg) << ": " << cmp.first);
      REQUIRE(cmp.ok);
      CHECK(r.memory == MemoryMode::pinned);
      CHECK(r.h2d_in_place_bytes <= r.h2d_bytes);
      if (cfg.cpu == 0) {
        // The GPU alone receives all of x from where it is, and y (written) staged.
        CHECK(r.h2d_in_place_bytes == x_bytes);
        CHECK(r.h2d_bytes == x_bytes + s.args[0].bytes());
      }
    }
    // Arguments in ordinary host memory are staged as in copy mode, with the same results.
    auto host_args = make_args(s);
    const auto r = ex.launch(host_args, Config{0, 1});
    REQUIRE(compare_outputs(s, host_args, want).ok);
    CHECK(r.h2d_in_place_bytes == 0);
    CHECK(r.h2d_bytes == x_bytes + s.args[0].bytes());
  }
  CHECK(parse_memory_mode("pinned") == MemoryMode::pinned);
  CHECK(std::string(memory_mode_name(MemoryMode::pinned)) == "pinned");
}

TEST_CASE("staging memory refused: the GPU's copies go through pageable memory, results match and launches say so") {
  // DOP_TEST_REFUSE_PINNED: the implementation refuses page-locked memory (PoCL never does), so copy mode stages
  // inputs and reads outputs back through pageable memory, at every configuration, with and without a footprint.
  REQUIRE(setenv("DOP_TEST_REFUSE_PINNED", "1", 1) == 0);
  const Spec s = saxpy_spec(100003, 64);
  auto want = make_args(s);
  saxpy_reference(s, want);
  for (const bool with_footprint : {false, true}) {
    ExecutorOptions o;
    o.memory = MemoryMode::copy;
    if (with_footprint) o.footprint = parse_footprint(kSaxpyFootprint, "saxpy");
    o.poison_gpu_buffers = true;
    Executor ex(s, kSaxpy, two_devices(), o);
    const auto initial = make_args(s);
    auto args = initial;
    for (const auto& cfg : Grid{}.configs()) {
      args = initial;
      const auto r = ex.launch(args, cfg);
      const auto cmp = compare_outputs(s, args, want);
      INFO("footprint " << with_footprint << ", config " << to_string(cfg) << ": " << cmp.first << "; " << r.note);
      REQUIRE(cmp.ok);
      if (r.gpu.work_groups > 0)
        CHECK_THAT(r.note, Catch::Contains("page-locked staging memory refused (") &&
                               Catch::Contains("bytes for argument '") && Catch::Contains("DOP_TEST_REFUSE_PINNED") &&
                               Catch::Contains("the GPU's copies went through pageable memory"));
      else
        CHECK_THAT(r.note, !Catch::Contains("page-locked staging memory refused"));
    }
  }
  unsetenv("DOP_TEST_REFUSE_PINNED");
}

TEST_CASE("pinned memory: page-locked arguments outlive their executor, and without a GPU they are host memory") {
  const Spec s = saxpy_spec(64 * 50, 64);
  auto want = make_args(s);
  saxpy_reference(s, want);
  std::vector<ArgData> args;
  {
    ExecutorOptions o;
    o.memory = MemoryMode::pinned;
    Executor ex(s, kSaxpy, two_devices(), o);
    args = ex.make_args();
    ex.launch(args, Config{0.5, 1});
  }
  CHECK(compare_outputs(s, args, want).ok);  // still readable after the executor is gone
  cl::Selection cpu_only = two_devices();
  cpu_only.gpu.reset();
  ExecutorOptions o;
  o.memory = MemoryMode::pinned;
  Executor ex(s, kSaxpy, cpu_only, o);
  auto host = ex.make_args();
  CHECK(host[0].storage.get_allocator().memory == nullptr);
  const auto r = ex.launch(host, Config{1, 0});
  CHECK(compare_outputs(s, host, want).ok);
  CHECK(r.h2d_bytes == 0);
}
