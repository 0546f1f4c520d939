// libdop_intercept.so under an unmodified OpenCL application (tests/apps/cl_app.c, plain C linked only against
// OpenCL): outputs exactly right at every configuration, DOP_LOG showing where dop ran it, fallback for what it
// does not support, and `dop exec`.
#include <catch2/catch.hpp>
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

TEST_CASE("intercept: a __local argument falls back to the real launch and stays right", "[intercept]") {
  auto r = run_app("0.5,0.5", "local");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("local: OK") != std::string::npos);
  const auto lines = log_lines(r.out, "group_sum");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("fallback: argument 2: __local memory") != std::string::npos);
}

TEST_CASE("intercept: launches from two application threads at once", "[intercept]") {
  auto r = run_app("0.5,0.5", "threads");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("threads: OK") != std::string::npos);
  const auto lines = log_lines(r.out, "vecadd");
  REQUIRE(lines.size() == 6);
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
  const std::string env = "DOP_BUNDLES='" + dir + "/b' DOP_MEMORY=copy ";
  auto r =
      run_command(env + "LD_PRELOAD='" + preload() + "' DOP_CONFIG=0.5,0.25 DOP_LOG=1 '" + app() + "' vecadd 65536 1");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("vecadd: OK") != std::string::npos);
  auto lines = log_lines(r.out, "vecadd");
  REQUIRE(lines.size() == 1);
  CHECK(field(lines[0], "gpu_units") == "2/8");  // throttled by the bundle's malleable form
  CHECK(lines[0].find("unthrottled") == std::string::npos);
  // The model chooses.
  const std::string model = std::string(DOP_SOURCE_DIR) + "/tests/data/models/gbt.json";
  r = run_command(env + "DOP_MODEL='" + model + "' LD_PRELOAD='" + preload() + "' DOP_CONFIG=auto DOP_LOG=1 '" + app() +
                  "' vecadd 65536 2");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("vecadd: OK") != std::string::npos);
  lines = log_lines(r.out, "vecadd");
  REQUIRE(lines.size() == 2);
  for (const auto& l : lines) {
    CHECK(field(l, "auto") == "model");
    CHECK(l.find("fallback") == std::string::npos);
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
  CHECK(field(lines[0], "auto") == "model");
  r = run_command("env -u DOP_MODEL '" + dop + "' exec --config auto -- '" + app() + "' vecadd 1024 1");
  CHECK(r.rc == 2);  // bad usage
  CHECK(r.out.find("--config auto needs --model") != std::string::npos);
}
#endif
