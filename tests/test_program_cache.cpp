// Builds only what a launch uses, once: an executor builds the programs of the sides its configuration runs at
// their first use, a second executor or a second process gets them from the program cache on disk, a corrupt or
// unwritable cache only means a build from source, and one executor serves every shape of a kernel (rebind).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "coexec_support.hpp"
#include "dop/program_cache.hpp"
#include "dop/runtime.hpp"
#include "support.hpp"

using namespace dop;
using dop::test::kSaxpy;
using dop::test::saxpy_reference;
using dop::test::saxpy_spec;
using dop::test::two_devices;
namespace fs = std::filesystem;

namespace {

// A fresh cache folder for one test, set as DOP_CACHE_DIR (the environment is read at every build), removed after.
struct TempCache {
  fs::path dir;
  TempCache() {
    char tmpl[] = "/tmp/dop-cache-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    dir = tmpl;
    setenv("DOP_CACHE_DIR", dir.c_str(), 1);
    unsetenv("DOP_CACHE");
  }
  ~TempCache() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::vector<fs::path> entries() const {
    std::vector<fs::path> out;
    if (fs::exists(dir / "programs"))
      for (const auto& e : fs::directory_iterator(dir / "programs")) out.push_back(e.path());
    return out;
  }
};

// saxpy's malleable form by hand: the active work-items (local id % mod < alloc) run every item of their
// work-group in a strided loop (local sizes that are multiples of dop_gpu_mod).
const char* kSaxpyMalleable = R"CL(
__kernel void saxpy(__global float* y, __global const float* x, float a, int n, int dop_gpu_mod, int dop_gpu_alloc) {
  size_t l = get_local_id(0), ls = get_local_size(0);
  if ((int)(l % dop_gpu_mod) >= dop_gpu_alloc) return;
  size_t active = ls / dop_gpu_mod * dop_gpu_alloc, rank = l / dop_gpu_mod * dop_gpu_alloc + l % dop_gpu_mod;
  size_t base = get_global_id(0) - l;
  for (size_t v = rank; v < ls; v += active) {
    int i = (int)(base + v);
    if (i < n) y[i] = a * x[i] + y[i];
  }
}
)CL";

// Launches saxpy at `cfg`, checks the result against the reference, and returns what the launch built.
LaunchResult checked_launch(Executor& ex, const Config& cfg) {
  const Spec& s = ex.spec();
  auto want = make_args(s);
  saxpy_reference(s, want);
  auto args = make_args(s);
  LaunchResult r = ex.launch(args, cfg);
  INFO(to_string(cfg));
  CHECK(compare_outputs(s, args, want).ok);
  return r;
}
int programs(const LaunchResult& r) { return r.programs_built + r.programs_from_cache; }

}  // namespace

TEST_CASE("a launch builds only the sides its configuration runs, each once") {
  TempCache cache;
  ExecutorOptions o;
  o.malleable_source = kSaxpyMalleable;
  Executor ex(saxpy_spec(5000, 64), kSaxpy, two_devices(), o);
  // 1,0: the whole CPU only (one program), compiled: the cache is empty.
  auto r = checked_launch(ex, Config{1, 0});
  CHECK(r.programs_built == 1);
  CHECK(r.programs_from_cache == 0);
  CHECK(r.build_ms > 0);
  CHECK(programs(checked_launch(ex, Config{1, 0})) == 0);  // kept for later launches
  // 0,1: only the GPU's plain form, built now (so it was not built before).
  CHECK(programs(checked_launch(ex, Config{0, 1})) == 1);
  // 0.5,0.5: the CPU's one-core sub-device and the GPU's malleable form; on PoCL both are the same device type as
  // the whole CPU, so their binaries may come from the cache.
  r = checked_launch(ex, Config{0.5, 0.5});
  CHECK(r.gpu_throttled);
  CHECK(programs(r) == 2);
  CHECK(programs(checked_launch(ex, Config{1, 1})) == 0);
  CHECK(programs(checked_launch(ex, Config{0.5, 0.5})) == 0);
}

TEST_CASE("a CPU sub-device's program is stored and serves the whole CPU") {
  TempCache cache;
  {
    Executor ex(saxpy_spec(3000, 64), kSaxpy, two_devices());
    CHECK(checked_launch(ex, Config{0.5, 0}).programs_built == 1);
  }
  CHECK(cache.entries().size() == 1);
  Executor ex(saxpy_spec(3000, 64), kSaxpy, two_devices());
  const auto r = checked_launch(ex, Config{1, 0});
  CHECK(r.programs_built == 0);
  CHECK(r.programs_from_cache == 1);
}

TEST_CASE("a fresh executor at 0,1 builds only the GPU's program") {
  TempCache cache;
  Executor ex(saxpy_spec(3000, 64), kSaxpy, two_devices());
  const auto r = checked_launch(ex, Config{0, 1});
  CHECK(r.programs_built == 1);
  CHECK(r.cpu.device.empty());
  CHECK(programs(checked_launch(ex, Config{1, 0})) == 1);
}

TEST_CASE("a second executor of the same kernel gets its program from the cache on disk") {
  TempCache cache;
  const ProgramCacheStats before = program_cache_stats();
  {
    Executor ex(saxpy_spec(3000, 64), kSaxpy, two_devices());
    const auto r = checked_launch(ex, Config{1, 0});
    CHECK(r.programs_built == 1);
  }
  REQUIRE(cache.entries().size() == 1);
  CHECK(cache.entries()[0].extension() == ".bin");
  Executor again(saxpy_spec(3000, 64), kSaxpy, two_devices());
  const auto r = checked_launch(again, Config{1, 0});
  CHECK(r.programs_built == 0);
  CHECK(r.programs_from_cache == 1);
  const ProgramCacheStats after = program_cache_stats();
  CHECK(after.stored == before.stored + 1);
  CHECK(after.from_cache == before.from_cache + 1);
  // Other build options are another entry.
  Spec other = saxpy_spec(3000, 64);
  other.build_options = "-DUNUSED=1";
  Executor third(other, kSaxpy, two_devices());
  auto want = make_args(other);
  saxpy_reference(other, want);
  auto args = make_args(other);
  CHECK(third.launch(args, Config{1, 0}).programs_built == 1);
  CHECK(compare_outputs(other, args, want).ok);
  CHECK(cache.entries().size() == 2);
}

TEST_CASE("an unwritable cache folder builds from source and still runs correctly") {
  TempCache cache;
  const fs::path file = cache.dir / "not-a-folder";
  std::ofstream(file) << "x";
  setenv("DOP_CACHE_DIR", (file / "sub").c_str(), 1);
  const ProgramCacheStats before = program_cache_stats();
  Executor ex(saxpy_spec(3000, 64), kSaxpy, two_devices());
  CHECK(checked_launch(ex, Config{1, 0}).programs_built == 1);
  CHECK(program_cache_stats().stored == before.stored);
}

TEST_CASE("DOP_CACHE=0 turns the program cache off") {
  TempCache cache;
  setenv("DOP_CACHE", "0", 1);
  CHECK(program_cache_dir().empty());
  for (int i = 0; i < 2; ++i) {
    Executor ex(saxpy_spec(3000, 64), kSaxpy, two_devices());
    CHECK(checked_launch(ex, Config{1, 0}).programs_built == 1);
  }
  CHECK(cache.entries().empty());
  unsetenv("DOP_CACHE");
}

TEST_CASE("the cache folder follows DOP_CACHE_DIR, then XDG_CACHE_HOME, then HOME") {
  TempCache cache;
  CHECK(program_cache_dir() == (cache.dir / "programs").string());
  unsetenv("DOP_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/some/xdg", 1);
  CHECK(program_cache_dir() == "/some/xdg/dop/programs");
  unsetenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string saved = home ? home : "";
  setenv("HOME", "/some/home", 1);
  CHECK(program_cache_dir() == "/some/home/.cache/dop/programs");
  setenv("HOME", saved.c_str(), 1);
}

TEST_CASE("one executor serves every shape of a 3D kernel, building each size once") {
  TempCache cache;
  const char* src = R"CL(
__kernel void idx3(__global int* o) {
  size_t i = (get_global_id(2) * get_global_size(1) + get_global_id(1)) * get_global_size(0) + get_global_id(0);
  o[i] = (int)(get_group_id(2) * 10000 + get_group_id(1) * 100 + get_group_id(0) + get_global_size(2) * 1000000);
}
)CL";
  auto spec3 = [](size_t gx, size_t gy, size_t gz, size_t lx, size_t ly, size_t lz) {
    Spec s;
    s.name = s.kernel_name = "idx3";
    s.global = {gx, gy, gz};
    s.local = {lx, ly, lz};
    s.args = {{"o", ArgKind::buffer, ElemType::i32, gx * gy * gz, 0, Access::write, true, {}}};
    return s;
  };
  auto expected = [](const Spec& s) {
    auto want = make_args(s);
    const size_t gx = s.global[0], gy = s.global[1], gz = s.global[2];
    for (size_t z = 0; z < gz; ++z)
      for (size_t y = 0; y < gy; ++y)
        for (size_t x = 0; x < gx; ++x)
          want[0].as<int>()[(z * gy + y) * gx + x] =
              int((z / s.local[2]) * 10000 + (y / s.local[1]) * 100 + x / s.local[0] + gz * 1000000);
    return want;
  };
  const std::vector<Spec> shapes = {spec3(8, 6, 10, 4, 3, 2), spec3(16, 4, 24, 8, 2, 4), spec3(8, 6, 10, 4, 3, 2),
                                    spec3(4, 4, 6, 2, 2, 3)};
  Executor ex(shapes[0], src, two_devices());
  for (size_t k = 0; k < shapes.size(); ++k) {
    const Spec& s = shapes[k];
    ex.rebind(s);
    const auto want = expected(s);
    int built = 0;
    for (const auto& cfg : {Config{1, 1}, Config{0.5, 0.5}, Config{1, 0}}) {
      auto args = make_args(s);
      const auto r = ex.launch(args, cfg);
      built += programs(r);
      INFO("shape " << k << " config " << to_string(cfg));
      CHECK(compare_outputs(s, args, want).ok);
    }
    INFO("shape " << k);
    if (k == 2)
      CHECK(built == 0);  // seen before: nothing is built again
    else
      CHECK(built == 3);  // the whole CPU, one core and the GPU at this size (a build constant of 3D kernels)
  }
}

TEST_CASE("a 1D kernel rebound to other sizes and back builds nothing again") {
  TempCache cache;
  Executor ex(saxpy_spec(1000, 64), kSaxpy, two_devices());
  CHECK(programs(checked_launch(ex, Config{1, 1})) == 2);
  for (const auto& [n, local] : std::vector<std::pair<size_t, size_t>>{{77777, 32}, {1000, 64}, {4096, 256}}) {
    ex.rebind(saxpy_spec(n, local));
    INFO("n " << n);
    CHECK(programs(checked_launch(ex, Config{1, 1})) == 0);
  }
  Spec other = saxpy_spec(1000, 64);
  other.args[3].kind = ArgKind::buffer;
  CHECK_THROWS_WITH(ex.rebind(other), Catch::Contains("argument kinds"));
}

// The program cache across processes, as a user meets it: `dop run` twice.
TEST_CASE("a second dop run process compiles nothing (the cache serves it) and a corrupt entry is rebuilt") {
  using dop::test::dop_binary;
  using dop::test::run_command;
  TempCache cache;
  const std::string spec = std::string(DOP_SOURCE_DIR) + "/kernels/gemm/gemm_small_n100x90x110_wg8x8.json";
  const std::string cmd =
      "DOP_CACHE_DIR=" + cache.dir.string() + " " + dop_binary() + " run " + spec + " --config 1,0 --validate --json";
  auto run = [&] {
    const auto r = run_command(cmd);
    INFO(r.out);
    REQUIRE(r.rc == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["validation"]["ok"] == true);
    CHECK(j["programs"]["cache_dir"] == (cache.dir / "programs").string());
    return j["programs"];
  };
  auto p = run();
  CHECK(p["built"] == 1);
  CHECK(p["from_cache"] == 0);
  p = run();
  CHECK(p["built"] == 0);
  CHECK(p["from_cache"] == 1);

  // Truncated, then overwritten in the middle (same length, checksum wrong): ignored, removed, rebuilt and stored.
  const auto entries = cache.entries();
  REQUIRE(entries.size() == 1);
  const fs::path entry = entries[0];
  const auto size = fs::file_size(entry);
  for (int damage = 0; damage < 2; ++damage) {
    INFO("damage " << damage);
    if (damage == 0) {
      fs::resize_file(entry, size / 2);
    } else {
      std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(std::streamoff(size - 100));
      f.write("garbage garbage garbage", 23);
    }
    const auto r = run_command("DOP_LOG=1 " + cmd);  // the log line on stderr comes before the JSON
    INFO(r.out);
    REQUIRE(r.rc == 0);
    CHECK_THAT(r.out, Catch::Contains("program cache: ignored and removed"));
    const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
    CHECK(j["validation"]["ok"] == true);
    CHECK(j["programs"]["built"] == 1);
    CHECK(fs::exists(entry));  // stored again
    CHECK(run()["from_cache"] == 1);
  }
}
