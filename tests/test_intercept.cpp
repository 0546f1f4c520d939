// libdop_intercept.so under an unmodified OpenCL application (tests/apps/cl_app.c, plain C linked only against
// OpenCL): outputs exactly right at every configuration, DOP_LOG showing where dop ran it, fallback for what it
// does not support, and `dop exec`.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support.hpp"

using dop::test::run_command;

namespace {

std::string app() { return DOP_TEST_CL_APP; }

// LD_PRELOAD for the interposer; under DOP_SANITIZE the ASan runtime must come first.
std::string preload() {
  const std::string first = DOP_INTERCEPT_PRELOAD_FIRST;
  return (first.empty() ? "" : first + ":") + DOP_INTERCEPT_LIB;
}

dop::test::CommandResult run_app(const std::string& config, const std::string& args, bool log = true) {
  std::string cmd = "LD_PRELOAD='" + preload() + "'";
  if (!config.empty()) cmd += " DOP_CONFIG=" + config;
  cmd += log ? " DOP_LOG=1" : " DOP_LOG=0";
  return run_command(cmd + " '" + app() + "' " + args);
}

// The interposer's log lines (stderr) about one kernel.
std::vector<std::string> log_lines(const std::string& out, const std::string& kernel) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < out.size()) {
    size_t end = out.find('\n', pos);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(pos, end - pos);
    if (line.rfind("dop-intercept: ", 0) == 0 && line.find("kernel=" + kernel + " ") != std::string::npos)
      lines.push_back(line);
    pos = end + 1;
  }
  return lines;
}

// The value of "key=" in a log line ("" when absent).
std::string field(const std::string& line, const std::string& key) {
  const size_t p = line.find(" " + key + "=");
  if (p == std::string::npos) return {};
  const size_t b = p + key.size() + 2;
  return line.substr(b, line.find(' ', b) - b);
}

long number(const std::string& line, const std::string& key) {
  const std::string v = field(line, key);
  return v.empty() ? -1 : std::stol(v);
}

// Every launch ran with dop at `config`, over `groups` work-groups in all, none on a device the configuration does
// not use. With `both`, each device the configuration uses ran some: only asked of compute-bound launches (a
// launch of a few milliseconds may rightly finish on one device before the other has started).
void check_ran_at(const std::vector<std::string>& lines, const std::string& config, double cpu, double gpu, long groups,
                  bool both = false) {
  for (const auto& l : lines) {
    INFO(l);
    CHECK(l.find("fallback") == std::string::npos);
    CHECK(field(l, "config") == config);
    CHECK(number(l, "cpu_wg") + number(l, "gpu_wg") == groups);
    if (cpu == 0) CHECK(number(l, "cpu_wg") == 0);
    if (gpu == 0) CHECK(number(l, "gpu_wg") == 0);
    if (both && cpu > 0) CHECK(number(l, "cpu_wg") > 0);
    if (both && gpu > 0) CHECK(number(l, "gpu_wg") > 0);
  }
}

struct Cfg {
  const char* text;
  double cpu, gpu;
};
const Cfg kConfigs[] = {{"1,0", 1, 0}, {"0,1", 0, 1}, {"0.5,0.5", 0.5, 0.5}, {"1,1", 1, 1}};

}  // namespace

TEST_CASE("intercept: the app alone is right and the interposer is silent without DOP_LOG", "[intercept]") {
  auto bare = run_command("'" + app() + "' vecadd 65536 1");
  INFO(bare.out);
  REQUIRE(bare.rc == 0);
  CHECK(bare.out.find("vecadd: OK") != std::string::npos);
  auto quiet = run_app("", "vecadd 65536 1", false);
  INFO(quiet.out);
  REQUIRE(quiet.rc == 0);
  CHECK(quiet.out.find("vecadd: OK") != std::string::npos);
  CHECK(quiet.out.find("dop-intercept") == std::string::npos);
}

TEST_CASE("intercept: 1D vecadd is exact at every DOP_CONFIG and runs where it says", "[intercept]") {
  for (const auto& c : kConfigs) {
    auto r = run_app(c.text, "vecadd 262144 2");
    INFO("DOP_CONFIG=" << c.text << "\n" << r.out);
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("vecadd: OK") != std::string::npos);
    const auto lines = log_lines(r.out, "vecadd");
    REQUIRE(lines.size() == 2);
    check_ran_at(lines, c.text, c.cpu, c.gpu, 262144 / 64);
  }
}

TEST_CASE("intercept: a compute-bound kernel runs on both devices where the configuration uses both", "[intercept]") {
  for (const auto& c : kConfigs) {
    auto r = run_app(c.text, "poly");
    INFO("DOP_CONFIG=" << c.text << "\n" << r.out);
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("poly: OK") != std::string::npos);
    const auto lines = log_lines(r.out, "poly");
    REQUIRE(lines.size() == 1);
    check_ran_at(lines, c.text, c.cpu, c.gpu, (1 << 18) / 64, true);
  }
}

TEST_CASE("intercept: default configuration is all cores and the whole GPU", "[intercept]") {
  auto r = run_app("", "vecadd 65536 1");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("vecadd: OK") != std::string::npos);
  const auto lines = log_lines(r.out, "vecadd");
  REQUIRE(lines.size() == 1);
  CHECK(field(lines[0], "config") == "1,1");
}

TEST_CASE("intercept: 2D launch with a read-write buffer is exact", "[intercept]") {
  for (const char* config : {"0.5,0.5", "1,1", "0,1"}) {
    auto r = run_app(config, "rw2d");
    INFO("DOP_CONFIG=" << config << "\n" << r.out);
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("rw2d: OK") != std::string::npos);
    const auto lines = log_lines(r.out, "rw2d");
    REQUIRE(lines.size() == 2);
    const std::string cfg = config;
    check_ran_at(lines, cfg, cfg == "0,1" ? 0 : 1, 1, (96 / 16) * (256 / 4));
    CHECK(field(lines[0], "global") == "96x256");
    CHECK(field(lines[0], "local") == "16x4");
  }
}

TEST_CASE("intercept: copy and svm memory modes give the application its results", "[intercept]") {
  for (const std::string mode : {"copy", "svm"}) {
    auto r = run_command("DOP_MEMORY=" + mode + " LD_PRELOAD='" + preload() + "' DOP_CONFIG=0.5,0.5 DOP_LOG=1 '" +
                         app() + "' rw2d");
    INFO(mode << ": " << r.out);
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("rw2d: OK") != std::string::npos);
    const auto lines = log_lines(r.out, "rw2d");
    REQUIRE(lines.size() == 2);
    for (const auto& l : lines) CHECK(field(l, "memory") == mode);
    check_ran_at(lines, "0.5,0.5", 0.5, 0.5, (96 / 16) * (256 / 4));
  }
}

// Residency: dop's results stay in its host copies between launches and reach the application's buffers when it
// reads, maps or copies them, or runs a kernel of its own on them; the application's writes, fills, copies and maps
// invalidate dop's copies. cl_app checks every step exactly against a host mirror.
TEST_CASE("intercept: buffers stay where they are between launches and the application always sees its data",
          "[intercept]") {
  for (const auto& c : kConfigs) {
    auto r = run_app(c.text, "resid");
    INFO("DOP_CONFIG=" << c.text << "\n" << r.out);
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("resid: OK") != std::string::npos);
    const auto inc = log_lines(r.out, "inc");
    REQUIRE(inc.size() == 8);
    if (std::string(c.text) == "1,0") {  // the application's own device (pocl:0), in whole: the real enqueue
      for (const auto& l : inc) CHECK(field(l, "route") == "native");
      continue;
    }
    for (const auto& l : inc) CHECK(field(l, "route") == "dop");
    // The first launch fetches the buffer; the next two find dop's copy current and fetch nothing.
    CHECK(number(inc[0], "fetched") == 64 * 1024 * 4 + 4);
    CHECK(number(inc[1], "fetched") == 0);
    CHECK(number(inc[2], "fetched") == 0);
    // The application's writes to buffers dop's launches used go into dop's copies: the parameter, a's quarter and
    // b's first 16 elements; b's quarter behind a user event not yet set at its enqueue goes to the application's
    // buffer, in its wait list.
    std::vector<long> absorbed;
    for (size_t p = r.out.find("dop-intercept: absorbed="); p != std::string::npos;
         p = r.out.find("dop-intercept: absorbed=", p + 1))
      absorbed.push_back(number(r.out.substr(p, r.out.find('\n', p) - p), "absorbed"));
    CHECK(absorbed == std::vector<long>{4, 64 * 1024, 64});
  }
}

// Without a footprint (no forms: no bundle, no bundler) a dop launch fetches its buffers whole and leaves every byte
// of a writable one stale, and the application reads exact results (cl_app slice writes part of a slice of x).
TEST_CASE("intercept: without a footprint a launch fetches whole buffers and may write all of a writable one",
          "[intercept]") {
  const std::string dir = std::string(DOP_BINARY_DIR) + "/test_intercept_slice_whole";
  run_command("rm -rf '" + dir + "'");
  auto r = run_command("env -u DOP_BUNDLER -u DOP_BUNDLES DOP_CACHE_DIR='" + dir + "/cache' LD_PRELOAD='" + preload() +
                       "' DOP_CONFIG=0.5,0.5 DOP_LOG=1 '" + app() + "' slice 65536");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("slice: OK") != std::string::npos);
  const auto lines = log_lines(r.out, "slice");
  REQUIRE(lines.size() == 3);
  CHECK(number(lines[0], "fetched") == 2 * 65536 * 4);  // x and y whole
  CHECK(number(lines[0], "wrote") == 65536 * 4);
  for (size_t i : {1, 2}) {
    CHECK(number(lines[i], "fetched") == 0);
    CHECK(number(lines[i], "wrote") == 65536 * 4);
  }
}

// Launches on the dop route return like real ones: after the first (synchronous, so that a build error can fall
// back), clEnqueueNDRangeKernel returns before the kernel has run, and waiting for its event takes the kernel's time.
namespace {
double app_field(const std::string& out, const std::string& prefix, const std::string& key) {
  const size_t p = out.find(prefix);
  if (p == std::string::npos) return -1;
  const std::string line = out.substr(p, out.find('\n', p) - p);
  const size_t k = line.find(key + "=");
  return k == std::string::npos ? -1 : std::stod(line.substr(k + key.size() + 1));
}
}  // namespace

TEST_CASE("intercept: dop launches are asynchronous after the first, and DOP_ASYNC=0 makes them wait", "[intercept]") {
  auto r = run_app("0.5,0.5", "async 65536 3000");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("async: OK") != std::string::npos);
  const auto lines = log_lines(r.out, "spin");
  REQUIRE(lines.size() == 3);
  CHECK(field(lines[0], "async").empty());
  for (const char* launch : {"async: launch 1 ", "async: launch 2 "}) {
    const double enqueue = app_field(r.out, launch, "enqueue_ms"), wait = app_field(r.out, launch, "wait_ms");
    CHECK(enqueue >= 0);
    CHECK(enqueue * 4 < wait);  // the kernel ran after the call returned
  }
  for (size_t i = 1; i < lines.size(); ++i) CHECK(field(lines[i], "async") == "1");
  r = run_command("DOP_ASYNC=0 DOP_LOG=1 LD_PRELOAD='" + preload() + "' DOP_CONFIG=0.5,0.5 '" + app() +
                  "' async 65536 3000");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("async: OK") != std::string::npos);
  CHECK(r.out.find("async=1") == std::string::npos);
  const double enqueue = app_field(r.out, "async: launch 2 ", "enqueue_ms"),
               wait = app_field(r.out, "async: launch 2 ", "wait_ms");
  CHECK(wait * 4 < enqueue);  // the call returned when the kernel had run
}

// A second process of the same application builds nothing: dop's programs come from the cache on disk.
TEST_CASE("intercept: a second run of an application gets dop's programs from the cache", "[intercept]") {
  const std::string dir = std::string(DOP_BINARY_DIR) + "/test_intercept_cache";
  run_command("rm -rf '" + dir + "'");
  const std::string cmd = "DOP_CACHE_DIR='" + dir + "' LD_PRELOAD='" + preload() + "' DOP_CONFIG=0.5,0.5 DOP_LOG=1 '" +
                          app() + "' vecadd 65536 2";
  for (int run = 0; run < 2; ++run) {
    auto r = run_command(cmd);
    INFO("run " << run << "\n" << r.out);
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("vecadd: OK") != std::string::npos);
    const auto lines = log_lines(r.out, "vecadd");
    REQUIRE(lines.size() == 2);
    // The CPU sub-device's program and the GPU's (here both PoCL pthread devices: the second may find the first's
    // binary in the cache already).
    CHECK(number(lines[0], "built") + number(lines[0], "cached") == 2);
    if (run == 0) CHECK(number(lines[0], "built") >= 1);
    if (run == 1) CHECK(number(lines[0], "built") == 0);
    CHECK(field(lines[1], "built").empty());  // the second launch builds nothing
  }
}

// A NULL-valued argument is __local memory of that size, or a NULL buffer: dop's kernels get the same (PoCL does not
// report the application's kernels' address qualifiers; dop's own build, with its argument info, tells them apart).
TEST_CASE("intercept: a __local argument runs on dop's devices, a NULL buffer argument falls back", "[intercept]") {
  auto r = run_app("0.5,0.5", "local");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("local: OK") != std::string::npos);  // both launches exact
  auto lines = log_lines(r.out, "group_sum");
  REQUIRE(lines.size() == 2);
  for (const auto& l : lines) {
    INFO(l);
    CHECK(field(l, "route") == "dop");
    CHECK(field(l, "config") == "0.5,0.5");
    CHECK(number(l, "cpu_wg") + number(l, "gpu_wg") == 256);
  }
  r = run_app("0.5,0.5", "nullbuf");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("nullbuf: OK") != std::string::npos);
  lines = log_lines(r.out, "pick");
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], Catch::Contains("fallback: ") && (Catch::Contains("argument 1: a NULL buffer") ||
                                                         Catch::Contains("the kernel 'pick' takes a buffer there")));
}

TEST_CASE("intercept: launches from two application threads at once", "[intercept]") {
  auto r = run_app("0.5,0.5", "threads");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("threads: OK") != std::string::npos);
  const auto lines = log_lines(r.out, "vecadd");
  REQUIRE(lines.size() == 16);  // two threads, eight launches each
  for (const auto& l : lines) {
    INFO(l);
    CHECK(field(l, "config") == "0.5,0.5");
    CHECK(number(l, "cpu_wg") + number(l, "gpu_wg") >= (1 << 18) / 64);
  }
}

TEST_CASE("intercept: an invalid DOP_CONFIG falls back and stays right", "[intercept]") {
  auto r = run_app("3,1", "vecadd 65536 1");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("vecadd: OK") != std::string::npos);
  const auto lines = log_lines(r.out, "vecadd");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("fallback") != std::string::npos);
}

TEST_CASE("dop exec: runs an unmodified app under the interposer", "[intercept][cli]") {
  const std::string dop = dop::test::dop_binary();
  auto r = run_command("'" + dop + "' exec --config 0.5,0.5 --log -- '" + app() + "' vecadd 65536 1");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("vecadd: OK") != std::string::npos);
  const auto lines = log_lines(r.out, "vecadd");
  REQUIRE(lines.size() == 1);
  check_ran_at(lines, "0.5,0.5", 0.5, 0.5, 65536 / 64);

  auto bad = run_command("'" + dop + "' exec --config 2,0 -- '" + app() + "'");
  CHECK(bad.rc == 1);
  CHECK(bad.out.find("dop: error: configuration '2,0'") != std::string::npos);
  auto missing = run_command("'" + dop + "' exec -- /nonexistent/app");
  CHECK(missing.rc == 127);
  CHECK(missing.out.find("cannot run '/nonexistent/app'") != std::string::npos);
  auto none = run_command("'" + dop + "' exec --log");
  CHECK(none.rc != 0);
  // Page-locked memory is for arguments an executor allocates: refused by dop exec, and by the interposer (every
  // launch then runs natively, saying why).
  auto pinned = run_command("'" + dop + "' exec --memory pinned -- '" + app() + "' vecadd 65536 1");
  CHECK(pinned.rc == 1);
  CHECK_THAT(pinned.out, Catch::Contains("--memory pinned is for arguments made by an executor"));
  auto env =
      run_command("DOP_MEMORY=pinned '" + dop + "' exec --config 0.5,0.5 --log -- '" + app() + "' vecadd 65536 1");
  INFO(env.out);
  REQUIRE(env.rc == 0);
  CHECK(env.out.find("vecadd: OK") != std::string::npos);
  const auto fell_back = log_lines(env.out, "vecadd");
  REQUIRE(fell_back.size() == 1);
  CHECK_THAT(fell_back[0], Catch::Contains("fallback") && Catch::Contains("DOP_MEMORY=pinned"));
}

// The application on dop's GPU (it takes the first device, pocl:0), in copy mode (automatic is zero-copy over dop's
// host copies where, as on PoCL, the GPU shares host memory): a dop launch runs its GPU part in the application's
// context on the application's own buffers (gpu_mem=app), the CPU's on dop's host copies, and the
// application sees exactly its results through reads, writes, fills, copies, maps, two kernels sharing buffers, a
// kernel of its own, an out-of-order queue, and a second context. 0,1 is the application's device whole: native.
TEST_CASE("intercept: with the application on dop's GPU, dop's GPU part works on its buffers in place", "[intercept]") {
  const std::string exec = "'" + dop::test::dop_binary() + "' exec --cpu pocl:1 --gpu pocl:0 --memory copy --log ";
  for (const auto& c : kConfigs) {
    const std::string cfg = c.text;
    auto r = run_command(exec + "--config " + cfg + " -- '" + app() + "' resid");
    INFO("config " << cfg << "\n" << r.out);
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("resid: OK") != std::string::npos);
    const auto inc = log_lines(r.out, "inc"), blend = log_lines(r.out, "blend");
    REQUIRE(inc.size() == 8);
    REQUIRE(blend.size() == 3);
    if (cfg == "0,1") {
      for (const auto& l : inc) CHECK(field(l, "route") == "native");
      continue;
    }
    for (const auto& lines : {inc, blend})
      for (const auto& l : lines) {
        CHECK(field(l, "route") == "dop");
        CHECK(field(l, "gpu_mem") == "app");
        CHECK(field(l, "config") == cfg);
      }
    // The application's buffers hold the first launch's inputs: nothing is written to the GPU for it.
    CHECK(number(inc[0], "h2d") == 0);
    if (cfg == "1,0") {  // the CPU reads the buffer and the parameter once, then finds its copy current
      CHECK(number(inc[0], "fetched") == 64 * 1024 * 4 + 4);
      CHECK(number(inc[1], "fetched") == 0);
      CHECK(number(inc[2], "fetched") == 0);
    }
  }
  for (const std::string cfg : {"0.5,0.5", "1,1"}) {
    auto r = run_command(exec + "--config " + cfg + " -- '" + app() + "' contexts");
    INFO("config " << cfg << "\n" << r.out);
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("contexts: OK") != std::string::npos);
    const auto lines = log_lines(r.out, "vecadd");
    REQUIRE(lines.size() == 6);
    for (const auto& l : lines) CHECK(field(l, "gpu_mem") == "app");
  }
  // Memory modes without GPU copies of the application's buffers (automatic on PoCL: zero-copy) work on dop's own.
  auto r = run_command("'" + dop::test::dop_binary() + "' exec --cpu pocl:1 --gpu pocl:0 --log --config 0.5,0.5 -- '" +
                       app() + "' rw2d");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("rw2d: OK") != std::string::npos);
  const auto lines = log_lines(r.out, "rw2d");
  REQUIRE(lines.size() == 2);
  for (const auto& l : lines) CHECK(field(l, "gpu_mem") == "dop");
}

// A dop launch that fails part way (DOP_TEST_FAIL_CHUNK: a device's chunk fails as an enqueue error would, once):
// the application either gets the error (from its enqueue, or from the launch's event when the launch was
// asynchronous) or its buffers hold exactly what the real launch makes of them; later launches and reads are exact
// (cl_app fail checks every read against its host mirror, a launch that reported an error taken as not run). The log
// names the failure. `out` is one run's output; `errors` how many launches must report one.
namespace {
void check_failed_run(const dop::test::CommandResult& r, int errors, const std::string& logged) {
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("fail: OK errors=" + std::to_string(errors)) != std::string::npos);
  CHECK(r.out.find(logged) != std::string::npos);
  CHECK(r.out.find("DOP_TEST_FAIL_CHUNK: the ") != std::string::npos);
}

// Runs `cmd` (cl_app fail) until the knob fired at its first launch. At a configuration of both devices the dynamic
// distribution may give one device all of a launch (a GPU driver slow to start on a loaded machine leaves the CPU
// everything), so the failing device's first chunk may come in a later launch, or never: every run must still be
// exact (`fail: OK`), and at most 8 are made.
dop::test::CommandResult run_failing_first(const std::string& cmd) {
  dop::test::CommandResult r;
  for (int run = 0; run < 8; ++run) {
    r = run_command(cmd);
    INFO(r.out);
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("fail: OK") != std::string::npos);
    const auto lines = log_lines(r.out, "inc");
    if (!lines.empty() && lines[0].find("DOP_TEST_FAIL_CHUNK: the ") != std::string::npos) break;
  }
  return r;
}
}  // namespace

TEST_CASE("intercept: a dop launch that fails part way on dop's copies returns the error or leaves native results",
          "[intercept]") {
  const std::string cmd = "LD_PRELOAD='" + preload() + "' DOP_LOG=1 ";
  // Unset, the knob never fires: four dop launches, no error.
  auto r = run_command(cmd + "DOP_CONFIG=0,1 '" + app() + "' fail 4 wait");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("fail: OK errors=0") != std::string::npos);
  CHECK(log_lines(r.out, "inc").size() == 4);
  CHECK(r.out.find("DOP_TEST_FAIL_CHUNK") == std::string::npos);
  // The first launch (synchronous) fails on one device while the other runs the rest: dop's copies are dropped and
  // the application's, still current, get the real launch.
  for (const std::string dev : {"cpu", "gpu"}) {
    r = run_failing_first("DOP_TEST_FAIL_CHUNK=" + dev + ":1 " + cmd + "DOP_CONFIG=0.5,0.5 '" + app() +
                          "' fail 4 wait");
    check_failed_run(r, 0, "kernel=inc fallback: dop failed: ");
    const auto lines = log_lines(r.out, "inc");
    REQUIRE(lines.size() == 4);
    for (size_t i = 1; i < lines.size(); ++i) CHECK(field(lines[i], "route") == "dop");
  }
  // The second launch (asynchronous) fails where the first one's results are only in dop's copy: they are lost, and
  // the application's wait (or the wait before its read) returns the error.
  for (const std::string how : {"wait", "read"}) {
    r = run_command("DOP_TEST_FAIL_CHUNK=gpu:2 " + cmd + "DOP_CONFIG=0,1 '" + app() + "' fail 4 " + how);
    check_failed_run(r, 1, "kernel=inc error: dop failed after results were lost (earlier dop results)");
    CHECK(r.out.find("fail: launch 1 reported error") != std::string::npos);
  }
}

// The same where dop's GPU part runs on the application's buffers in place (the application on dop's GPU, copy
// mode: gpu_mem=app): a launch whose GPU part wrote the application's buffer before the CPU's chunk failed returns
// the error at once; one where only the GPU's failed falls back to the real launch; an asynchronous one whose CPU
// chunk failed before running reports the error through its event (PoCL once aborted as that status reached the
// application's event while the application released it: run a few times).
TEST_CASE(
    "intercept: a dop launch that fails part way on the application's buffers returns the error or leaves "
    "native results",
    "[intercept]") {
  const std::string exec = "'" + dop::test::dop_binary() + "' exec --cpu pocl:1 --gpu pocl:0 --memory copy --log ";
  auto r = run_failing_first("DOP_TEST_FAIL_CHUNK=cpu:1 " + exec + "--config 0.5,0.5 -- '" + app() + "' fail 4 wait");
  check_failed_run(r, 1, "kernel=inc error: dop failed after results were lost (");
  CHECK(r.out.find("written part way by both devices") != std::string::npos);
  CHECK(r.out.find("fail: launch 0 reported error -5") != std::string::npos);  // CL_OUT_OF_RESOURCES, from the enqueue
  for (const auto& l : log_lines(r.out, "inc"))
    if (l.find(" error: ") == std::string::npos) CHECK(field(l, "gpu_mem") == "app");
  r = run_failing_first("DOP_TEST_FAIL_CHUNK=gpu:1 " + exec + "--config 0.5,0.5 -- '" + app() + "' fail 4 read");
  check_failed_run(r, 0, "kernel=inc fallback: dop failed: ");
  for (int run = 0; run < 3; ++run) {
    r = run_command("DOP_TEST_FAIL_CHUNK=cpu:2 " + exec + "--config 1,0 -- '" + app() + "' fail 4 read");
    check_failed_run(r, 1, "kernel=inc error: asynchronous dop launch failed: ");
    CHECK(r.out.find("fail: launch 1 reported error") != std::string::npos);
  }
}

#if DOP_ANALYSIS
// With kernel bundles (DOP_BUNDLES, made by `dop bundle` from the source the app builds): malleable forms, so
// that GPU shares below 1 throttle; footprints, so that copies are slices; code features, so that DOP_CONFIG=auto
// lets the model (DOP_MODEL) choose every launch.
TEST_CASE("intercept: bundles bring malleable forms and footprints and DOP_CONFIG=auto uses the model", "[intercept]") {
  const std::string dir = std::string(DOP_BINARY_DIR) + "/test_intercept_bundles";
  run_command("rm -rf '" + dir + "' && mkdir -p '" + dir + "/b'");
  auto src = run_command("'" + app() + "' source vecadd > '" + dir + "/vecadd.cl'");
  REQUIRE(src.rc == 0);
  auto made = run_command("'" + dop::test::dop_binary() + "' bundle '" + dir +
                          "/vecadd.cl' --kernel vecadd --options " + "-DSCALE=3 --out '" + dir + "/b/vecadd.json'");
  INFO(made.out);
  REQUIRE(made.rc == 0);
  // Its own forms cache: kernels other tests had bundled on the fly are not found there.
  const std::string env = "DOP_BUNDLES='" + dir + "/b' DOP_CACHE_DIR='" + dir + "/cache' DOP_MEMORY=copy ";
  auto r =
      run_command(env + "LD_PRELOAD='" + preload() + "' DOP_CONFIG=0.5,0.25 DOP_LOG=1 '" + app() + "' vecadd 65536 1");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("vecadd: OK") != std::string::npos);
  auto lines = log_lines(r.out, "vecadd");
  REQUIRE(lines.size() == 1);
  CHECK(field(lines[0], "gpu_units") == "2/8");  // throttled by the bundle's malleable form
  CHECK(lines[0].find("unthrottled") == std::string::npos);
  // The model chooses (DOP_AUTO_CHECK=0: as it is).
  const std::string model = std::string(DOP_SOURCE_DIR) + "/tests/data/models/gbt.json";
  r = run_command(env + "DOP_AUTO_CHECK=0 DOP_MODEL='" + model + "' LD_PRELOAD='" + preload() +
                  "' DOP_CONFIG=auto DOP_LOG=1 '" + app() + "' vecadd 65536 2");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("vecadd: OK") != std::string::npos);
  lines = log_lines(r.out, "vecadd");
  REQUIRE(lines.size() == 2);
  const std::string chosen = field(lines[0], "config");
  // The model was trained for platform 'pocl-test', not for these devices: used, with one warning naming both ids
  // (as dop run --auto and dop predict do); DOP_PLATFORM_ID names this platform, and the model is refused.
  const std::string other_platform =
      "dop: warning: " + model + ": the model was trained for platform 'pocl-test', and this platform is '";
  CHECK(r.out.find(other_platform) != std::string::npos);
  CHECK(r.out.find(other_platform) == r.out.rfind(other_platform));
  r = run_command(env + "DOP_AUTO_CHECK=0 DOP_PLATFORM_ID=elsewhere DOP_MODEL='" + model + "' LD_PRELOAD='" +
                  preload() + "' DOP_CONFIG=auto DOP_LOG=1 '" + app() + "' vecadd 65536 2");
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK(r.out.find("vecadd: OK") != std::string::npos);  // the application's own launches
  CHECK_THAT(r.out, Catch::Contains("the model was trained for platform 'pocl-test', not for 'elsewhere'"));
  for (const auto& l : log_lines(r.out, "vecadd")) CHECK(field(l, "route") != "dop");
  // A folder of models (DOP_MODEL=models/, dop exec --model models): this platform's gbt.json, the same decisions.
  const std::string folder = dir + "/models";
  std::filesystem::create_directories(folder + "/pocl-test");
  std::filesystem::copy_file(model, folder + "/pocl-test/gbt.json", std::filesystem::copy_options::overwrite_existing);
  r = run_command(env + "DOP_AUTO_CHECK=0 DOP_PLATFORM_ID=pocl-test DOP_MODEL='" + folder + "' LD_PRELOAD='" +
                  preload() + "' DOP_CONFIG=auto DOP_LOG=1 '" + app() + "' vecadd 65536 2");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("vecadd: OK") != std::string::npos);
  CHECK(r.out.find("warning") == std::string::npos);
  const auto from_folder = log_lines(r.out, "vecadd");
  REQUIRE(from_folder.size() == 2);
  for (const auto& l : from_folder) {
    CHECK(field(l, "auto") == "model");
    CHECK(field(l, "config") == chosen);
  }
  for (const auto& l : lines) {
    CHECK(field(l, "auto") == "model");
    CHECK(field(l, "config") == chosen);
    CHECK(l.find("fallback") == std::string::npos);
  }
  // By default a choice that is not the application's own device (pocl:0 in whole, 1,0) is checked by measurement:
  // the application's device first, then the model's choice (DOP_AUTO_FIRST=model: the other order), then the
  // faster of the two.
  if (chosen != "1,0") {
    // A short run never tries the model's choice: it could not earn back what trying costs (DOP_AUTO_EXPLORE_MS,
    // 50 ms of the class's native launches by default).
    r = run_command(env + "DOP_MODEL='" + model + "' LD_PRELOAD='" + preload() + "' DOP_CONFIG=auto DOP_LOG=1 '" +
                    app() + "' vecadd 65536 5");
    INFO(r.out);
    REQUIRE(r.rc == 0);
    lines = log_lines(r.out, "vecadd");
    REQUIRE(lines.size() == 5);
    for (const auto& l : lines) CHECK(field(l, "route") == "native");
    for (const std::string first : {"native", "model"}) {
      r = run_command(env + "DOP_AUTO_EXPLORE_MS=0 DOP_AUTO_FIRST=" + first + " DOP_MODEL='" + model +
                      "' LD_PRELOAD='" + preload() + "' DOP_CONFIG=auto DOP_LOG=1 '" + app() + "' vecadd 65536 5");
      INFO(r.out);
      REQUIRE(r.rc == 0);
      CHECK(r.out.find("vecadd: OK") != std::string::npos);
      lines = log_lines(r.out, "vecadd");
      REQUIRE(lines.size() == 5);
      const size_t n = first == "native" ? 0 : 1, m = 1 - n;
      CHECK(field(lines[n], "auto") == "native");
      CHECK(field(lines[n], "route") == "native");
      CHECK(field(lines[n], "config") == "1,0");
      CHECK(field(lines[m], "auto") == "model");
      CHECK(field(lines[m], "route") == "dop");
      CHECK(field(lines[m], "config") == chosen);
      for (size_t i = 2; i < lines.size(); ++i) {
        CHECK(field(lines[i], "auto") == "measured");
        CHECK(field(lines[i], "route") == field(lines[2], "route"));  // the faster way, kept
      }
    }
  }
  // A kernel without a bundle, and auto without a model: the real launch, the reason in the log.
  r = run_command(env + "DOP_MODEL='" + model + "' LD_PRELOAD='" + preload() + "' DOP_CONFIG=auto DOP_LOG=1 '" + app() +
                  "' poly 4096 10");
  INFO(r.out);
  CHECK(r.out.find("poly: OK") != std::string::npos);
  CHECK(r.out.find("no bundle of kernel 'poly'") != std::string::npos);
  r = run_command(env + "LD_PRELOAD='" + preload() + "' DOP_CONFIG=auto DOP_LOG=1 '" + app() + "' vecadd 65536 1");
  INFO(r.out);
  CHECK(r.out.find("vecadd: OK") != std::string::npos);
  CHECK(r.out.find("DOP_CONFIG=auto needs DOP_MODEL") != std::string::npos);
  // The same through dop exec.
  const std::string dop = dop::test::dop_binary();
  r = run_command("'" + dop + "' exec --config auto --model '" + model + "' --bundles '" + dir + "/b' --log -- '" +
                  app() + "' vecadd 65536 1");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  lines = log_lines(r.out, "vecadd");
  REQUIRE(lines.size() == 1);
  CHECK(field(lines[0], "auto") == "native");  // a class starts natively, before the model is asked
  CHECK(field(lines[0], "model") == "later");
  r = run_command("env -u DOP_MODEL '" + dop + "' exec --config auto -- '" + app() + "' vecadd 1024 1");
  CHECK(r.rc == 2);  // bad usage
  CHECK(r.out.find("--config auto needs --model") != std::string::npos);
}

// Residency by footprints: a launch fetches only what its footprint may read or write, and leaves stale only what it
// may write, where the footprint bounds the buffer for the launch's NDRange and scalars. cl_app slice: `slice` writes
// x[base + off + i], i in [0, m), but each third (bytes of its write range it leaves alone, which must reach the
// application right), at off = n/4 and n/2, then at base 3n/4 with off = -n/8 (a negative int: the bundle's declared
// types say the scalar is signed, so its slice is bounded, not a launch reaching 16 GiB); `scatter` writes x through
// loaded indices (the footprint does not bound x: whole). Every read is checked exactly; the log says what was fetched,
// left stale and flushed.
TEST_CASE("intercept: a launch fetches and leaves stale only its footprint's slices where the footprint bounds them",
          "[intercept]") {
  const std::string dir = std::string(DOP_BINARY_DIR) + "/test_intercept_slice";
  run_command("rm -rf '" + dir + "' && mkdir -p '" + dir + "/b'");
  REQUIRE(run_command("'" + app() + "' source slice > '" + dir + "/slice.cl'").rc == 0);
  for (const std::string k : {"slice", "scatter"}) {
    auto made = run_command("'" + dop::test::dop_binary() + "' bundle '" + dir + "/slice.cl' --kernel " + k +
                            " --options -DSCALE=3 --out '" + dir + "/b/" + k + ".json'");
    INFO(made.out);
    REQUIRE(made.rc == 0);
  }
  const long n = 65536, x = n * 4, part = n / 8 * 4;  // x's bytes; a slice's bytes (y's too; idx's)
  const struct {
    const char *memory, *config;
  } runs[] = {{"zero-copy", "0.5,0.5"}, {"copy", "0.5,0.5"},  {"svm", "0.5,0.5"},
              {"resident", "0.5,0.5"},  {"zero-copy", "0,1"}, {"copy", "1,1"}};
  for (const auto& run : runs) {
    auto r = run_command("env -u DOP_BUNDLER DOP_BUNDLES='" + dir + "/b' DOP_CACHE_DIR='" + dir +
                         "/cache' DOP_MEMORY=" + run.memory + " LD_PRELOAD='" + preload() +
                         "' DOP_CONFIG=" + run.config + " DOP_LOG=1 '" + app() + "' slice " + std::to_string(n));
    INFO(run.memory << " at " << run.config << "\n" << r.out);
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("slice: OK") != std::string::npos);
    const auto sl = log_lines(r.out, "slice"), sc = log_lines(r.out, "scatter");
    REQUIRE(sl.size() == 3);
    REQUIRE(sc.size() == 1);
    for (const auto& l : sl) {
      CHECK(field(l, "route") == "dop");
      CHECK(field(l, "memory") == run.memory);
      CHECK(number(l, "fetched") == 2 * part);  // x's write range (kept right where the kernel skips) and y's slice
      CHECK(number(l, "wrote") == part);
    }
    // The read of x's first quarter (before every slice) is the application's alone; the whole read takes the slices
    // written so far from dop's copy and the rest from the application's buffer, and nothing is flushed.
    CHECK(r.out.find("dop-intercept: flushed=") == std::string::npos);
    size_t splits = 0;
    for (size_t p = r.out.find("dop-intercept: read="); p != std::string::npos;
         p = r.out.find("dop-intercept: read=", p + 1)) {
      const std::string line = r.out.substr(p, r.out.find('\n', p) - p);
      const long from_dop = ++splits <= 3 ? long(splits) * part : x;  // after scatter: dop's copy of x is current whole
      CHECK(number(line, "read") == x);
      CHECK(number(line, "from_dop") == from_dop);
      CHECK(number(line, "from_app") == x - from_dop);
    }
    CHECK(splits == 4);
    // scatter: x whole (what the slices did not fetch) and idx's slice; every byte of x may have been written.
    CHECK(number(sc[0], "fetched") == x - 3 * part + part);
    CHECK(number(sc[0], "wrote") == x);
  }
}
#endif

// Without bundles: what the log says when a launch has no forms, and a bundle of the kernel's name that differs
// from what the app builds is named with what differs (both tiers: no bundler here).
TEST_CASE("intercept: a kernel without forms says how to get bundles, and a near-miss bundle says what differs",
          "[intercept]") {
  const std::string dir = std::string(DOP_BINARY_DIR) + "/test_intercept_nearmiss";
  run_command("rm -rf '" + dir + "' && mkdir -p '" + dir + "/b' '" + dir + "/cache'");
  const std::string env =
      "env -u DOP_BUNDLER DOP_CACHE_DIR='" + dir + "/cache' LD_PRELOAD='" + preload() + "' DOP_CONFIG=1,1 DOP_LOG=1 ";
  auto r = run_command(env + "'" + app() + "' vecadd 65536 1");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("forms of vecadd: none:") && Catch::Contains("dop exec --record"));
  REQUIRE(log_lines(r.out, "vecadd").size() == 1);  // the launch: at 1,1 it needs no forms
#if DOP_ANALYSIS
  // Bundles of vecadd made with other build options, and from a source with line 3 changed.
  REQUIRE(run_command("'" + app() + "' source vecadd > '" + dir + "/vecadd.cl'").rc == 0);
  const std::string dop = dop::test::dop_binary();
  REQUIRE(run_command("'" + dop + "' bundle '" + dir + "/vecadd.cl' --kernel vecadd --options=-DSCALE=4 --out '" + dir +
                      "/b/options.json'")
              .rc == 0);
  r = run_command(env + "DOP_BUNDLES='" + dir + "/b' '" + app() + "' vecadd 65536 1");
  INFO(r.out);
  CHECK_THAT(r.out, Catch::Contains(dir + "/b/options.json: the bundle was made with build options '-DSCALE=4', the "
                                          "kernel is built with '-DSCALE=3'"));
  run_command("rm '" + dir + "/b/options.json' && sed -i 's/a\\[i\\] + b\\[i\\]/b[i] + a[i]/' '" + dir + "/vecadd.cl'");
  REQUIRE(run_command("'" + dop + "' bundle '" + dir + "/vecadd.cl' --kernel vecadd --options=-DSCALE=3 --out '" + dir +
                      "/b/source.json'")
              .rc == 0);
  r = run_command(env + "DOP_BUNDLES='" + dir + "/b' '" + app() + "' vecadd 65536 1");
  INFO(r.out);
  CHECK_THAT(r.out, Catch::Contains(dir + "/b/source.json: the bundle was made from another source") &&
                        Catch::Contains("line 3: '  if (i < n) c[i] = b[i] + a[i];' against "
                                        "'  if (i < n) c[i] = a[i] + b[i];'"));
#endif
}

#if DOP_ANALYSIS
// Under DOP_CONFIG=auto a launch class spans the NDRanges of one power of two of work-items (and the scalars the
// model does not read): the model is asked once per class (with no exploration budget, at its first launch), the
// later launches, whatever their exact shape, take the class's decision from the memo (class=known, the first
// launch's decide_us), and what the class measured is shared.
TEST_CASE("intercept: under auto, shapes of one launch class share its decision and its measurements", "[intercept]") {
  const std::string dir = std::string(DOP_BINARY_DIR) + "/test_intercept_classes";
  run_command("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
  const std::string model = std::string(DOP_SOURCE_DIR) + "/tests/data/models/gbt.json";
  const std::string env = "env -u DOP_BUNDLES DOP_CACHE_DIR='" + dir + "/cache' ";
  const std::string exec = "'" + dop::test::dop_binary() + "' exec --config auto --model '" + model + "' --log -- '";
  // 8 launches of 69632 - 64 r work-items (r = 0..7: all within [65536, 131072)), then one of 34816.
  // The model asked at a class's first launch: with no budget, or a class that starts with it (DOP_AUTO_FIRST=model),
  // or its choice taken as it is (DOP_AUTO_CHECK=0).
  for (const std::string first : {"DOP_AUTO_EXPLORE_MS=0", "DOP_AUTO_FIRST=model DOP_AUTO_EXPLORE_MS=100000",
                                  "DOP_AUTO_CHECK=0 DOP_AUTO_EXPLORE_MS=100000"}) {
    auto r = run_command(env + first + " " + exec + app() + "' shapes 69632 8");
    INFO(r.out);
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("shapes: OK") != std::string::npos);
    auto lines = log_lines(r.out, "vecadd");
    REQUIRE(lines.size() == 9);
    CHECK(field(lines[0], "class") == "new");
    CHECK(field(lines[0], "global") == "69632");
    CHECK(std::stod(field(lines[0], "decide_us")) > 0);
    CHECK(field(lines[0], "model").empty());
    for (size_t i = 1; i < 8; ++i) {
      CHECK(field(lines[i], "global") == std::to_string(69632 - 64 * i));
      CHECK(field(lines[i], "class") == "known");
      CHECK(field(lines[i], "decide_us") == field(lines[0], "decide_us"));  // the model was not asked again
    }
    CHECK(field(lines[8], "global") == "34816");
    CHECK(field(lines[8], "class") == "new");  // another power of two: another class
    for (const auto& l : lines) CHECK(l.find("fallback") == std::string::npos);
  }

  // What the class measured is shared by its shapes: with no exploration budget, the application's device is timed
  // at the first shape, the model's choice at the second, and the third runs the faster way measured.
  auto r = run_command(env + "DOP_AUTO_EXPLORE_MS=0 " + exec + app() + "' shapes 69632 8");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("shapes: OK") != std::string::npos);
  auto lines = log_lines(r.out, "vecadd");
  REQUIRE(lines.size() == 9);
  if (field(lines[0], "auto") == "native" && field(lines[0], "route") == "native" &&
      lines[0].find("config=1,0 ") != std::string::npos && field(lines[1], "auto") == "model") {
    CHECK(field(lines[1], "route") == "dop");
    CHECK(number(lines[1], "cpu_wg") + number(lines[1], "gpu_wg") == 69568 / 64);  // the exact NDRange ran
    for (size_t i = 2; i < 8; ++i) CHECK(field(lines[i], "auto") == "measured");
  } else {
    // The model chose the application's device (pocl:0 in whole): nothing to measure.
    for (size_t i = 0; i < 8; ++i) CHECK(field(lines[i], "auto") == "model");
  }
}

// Under DOP_CONFIG=auto the power of two of a scalar that the size expressions of the kernel's code features read is
// part of its launch class: rowsum's bytes per work-item are 4*m + 4, so m = 16 and 31 are one class, 32 another.
// Whether the forms come from DOP_BUNDLES (what they say of m found when the program is built) or are made at the
// kernel's first launch (DOP_BUNDLER, the forms cache); without forms m is a scalar like any other.
TEST_CASE("intercept: under auto, a scalar the kernel's size expressions read makes its launch classes",
          "[intercept]") {
  const std::string dir = std::string(DOP_BINARY_DIR) + "/test_intercept_model_scalars";
  run_command("rm -rf '" + dir + "' && mkdir -p '" + dir + "/b'");
  REQUIRE(run_command("'" + app() + "' source rowsum > '" + dir + "/rowsum.cl'").rc == 0);
  const std::string dop = dop::test::dop_binary();
  const auto made = run_command("'" + dop + "' bundle '" + dir + "/rowsum.cl' --kernel rowsum --options -DSCALE=3 " +
                                "--out '" + dir + "/b/rowsum.json'");
  INFO(made.out);
  REQUIRE(made.rc == 0);
  // A budget the run never spends: each class runs natively, its model not asked.
  const std::string env = "env -u DOP_BUNDLES -u DOP_BUNDLER LD_PRELOAD='" + preload() +
                          "' DOP_CONFIG=auto DOP_MODEL='" + std::string(DOP_SOURCE_DIR) +
                          "/tests/data/models/gbt.json' DOP_AUTO_EXPLORE_MS=100000 " + "DOP_LOG=1 ";
  auto classes = [&](const std::string& vars) {  // of the launches at m = 16, 31, 32, 17
    const auto r = run_command(env + vars + "'" + app() + "' rowsum 16 31 32 17");
    INFO(r.out);
    CHECK(r.rc == 0);
    CHECK(r.out.find("rowsum: OK launches=4") != std::string::npos);
    std::vector<std::string> c;
    for (const auto& l : log_lines(r.out, "rowsum")) c.push_back(field(l, "class"));
    return c;
  };
  const std::vector<std::string> by_m = {"new", "known", "new", "known"};
  CHECK(classes("DOP_BUNDLES='" + dir + "/b' DOP_CACHE_DIR='" + dir + "/none' ") == by_m);
  CHECK(classes("DOP_BUNDLER='" + dop + "' DOP_CACHE_DIR='" + dir + "/cache' ") == by_m);
  CHECK(classes("DOP_CACHE_DIR='" + dir + "/none' ") == std::vector<std::string>{"new", "known", "known", "known"});
}

// Under auto (the measured check on, a queue on one of dop's devices) a class runs natively, untimed, until its
// exploration budget (DOP_AUTO_EXPLORE_MS) is spent, and the model is not asked before (model=later: no decision, no
// executor, no dop launch); a kernel without code features says so only when the model is needed. The class's first
// launch after the budget asks the model (model=asked) and the class goes on as one asked at its first launch does.
TEST_CASE("intercept: under auto a class asks the model only once its exploration budget is spent", "[intercept]") {
  const std::string dir = std::string(DOP_BINARY_DIR) + "/test_intercept_deferred";
  run_command("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
  const std::string model = std::string(DOP_SOURCE_DIR) + "/tests/data/models/gbt.json";
  const std::string dop_exec = "env -u DOP_BUNDLES DOP_CACHE_DIR='" + dir + "/cache' '" + dop::test::dop_binary() +
                               "' exec --config auto --model '" + model + "' ";
  const std::string exec = dop_exec + "--log -- '" + app() + "'";
  // The launches before the budget is spent: the application's device (pocl:0 here), untimed, nothing decided.
  auto before_model = [](const std::vector<std::string>& lines, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      INFO(lines[i]);
      CHECK(field(lines[i], "auto") == "native");
      CHECK(field(lines[i], "model") == "later");
      CHECK(field(lines[i], "decide_us") == "0.000");
      CHECK(field(lines[i], "class") == (i == 0 ? "new" : "known"));
      CHECK(field(lines[i], "route") == "native");
      CHECK(field(lines[i], "config") == "1,0");
    }
  };
  // The first launch after the budget: those before it, and it.
  auto first_asked = [](const std::vector<std::string>& lines) {
    size_t k = 0;
    while (k < lines.size() && field(lines[k], "model") == "later") ++k;
    return k;
  };
  // `n` launches of vecadd under `cmd` (ending with the application): their log lines, and the run's output.
  std::string out;
  auto vecadd = [&out](const std::string& cmd, size_t n) {
    const auto r = run_command(cmd + " vecadd 65536 " + std::to_string(n));
    out = r.out;
    INFO(r.out);
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("vecadd: OK") != std::string::npos);
    auto lines = log_lines(r.out, "vecadd");
    REQUIRE(lines.size() == n);
    return lines;
  };
  auto lines = vecadd("DOP_AUTO_EXPLORE_MS=100000 " + exec, 20);
  before_model(lines, lines.size());

  // A budget that the run crosses (launches of about 0.1 ms or more, each waited for).
  lines = vecadd("DOP_AUTO_EXPLORE_MS=2 " + exec, 300);
  INFO(out);
  const size_t k = first_asked(lines);
  REQUIRE(k >= 1);  // the class's first launch never spends a budget above 0
  REQUIRE(k < lines.size());
  before_model(lines, k);
  CHECK(field(lines[k], "model") == "asked");
  CHECK(field(lines[k], "class") == "known");
  CHECK(std::stod(field(lines[k], "decide_us")) > 0);
  CHECK(field(lines[k], "route") == "native");
  for (size_t i = k + 1; i < lines.size(); ++i) {
    INFO(lines[i]);
    CHECK(field(lines[i], "model").empty());
    CHECK(field(lines[i], "decide_us") == field(lines[k], "decide_us"));  // not asked again
    CHECK(field(lines[i], "class") == "known");
  }
  if (field(lines[k], "auto") == "native") {
    // The model chose something other than pocl:0 in whole: the application's device is timed (this launch), the
    // model's choice is tried once the native launches may have taken the budget, then the faster way runs.
    size_t j = k + 1;
    while (j < lines.size() && field(lines[j], "auto") == "native") ++j;
    REQUIRE(j < lines.size());
    CHECK(field(lines[j], "auto") == "model");
    CHECK(field(lines[j], "route") == "dop");
    for (size_t i = j + 1; i < lines.size(); ++i) CHECK(field(lines[i], "auto") == "measured");
  } else {
    for (size_t i = k; i < lines.size(); ++i) {  // the application's device, as the model chose: nothing to check
      CHECK(field(lines[i], "auto") == "model");
      CHECK(field(lines[i], "route") == "native");
    }
  }

  // A queue on neither of dop's devices (three here; the application on pocl:0): asked at the first launch, as before.
  lines = vecadd(
      "POCL_DEVICES='pthread pthread pthread' " + dop_exec + "--cpu pocl:1 --gpu pocl:2 --log -- '" + app() + "'", 3);
  INFO(out);
  CHECK(field(lines[0], "class") == "new");
  CHECK(std::stod(field(lines[0], "decide_us")) > 0);
  for (const auto& l : lines) CHECK(field(l, "model").empty());

  // Without code features (no bundle, no bundler): nothing to report while the model is not needed; the first launch
  // that needs it falls back saying why, and so do the later ones. DOP_AUTO_EXPLORE_MS=0: at the first launch.
  const std::string bare = "env -u DOP_BUNDLES -u DOP_BUNDLER DOP_CACHE_DIR='" + dir + "/empty' DOP_MODEL='" + model +
                           "' LD_PRELOAD='" + preload() + "' DOP_CONFIG=auto DOP_LOG=1 ";
  lines = vecadd(bare + "DOP_AUTO_EXPLORE_MS=100000 '" + app() + "'", 5);
  before_model(lines, lines.size());
  const std::string no_code = "fallback: dop failed: DOP_CONFIG=auto: no bundle of kernel 'vecadd'";
  const std::string failed_before = "fallback: failed before: DOP_CONFIG=auto: no bundle of kernel 'vecadd'";
  for (const std::string budget : {"2", "0"}) {
    lines = vecadd(bare + "DOP_AUTO_EXPLORE_MS=" + budget + " '" + app() + "'", 300);
    INFO(out);
    const size_t at = first_asked(lines);
    CHECK((budget == "0" ? at == 0 : at >= 1));
    REQUIRE(at < lines.size());
    before_model(lines, at);
    CHECK_THAT(lines[at], Catch::Contains(no_code) && Catch::Contains("no code features"));
    for (size_t i = at + 1; i < lines.size(); ++i) CHECK_THAT(lines[i], Catch::Contains(failed_before));
  }
  // Such a class is remembered as falling back: its launches after the one that finds the failure again run on the
  // application's device from the memo, and repeat from the thread's cache (native_again), as a class settled there
  // does, rather than each being decided again to find the same failure (DOP_TEST_CHECK_REPEATS=1 logs the repeats
  // and checks each against the full decision).
  lines = vecadd(bare + "DOP_AUTO_EXPLORE_MS=0 DOP_TEST_CHECK_REPEATS=1 '" + app() + "'", 40);
  INFO(out);
  CHECK(out.find("repeat mismatch") == std::string::npos);
  CHECK_THAT(lines[0], Catch::Contains(no_code));
  CHECK_THAT(lines[1], Catch::Contains(failed_before));
  CHECK(field(lines[2], "auto") == "fallback");
  CHECK(field(lines[2], "route") == "native");
  CHECK(field(lines[2], "class") == "known");
  for (size_t i = 3; i < lines.size(); ++i) CHECK(lines[i].find("dop-intercept: repeat=native kernel=vecadd") == 0);
}

// A class whose budget is spent while the model is still being read goes on natively, unasked, until the reading
// has ended, for at most another budget (ask_model_now): the application does not wait for the model. The reading
// thread sleeps 380 ms first here (DOP_TEST_MODEL_READ_DELAY_MS: a reading of a known length whatever the machine's
// load). With a budget of 400 ms it starts at 100 ms (a quarter of the budget) and ends after 480 ms: after the
// budget, and before another has passed (800 ms) unless parsing the 97 KB model takes 320 ms. Waiting for it at the
// budget, as before, stalls a launch there for 80 ms or more. A launch's time is measured first (cl_app's time_ms, the
// model never read), so that the run lasts about 2.5 s unloaded (past 800 ms, where the class asks whatever the
// reading, however loaded the machine).
TEST_CASE("intercept: a model still being read does not stall the application", "[intercept]") {
  const std::string dir = std::string(DOP_BINARY_DIR) + "/test_intercept_model_reading";
  run_command("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
  const std::string exec = "env -u DOP_BUNDLES DOP_CACHE_DIR='" + dir + "/cache' DOP_TEST_MODEL_READ_DELAY_MS=380 '" +
                           dop::test::dop_binary() + "' exec --config auto --model '" + std::string(DOP_SOURCE_DIR) +
                           "/tests/data/models/gbt.json' --log -- '" + app() + "' vecadd 4096 ";
  std::string out;
  auto run = [&out](const std::string& cmd) {
    const auto r = run_command(cmd);
    out = r.out;
    INFO(r.out);
    REQUIRE(r.rc == 0);
    REQUIRE(r.out.find("vecadd: OK") != std::string::npos);
    return log_lines(r.out, "vecadd");
  };
  run("DOP_AUTO_EXPLORE_MS=100000 " + exec + "1");    // the forms made and cached
  run("DOP_AUTO_EXPLORE_MS=100000 " + exec + "400");  // the model never read, the forms from the cache
  const size_t at = out.find("time_ms=");
  REQUIRE(at != std::string::npos);
  const double launch_ms = std::stod(out.substr(at + 8)) / 400;
  const size_t n = std::min<size_t>(100000, size_t(2500 / launch_ms) + 100);
  INFO("a launch: " << launch_ms << " ms; " << n << " launches");
  const auto lines = run("DOP_AUTO_EXPLORE_MS=400 " + exec + std::to_string(n));
  REQUIRE(lines.size() == n);
  size_t asked = 0;
  for (size_t i = 1; i < lines.size() && !asked; ++i) {  // the first: the class's first launch (forms from the cache)
    INFO(lines[i]);
    CHECK(std::stod(field(lines[i], "call_us")) < 40000);
    if (field(lines[i], "model") == "asked")
      asked = i;
    else
      CHECK(field(lines[i], "model") == "later");
  }
  CHECK(asked > 0);  // the model asked once it was read
}

// Under auto the model is read on a thread of the interposer's own once a launch class has spent a quarter of its
// exploration budget, or at initialise where launches ask it at once (dop exec checks only that the file can be
// read): a model that cannot be used is named on stderr once, with its file and line, and every launch that needs it
// runs on the application's device, its log line saying why; a run whose classes never get that far does not read it.
TEST_CASE("intercept: a model that cannot be used is named once and the application runs natively", "[intercept]") {
  const std::string dir = std::string(DOP_BINARY_DIR) + "/test_intercept_bad_model";
  run_command("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
  const std::string bad = dir + "/corrupt.json";
  std::ofstream(bad) << "{\"format\": \"dop-model/1\",\n\"type\": \"gbt\",,\n}";
  const std::string exec = "env -u DOP_BUNDLES DOP_CACHE_DIR='" + dir + "/cache' '" + dop::test::dop_binary() +
                           "' exec --config auto --model '" + bad + "' --log -- '" + app() + "'";
  const std::string named = "dop: error: DOP_MODEL: " + bad + ":2:15: invalid JSON";
  for (const std::string budget : {"0", "100000"}) {  // the model needed at the first launch, and never
    const auto r = run_command("DOP_AUTO_EXPLORE_MS=" + budget + " " + exec + " vecadd 65536 4");
    INFO(r.out);
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("vecadd: OK") != std::string::npos);
    const auto lines = log_lines(r.out, "vecadd");
    REQUIRE(lines.size() == 4);
    if (budget == "0") {  // the real launch, the reason in the log
      REQUIRE(r.out.find(named) != std::string::npos);
      CHECK(r.out.find(named) == r.out.rfind(named));
      CHECK_THAT(lines[0], Catch::Contains("fallback: dop failed: DOP_CONFIG=auto: DOP_MODEL: " + bad + ":2:15"));
      for (size_t i = 1; i < lines.size(); ++i) CHECK_THAT(lines[i], Catch::Contains("fallback: failed before: "));
    } else {
      CHECK(r.out.find("DOP_MODEL") == std::string::npos);  // not read
      for (const auto& l : lines) {
        CHECK(field(l, "model") == "later");
        CHECK(field(l, "route") == "native");
      }
    }
  }
  // A model file that is not there: dop exec stops before the application runs, naming it.
  const auto r = run_command("'" + dop::test::dop_binary() + "' exec --config auto --model '" + dir +
                             "/missing.json' -- '" + app() + "' vecadd 1024 1");
  INFO(r.out);
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("dop: error: --model '" + dir + "/missing.json': no such file"));
  CHECK(r.out.find("vecadd: OK") == std::string::npos);
}

// A model that reads no code features (launch, configuration and derived features only) decides a kernel that has
// no forms (no bundle, no bundler) instead of falling back.
TEST_CASE("intercept: a model without code features decides kernels nobody analysed", "[intercept]") {
  const std::string dir = std::string(DOP_BINARY_DIR) + "/test_intercept_launch_model";
  run_command("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
  // gpu_recv_bytes < 1000 ? 0.3 : 0.1: the configurations that send the GPU nothing (the CPU alone) are best.
  std::ofstream(dir + "/model.json") << R"({"format": "dop-model/1", "type": "dt", "objective": "reg:squarederror",
    "output": "normalised_performance", "platform": {"id": "pocl-test", "cpu_units": 2, "gpu_units": 1},
    "grid": {"cpu_levels": [0, 0.25, 0.5, 0.75, 1], "gpu_levels": [0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1]},
    "features": [{"name": "gpu_recv_bytes", "source": "derived",
                  "definition": "gpu_util > 0 && !data_on_gpu ? in_bytes : 0"}],
    "trees": {"base_score": 0, "count": 1, "list": [{"feature": [0, -1, -1], "threshold": [1000, 0, 0],
              "left": [1, -1, -1], "right": [2, -1, -1], "default_left": [0, 0, 0], "value": [0, 0.3, 0.1]}]}})";
  const auto r = run_command("env -u DOP_BUNDLES -u DOP_BUNDLER DOP_CACHE_DIR='" + dir + "/cache' DOP_MODEL='" + dir +
                             "/model.json' DOP_AUTO_EXPLORE_MS=0 LD_PRELOAD='" + preload() +
                             "' DOP_CONFIG=auto DOP_LOG=1 '" + app() + "' vecadd 65536 3");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("vecadd: OK") != std::string::npos);
  CHECK(r.out.find("no bundle of kernel 'vecadd'") != std::string::npos);  // it has no forms
  const auto lines = log_lines(r.out, "vecadd");
  REQUIRE(lines.size() == 3);
  for (const auto& l : lines) {
    INFO(l);
    CHECK(l.find("fallback") == std::string::npos);
    CHECK(std::stod(field(l, "decide_us")) > 0);  // the model asked at the class's first launch
    CHECK(field(l, "config").substr(field(l, "config").find(',')) == ",0");  // the CPU alone, as the model says
  }
}

// Where a launch's data is goes to the model (LaunchShape::data_on_gpu) and is part of its launch class: on the GPU
// while the application's queue is on dop's GPU and its buffers there are current; in host memory when the
// application runs on dop's CPU, and once a dop launch has left its results in dop's copies.
TEST_CASE("intercept: auto tells the model where the launch data is", "[intercept]") {
  const std::string dir = std::string(DOP_BINARY_DIR) + "/test_intercept_data_on";
  run_command("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
  // A model trained (by dop train) on the test platform's dataset with every time but (1, 1)'s doubled: it answers
  // 1,1 whatever the launch, so every launch runs on dop's route and leaves its results in dop's copies.
  std::istringstream in(dop::test::read_file(std::string(DOP_SOURCE_DIR) + "/tests/data/models/pocl_real_small.csv"));
  std::ofstream csv(dir + "/both.csv");
  std::string line;
  std::vector<std::string> header;
  size_t cpu = 0, gpu = 0;
  std::vector<size_t> times;
  for (size_t n = 0; std::getline(in, line); ++n) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string v; std::getline(fields, v, ',');) f.push_back(v);
    if (line.back() == ',') f.emplace_back();
    if (n == 0) {
      for (size_t i = 0; i < f.size(); ++i) {
        if (f[i] == "cpu_util") cpu = i;
        if (f[i] == "gpu_util") gpu = i;
        if (f[i].rfind("time_ms_", 0) == 0) times.push_back(i);
      }
      REQUIRE(times.size() == 3);
    } else {
      for (size_t i : times) f[i] = f[cpu] == "1" && f[gpu] == "1" ? "1" : "2";
    }
    for (size_t i = 0; i < f.size(); ++i) csv << (i ? "," : "") << f[i];
    csv << "\n";
  }
  csv.close();
  const std::string dop = dop::test::dop_binary();
  auto trained = run_command("'" + dop + "' train '" + dir + "/both.csv' --model dt --cv 0 --no-loko --out '" + dir +
                             "/both.json'");
  INFO(trained.out);
  REQUIRE(trained.rc == 0);
  const std::string env = "env -u DOP_BUNDLES DOP_AUTO_CHECK=0 DOP_CACHE_DIR='" + dir + "/cache' ";
  const std::string exec = "'" + dop + "' exec --config auto --model '" + dir + "/both.json' --log ";
  // The application takes the first device, pocl:0: here dop's GPU.
  auto r = run_command(env + exec + "--cpu pocl:1 --gpu pocl:0 -- '" + app() + "' vecadd 65536 3");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("vecadd: OK") != std::string::npos);
  auto lines = log_lines(r.out, "vecadd");
  REQUIRE(lines.size() == 3);
  for (const auto& l : lines) {
    CHECK(field(l, "config") == "1,1");
    CHECK(field(l, "route") == "dop");
  }
  CHECK(field(lines[0], "data") == "gpu");  // the application wrote its inputs to its buffers on pocl:0
  CHECK(field(lines[0], "class") == "new");
  CHECK(field(lines[1], "data") == "host");  // the first launch's results are in dop's copy
  CHECK(field(lines[1], "class") == "new");  // the data moved: another class
  CHECK(field(lines[2], "data") == "host");
  CHECK(field(lines[2], "class") == "known");
  // The application on dop's CPU: its data is in host memory.
  r = run_command(env + exec + "-- '" + app() + "' vecadd 65536 2");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("vecadd: OK") != std::string::npos);
  lines = log_lines(r.out, "vecadd");
  REQUIRE(lines.size() == 2);
  for (const auto& l : lines) CHECK(field(l, "data") == "host");
}

// Under auto a launch whose class the thread saw decided on the application's device, with nothing the decision reads
// changed since, is enqueued as it is (native_again in decide.cpp). DOP_TEST_CHECK_REPEATS=1 says so in the log
// (`repeat=native`) and checks each such launch against what the full decision would read (`repeat mismatch:` on
// stderr). What must end the repeats ends them: another power of two of work-items, a buffer of another size, writes
// of the application's (spent by the next launch; writes of most of the bytes make the data host-fed: for an
// application on dop's GPU another class, which the model sends to dop's CPU), a dop launch (whose results a native
// kernel after it must find: flushed). A scalar the model does not read, inputs swapped for buffers of the same size
// and flags, another shape of the class keep them. `cl_app repeat` checks its output after each of its 22 launches.
TEST_CASE("intercept: under auto a launch that repeats a native class skips the decision, and only then",
          "[intercept]") {
  const std::string dir = std::string(DOP_BINARY_DIR) + "/test_intercept_repeat";
  run_command("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
  // Launches of fewer than 3000 work-items: the application's device (1,0 with data in host memory, 0,1 with data on
  // the GPU); larger ones: both devices (1,1).
  std::ofstream(dir + "/model.json") << R"({"format": "dop-model/1", "type": "dt", "objective": "reg:squarederror",
    "output": "normalised_performance", "platform": {"id": "pocl-test", "cpu_units": 2, "gpu_units": 1},
    "grid": {"cpu_levels": [0, 0.25, 0.5, 0.75, 1], "gpu_levels": [0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1]},
    "features": [{"name": "global_size", "source": "launch", "definition": "global_x * global_y * global_z"},
                 {"name": "data_on_gpu", "source": "launch", "definition": "data_on_gpu ? 1 : 0"},
                 {"name": "cpu_util", "source": "config", "definition": "cpu_util"},
                 {"name": "gpu_util", "source": "config", "definition": "gpu_util"}],
    "trees": {"base_score": 0, "count": 1, "list": [{
      "feature": [0, 1, 2, 3, 2, -1, 3, -1, -1, 2, -1, -1, -1, 3, -1, -1, -1],
      "threshold": [3000, 0.5, 0.875, 0.0625, 0.125, 0, 0.9375, 0, 0, 0.875, 0, 0, 0, 0.9375, 0, 0, 0],
      "left": [1, 3, 5, 9, 13, -1, 7, -1, -1, 11, -1, -1, -1, 15, -1, -1, -1],
      "right": [2, 4, 6, 10, 14, -1, 8, -1, -1, 12, -1, -1, -1, 16, -1, -1, -1],
      "default_left": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
      "value": [0, 0, 0, 0, 0, 0.1, 0, 0.1, 0.9, 0, 0.1, 0.1, 0.9, 0, 0.1, 0.1, 0.9]}]}})";
  const std::string env = "env -u DOP_BUNDLES -u DOP_BUNDLER DOP_CACHE_DIR='" + dir + "/cache' DOP_MODEL='" + dir +
                          "/model.json' LD_PRELOAD='" + preload() + "' DOP_CONFIG=auto ";
  const std::string checked = "DOP_LOG=1 DOP_TEST_CHECK_REPEATS=1 ";
  // cl_app repeat's launches under `vars`, checked: their log lines (a repeat's is its `repeat=native` line).
  std::string out;
  auto launches = [&](const std::string& vars) {
    const auto r = run_command(env + vars + checked + "'" + app() + "' repeat");
    out = r.out;
    INFO(r.out);
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("repeat: OK") != std::string::npos);
    CHECK(r.out.find("repeat mismatch") == std::string::npos);
    auto lines = log_lines(r.out, "axpb");
    REQUIRE(lines.size() == 22);
    return lines;
  };
  auto repeated = [](const std::vector<std::string>& lines) {  // which launches (from 1) repeated
    std::vector<size_t> r;
    for (size_t i = 0; i < lines.size(); ++i)
      if (lines[i].find("dop-intercept: repeat=native ") == 0) r.push_back(i + 1);
    return r;
  };

  // The application on dop's CPU, the model's choices taken as they are. 1, 2: the class's first launch and the one
  // that finds it known; 8-10, 12-14: another power of two, a bigger buffer, and back; 16, 18: after host writes (18:
  // fed from the host, the same class for a queue on the CPU); 20: a large launch on dop's devices, after which the
  // native launches are decided in full, dop's results flushed before them (cl_app checks launch 21's output).
  auto lines = launches("DOP_AUTO_CHECK=0 ");
  INFO(out);
  CHECK(repeated(lines) == std::vector<size_t>{3, 4, 5, 6, 7, 11, 15, 17, 19});
  CHECK(field(lines[17], "fed") == "host");
  CHECK(field(lines[17], "route") == "native");
  CHECK(field(lines[19], "route") == "dop");
  CHECK(field(lines[20], "route") == "native");
  CHECK(field(lines[21], "route") == "native");

  // The application on dop's GPU: its data on the GPU until launch 18, fed from the host, goes to dop's CPU.
  lines = launches("DOP_AUTO_CHECK=0 DOP_CPU=pocl:1 DOP_GPU=pocl:0 ");
  INFO(out);
  CHECK(repeated(lines) == std::vector<size_t>{3, 4, 5, 6, 7, 11, 15, 17});
  CHECK(field(lines[0], "data") == "gpu");
  CHECK(field(lines[17], "data") == "host");
  CHECK(field(lines[17], "fed") == "host");
  CHECK(field(lines[17], "route") == "dop");

  // Classes whose model is not asked yet (a budget the run never spends) repeat too, each launch counted for the
  // budget, and a new one from its second launch (9 after 8's new class, 13 after 12's: the class made by decide()
  // is remembered as a known one is); nothing runs on dop's devices, but 21 goes back to 19's class, which the
  // kernel's repeat no longer holds (20's new class took it), and 22 repeats it.
  lines = launches("DOP_AUTO_EXPLORE_MS=100000 ");
  INFO(out);
  CHECK(repeated(lines) == std::vector<size_t>{3, 4, 5, 6, 7, 9, 11, 13, 15, 17, 19, 22});
  for (const auto& l : lines) {
    INFO(l);
    CHECK(field(l, "model") == "later");
    if (l.find(" repeat=") == std::string::npos) CHECK(field(l, "route") == "native");
  }

  // Two threads, each with its own queue, kernel and buffers, repeating their classes at once.
  const auto threads = run_command(env + "DOP_AUTO_EXPLORE_MS=100000 " + checked + "'" + app() + "' threads");
  INFO(threads.out);
  CHECK(threads.rc == 0);
  CHECK(threads.out.find("threads: OK") != std::string::npos);
  CHECK(threads.out.find("repeat mismatch") == std::string::npos);
  CHECK(threads.out.find("repeat=native kernel=vecadd") != std::string::npos);

  // Without the log or the check, the repeats as they run in use: the output still exact after every launch.
  for (const std::string vars :
       {"DOP_AUTO_CHECK=0 ", "DOP_AUTO_CHECK=0 DOP_CPU=pocl:1 DOP_GPU=pocl:0 ", "DOP_AUTO_EXPLORE_MS=100000 "}) {
    const auto r = run_command(env + vars + "'" + app() + "' repeat");
    INFO(vars << "\n" << r.out);
    CHECK(r.rc == 0);
    CHECK(r.out.find("repeat: OK") != std::string::npos);
    CHECK(r.out.find("dop-intercept") == std::string::npos);
  }
}

// The forms made on the fly (DOP_BUNDLER, which dop exec sets in an analysis build) and kept in the forms cache
// (DOP_CACHE_DIR/forms): DOP_CONFIG=auto without any DOP_BUNDLES runs with the model, later processes read the
// cache without the bundler, a corrupt entry is made again, a failed analysis is a negative entry.
TEST_CASE("intercept: forms made on the fly and cached let DOP_CONFIG=auto run without hand-made bundles",
          "[intercept]") {
  const std::string dir = std::string(DOP_BINARY_DIR) + "/test_intercept_autoforms";
  run_command("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
  const std::string model = std::string(DOP_SOURCE_DIR) + "/tests/data/models/gbt.json";
  const std::string dop = dop::test::dop_binary();
  const std::string cache = "DOP_CACHE_DIR='" + dir + "/cache' ";
  auto r = run_command("env -u DOP_BUNDLES -u DOP_BUNDLER " + cache + "'" + dop + "' exec --config auto --model '" +
                       model + "' --log -- '" + app() + "' vecadd 65536 2");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("vecadd: OK") != std::string::npos);
  CHECK(r.out.find("forms of vecadd: made by " + dop) != std::string::npos);
  auto lines = log_lines(r.out, "vecadd");
  CHECK(lines.size() == 2);
  for (const auto& l : lines) CHECK(!field(l, "auto").empty());  // decided under auto (not a fallback)
  CHECK(r.out.find("fallback") == std::string::npos);
  const auto entries = run_command("ls '" + dir + "/cache/forms/' | grep -c '\\.json$'");
  CHECK(entries.out == "1\n");

  // Another process, no bundler: the cached bundle, with its malleable form (a GPU share below 1 throttles).
  const std::string later = cache + "DOP_BUNDLER=/nonexistent/dop LD_PRELOAD='" + preload() + "' DOP_LOG=1 ";
  r = run_command(later + "DOP_CONFIG=0.5,0.25 '" + app() + "' vecadd 65536 1");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("forms of vecadd: from cache " + dir + "/cache/forms/") != std::string::npos);
  lines = log_lines(r.out, "vecadd");
  REQUIRE(lines.size() == 1);
  CHECK(field(lines[0], "gpu_units") == "2/8");
  CHECK(lines[0].find("unthrottled") == std::string::npos);
  // The cached forms are read when the program is built, not at the kernel's first launch (here there is none).
  r = run_command(later + "DOP_CONFIG=auto DOP_MODEL='" + model + "' '" + app() + "' build");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("build: OK") != std::string::npos);
  CHECK(r.out.find("forms of vecadd: from cache " + dir + "/cache/forms/") != std::string::npos);
  CHECK(log_lines(r.out, "vecadd").empty());
  // Without an entry in the cache the build reads nothing and runs no bundler (that waits for a launch).
  r = run_command("DOP_CACHE_DIR='" + dir + "/none' DOP_BUNDLER='" + dop + "' LD_PRELOAD='" + preload() +
                  "' DOP_LOG=1 DOP_CONFIG=auto DOP_MODEL='" + model + "' '" + app() + "' build");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("forms of vecadd") == std::string::npos);
  CHECK(run_command("ls '" + dir + "/none/forms' 2>/dev/null | wc -l").out == "0\n");

  // A corrupt entry is ignored and made again.
  run_command("for f in '" + dir + "'/cache/forms/*.json; do echo '{ broken' > \"$f\"; done");
  r = run_command(cache + "DOP_BUNDLER='" + dop + "' DOP_MODEL='" + model + "' LD_PRELOAD='" + preload() +
                  "' DOP_LOG=1 DOP_CONFIG=auto '" + app() + "' vecadd 65536 1");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("cache entry ignored and made again") != std::string::npos);
  CHECK(r.out.find("forms of vecadd: made by") != std::string::npos);
  lines = log_lines(r.out, "vecadd");
  REQUIRE(!lines.empty());
  CHECK(!field(lines.back(), "auto").empty());

  // An analysis that does not finish in time: a negative entry with the reason, the launch falls back under auto
  // (where the model is asked at once: no exploration budget), and a later process does not try again.
  const std::string neg = "DOP_CACHE_DIR='" + dir + "/negative' DOP_MODEL='" + model + "' LD_PRELOAD='" + preload() +
                          "' DOP_LOG=1 DOP_CONFIG=auto DOP_AUTO_EXPLORE_MS=0 ";
  r = run_command(neg + "DOP_BUNDLER='" + dop + "' DOP_BUNDLER_TIMEOUT=0.001 '" + app() + "' vecadd 65536 1");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("vecadd: OK") != std::string::npos);
  CHECK(r.out.find("timed out after 0.001 s; cached as a negative entry") != std::string::npos);
  CHECK(r.out.find("kernel=vecadd fallback: dop failed: DOP_CONFIG=auto: the analysis") != std::string::npos);
  r = run_command(neg + "DOP_BUNDLER=/nonexistent/dop '" + app() + "' vecadd 65536 1");
  INFO(r.out);
  CHECK(r.out.find("analysis failed before: the analysis") != std::string::npos);
  CHECK(r.out.find("delete it to try again") != std::string::npos);
  CHECK(r.out.find("vecadd: OK") != std::string::npos);
}

// A runtime-only machine records what the app builds (dop exec --record); dop bundle --from-record makes the bundles
// elsewhere; the folder works as DOP_BUNDLES for the same app.
TEST_CASE("intercept: record, bundle from the record, run with the bundles", "[intercept]") {
  const std::string dir = std::string(DOP_BINARY_DIR) + "/test_intercept_record";
  run_command("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
  const std::string dop = dop::test::dop_binary();
  // DOP_BUNDLER=/nonexistent: no forms are made on the fly while recording (as on a runtime-only machine).
  const std::string rec = "DOP_BUNDLER=/nonexistent DOP_CACHE_DIR='" + dir + "/cache' '" + dop + "' exec --record '" +
                          dir + "/rec' --config 1,0 -- '" + app() + "' ";
  for (const char* args : {"vecadd 65536 1", "vecadd 4096 2", "rw2d"}) {
    auto r = run_command(rec + args);
    INFO(r.out);
    REQUIRE(r.rc == 0);
  }
  // One record per distinct program: vecadd's and rw2d's.
  CHECK(run_command("ls '" + dir + "/rec/' | grep -c '\\.json$'").out == "2\n");
  CHECK(run_command("ls '" + dir + "/rec/' | grep -c '\\.cl$'").out == "2\n");
  auto made = run_command("'" + dop + "' bundle --from-record '" + dir + "/rec' -o '" + dir + "/bundles'");
  INFO(made.out);
  REQUIRE(made.rc == 0);
  CHECK(made.out.find("2 bundles made from 2 recorded programs") != std::string::npos);
  // A record without kernel names (an implementation that did not give them): every kernel of its source.
  run_command("mkdir -p '" + dir + "/nonames' && cd '" + dir +
              "/rec' && for f in *.json; do grep -q vecadd \"$f\" && " + "cp \"${f%.json}.cl\" '" + dir +
              "/nonames/' && tr -d '\\n' < \"$f\" | sed 's/\"kernels\": *\\[[^]]*\\]/" + "\"kernels\": []/' > '" + dir +
              "/nonames/'\"$f\"; done");
  const auto nonames = run_command("'" + dop + "' bundle --from-record '" + dir + "/nonames' -o '" + dir + "/b2'");
  INFO(nonames.out);
  CHECK(nonames.rc == 0);
  CHECK(nonames.out.find("no kernel names recorded; the source has 1") != std::string::npos);
  CHECK(nonames.out.find("1 bundle made from 1 recorded program") != std::string::npos);

  const std::string model = std::string(DOP_SOURCE_DIR) + "/tests/data/models/gbt.json";
  const std::string run = "env -u DOP_BUNDLER DOP_CACHE_DIR='" + dir + "/empty' DOP_BUNDLES='" + dir +
                          "/bundles' LD_PRELOAD='" + preload() + "' DOP_LOG=1 ";
  auto r = run_command(run + "DOP_CONFIG=0.5,0.25 '" + app() + "' vecadd 65536 1");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  auto lines = log_lines(r.out, "vecadd");
  REQUIRE(lines.size() == 1);
  CHECK(field(lines[0], "gpu_units") == "2/8");  // the bundle's malleable form
  CHECK(lines[0].find("unthrottled") == std::string::npos);
  r = run_command(run + "DOP_MODEL='" + model + "' DOP_CONFIG=auto '" + app() + "' rw2d");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("rw2d: OK") != std::string::npos);
  lines = log_lines(r.out, "rw2d");
  REQUIRE(!lines.empty());
  for (const auto& l : lines) CHECK(!field(l, "auto").empty());  // decided from the bundle's code features
}
#endif
