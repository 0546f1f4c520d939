// The applications of benchmarks/apps/ (plain C, linked only against OpenCL) natively and under `dop exec`: every
// run checks its own results, the bit-exact ones give the same checksum under dop at 1,0, 0,1 and 1,1 as natively,
// dop's log shows which launches dop ran and which fell back (and why); and the driver run_apps.sh.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support.hpp"

using dop::test::run_command;

namespace {

const std::string kApps = DOP_APPS_DIR;

// The key=value pairs of the application's summary line (the one starting with "app="); empty when there is none.
std::map<std::string, std::string> summary(const std::string& out) {
  std::map<std::string, std::string> kv;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("app=", 0) != 0) continue;
    std::istringstream words(line);
    std::string w;
    while (words >> w) {
      const size_t eq = w.find('=');
      if (eq != std::string::npos) kv[w.substr(0, eq)] = w.substr(eq + 1);
    }
    break;
  }
  return kv;
}

// run_apps.sh --tsv's rows by their mode (the header's row under "mode"), each row's ten cells.
std::map<std::string, std::vector<std::string>> tsv_rows_by_mode(const std::string& tsv) {
  std::map<std::string, std::vector<std::string>> by_mode;
  std::istringstream rows(tsv);
  for (std::string line; std::getline(rows, line);) {
    std::vector<std::string> cells;
    std::istringstream cs(line);
    for (std::string c; std::getline(cs, c, '\t');) cells.push_back(c);
    if (cells.size() == 10) by_mode[cells[1]] = cells;
  }
  return by_mode;
}

struct Launches {
  std::map<std::string, int> native;     // kernel -> launches run natively (the decision was the app's device)
  std::map<std::string, int> by_dop;     // kernel -> launches dop ran
  std::map<std::string, int> fell_back;  // kernel -> launches that fell back
  std::set<std::string> reasons;         // the fallback reasons
};

// What dop's log (DOP_LOG=1) says about each launch.
Launches launches(const std::string& out) {
  Launches l;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("dop-intercept: kernel=", 0) != 0) continue;
    const size_t b = line.find('=') + 1;
    const std::string kernel = line.substr(b, line.find(' ', b) - b);
    const size_t fb = line.find(" fallback: ");
    if (line.find(" route=native ") != std::string::npos) {
      ++l.native[kernel];
    } else if (fb == std::string::npos) {
      ++l.by_dop[kernel];
    } else {
      ++l.fell_back[kernel];
      l.reasons.insert(kernel + ": " + line.substr(fb + 11));
    }
  }
  return l;
}

int total(const std::map<std::string, int>& m) {
  int n = 0;
  for (const auto& [k, v] : m) n += v;
  return n;
}

// Runs `app args` natively (first device) and under dop exec at 1,0, 0,1 and 1,1 with the log on: every run exits 0
// with check=ok and the same launch count; exact applications give the native checksum. At 1,0 (the application's
// own device, pocl:0, in whole) every launch runs natively; otherwise the launches of the kernels in `fallback` fall
// back (with a reason), every other launch runs with dop.
void check_app(const std::string& app, const std::string& args, const std::set<std::string>& fallback = {}) {
  const std::string cmd = "'" + kApps + "/" + app + "' " + args + " --size small";
  const auto native = run_command("APP_DEVICE=first " + cmd);
  INFO(native.out);
  REQUIRE(native.rc == 0);
  const auto want = summary(native.out);
  REQUIRE(want.count("check"));
  CHECK(want.at("check") == "ok");
  CHECK(want.at("app") == app);
  const int n = std::stoi(want.at("launches"));
  CHECK(n > 0);
  for (const std::string config : {"1,0", "0,1", "1,1"}) {
    const auto r = run_command("'" + dop::test::dop_binary() + "' exec --config " + config + " --log -- " + cmd);
    INFO(app << " " << args << " under dop exec --config " << config << "\n" << r.out);
    REQUIRE(r.rc == 0);
    const auto got = summary(r.out);
    REQUIRE(got.count("check"));
    CHECK(got.at("check") == "ok");
    CHECK(got.at("launches") == want.at("launches"));
    if (want.at("exact") == "yes") CHECK(got.at("checksum") == want.at("checksum"));
    const Launches l = launches(r.out);
    CHECK(total(l.native) + total(l.by_dop) + total(l.fell_back) == n);
    if (config == "1,0") {
      CHECK(total(l.native) == n);
      continue;
    }
    CHECK(total(l.native) == 0);
    for (const auto& [kernel, count] : l.fell_back) {
      INFO(kernel << " fell back " << count << " times");
      CHECK(fallback.count(kernel) == 1);
    }
    for (const auto& k : fallback) CHECK(l.fell_back.count(k) == 1);
    for (const auto& reason : l.reasons) UNSCOPED_INFO("fallback: " << reason);
  }
}

}  // namespace

TEST_CASE("apps: stencil is exact under dop, its __local residual reduction too", "[apps]") {
  check_app("stencil", "");
}

// Under auto the interposer reads its model on a thread of its own from when a launch class has spent a quarter of
// its exploration budget; a process that ends while it is still being read (the platform's 0.6 MB model; stencil's
// small size runs its classes 10-30 ms here, the budgets below 10-80 ms) waits for it at exit, and the reading meets
// no static the exit destroyed first (an earlier reader crashed about one run in ten this way).
TEST_CASE("apps: a process that ends while dop still reads its model exits cleanly", "[apps]") {
  const std::string model = std::string(DOP_SOURCE_DIR) + "/models/h100-xeon16/gbt.json";
  for (int run = 0; run < 32; ++run) {
    const auto r =
        run_command("DOP_AUTO_EXPLORE_MS=" + std::to_string(10 * (1 + run % 8)) + " '" + dop::test::dop_binary() +
                    "' exec --config auto --model '" + model + "' -- '" + kApps + "/stencil' --size small");
    INFO("run " << run << "\n" << r.out);
    REQUIRE(r.rc == 0);
    CHECK(summary(r.out).at("check") == "ok");
  }
}

TEST_CASE("apps: gemm_chain (copies and maps between launches) is exact under dop", "[apps]") {
  check_app("gemm_chain", "");
}

TEST_CASE("apps: lu (an NDRange that shrinks every step) is exact under dop", "[apps]") { check_app("lu", ""); }

TEST_CASE("apps: compute (one long float kernel) passes its own check under dop", "[apps]") {
  check_app("compute", "");
}

TEST_CASE("apps: tiny launches are exact under dop, in order, out of order and from two threads", "[apps]") {
  check_app("tiny", "");
  check_app("tiny", "--ooo");
  check_app("tiny", "--threads 2 --launches 60");
}

TEST_CASE("apps: stream is exact under dop, its data from the host at every step too", "[apps]") {
  check_app("stream", "");
  check_app("stream", "--host");
}

// Under auto, a launch whose class the thread saw decided on the application's device, with nothing the decision reads
// changed since, is enqueued without a decision (docs/intercept.md, "Overhead"). The enqueue-bound applications (lu's
// shrinking NDRange and its step scalar, stencil's buffers swapped every step, tiny from two threads and out of
// order, stream fed from the host at every step) stay exact whether their classes have not asked the model yet (the
// default budget: these runs are shorter) or asked it at their first launch, and with DOP_TEST_CHECK_REPEATS=1 each
// launch taken that way agrees with what the full decision would read.
TEST_CASE("apps: under auto, launches that repeat a native class stay exact and agree with the full decision",
          "[apps]") {
  const std::string model = std::string(DOP_SOURCE_DIR) + "/tests/data/models/gbt.json";
  const std::string cache = std::string(DOP_BINARY_DIR) + "/test_apps_repeat_cache";
  const std::pair<std::string, std::string> apps[] = {
      {"lu", ""}, {"stencil", ""}, {"tiny", "--threads 2 --launches 60"}, {"tiny", "--ooo"}, {"stream", "--host"}};
  for (const auto& [app, args] : apps) {
    const std::string cmd = "'" + kApps + "/" + app + "' " + args + " --size small";
    const auto native = run_command("APP_DEVICE=first " + cmd);
    INFO(native.out);
    REQUIRE(native.rc == 0);
    const auto want = summary(native.out);
    for (const std::string budget : {"", "DOP_AUTO_EXPLORE_MS=0 "}) {
      for (const std::string check : {"DOP_TEST_CHECK_REPEATS=1 ", ""}) {
        const auto r = run_command("APP_DEVICE=first DOP_CACHE_DIR='" + cache + "' " + budget + check + "'" +
                                   dop::test::dop_binary() + "' exec --config auto --model '" + model + "'" +
                                   (check.empty() ? "" : " --log") + " -- " + cmd);
        INFO(app << " " << args << " " << budget << check << "\n" << r.out);
        REQUIRE(r.rc == 0);
        const auto got = summary(r.out);
        REQUIRE(got.count("check"));
        CHECK(got.at("check") == "ok");
        if (want.at("exact") == "yes") CHECK(got.at("checksum") == want.at("checksum"));
        CHECK(r.out.find("repeat mismatch") == std::string::npos);
        // Classes not asked yet run natively: after their first two launches, each repeats, but where it is fed from
        // the host (stream --host writes its inputs before every launch).
        if (budget.empty() && !check.empty())
          CHECK((r.out.find("dop-intercept: repeat=native ") != std::string::npos) == (args != "--host"));
      }
    }
  }
}

// stream --host writes its inputs and reads its result at every step. Once a dop launch has used the buffers, the
// application's writes go into dop's host copies (`absorbed=`), and the result is read from where each device left
// its part: dop's copy for the CPU's work-groups, the application's buffer for the GPU's (`read= from_dop= from_app=`;
// nothing is flushed). How the work divides is dynamic: after a launch in which the CPU ran work-groups the read takes
// some bytes from dop's copy, and from the application's buffer too where the GPU also ran some. Exact at every step.
TEST_CASE("apps: a host-streaming application's writes go to dop's copy, its reads are split", "[apps]") {
  const int n = 1 << 18, reps = 4;
  const size_t bytes = size_t(n) * sizeof(float);
  const std::string cmd = "'" + kApps + "/stream' --host --n " + std::to_string(n) + " --reps " + std::to_string(reps);
  const auto native = run_command("APP_DEVICE=first " + cmd);
  REQUIRE(native.rc == 0);
  const auto r = run_command("APP_DEVICE=first '" + dop::test::dop_binary() +
                             "' exec --cpu pocl:1 --gpu pocl:0 --memory copy --config 0.5,0.5 --log -- " + cmd);
  INFO(r.out);
  REQUIRE(r.rc == 0);
  const auto got = summary(r.out);
  REQUIRE(got.count("check"));
  CHECK(got.at("check") == "ok");
  CHECK(got.at("checksum") == summary(native.out).at("checksum"));
  CHECK(r.out.find("flushed=") == std::string::npos);
  auto count = [](const std::string& line, const std::string& key) {
    const size_t p = line.find(" " + key + "=");
    return p == std::string::npos ? size_t(0) : size_t(std::stoull(line.substr(p + key.size() + 2)));
  };
  int absorbed = 0, launches = 0, reads = 0;
  size_t cpu_wg = 0, gpu_wg = 0;  // of the last launch
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("absorbed=" + std::to_string(bytes) + " ") != std::string::npos) ++absorbed;
    if (line.find("kernel=triad") != std::string::npos && line.find("route=dop") != std::string::npos) {
      ++launches;
      cpu_wg = count(line, "cpu_wg");
      gpu_wg = count(line, "gpu_wg");
      if (cpu_wg > 0) ++reads;  // the read after it involves dop's copy
    }
    const size_t p = line.find("dop-intercept: read=");
    if (p == std::string::npos) continue;
    INFO(line << " after a launch with cpu_wg=" << cpu_wg << " gpu_wg=" << gpu_wg);
    CHECK(count(line.substr(p + 14), "read") == bytes);  // " read=..."
    CHECK(count(line, "from_dop") + count(line, "from_app") == bytes);
    CHECK(count(line, "from_dop") > 0);
    CHECK((count(line, "from_app") > 0) == (gpu_wg > 0));
    --reads;
  }
  CHECK(launches == reps);
  CHECK(reads == 0);                  // one read line after each launch in which the CPU ran work-groups
  CHECK(absorbed == 2 * (reps - 1));  // b and c at every step after the first launch
}

// Under auto, stream --host's launches are fed from the host (its writes cover its buffers before each launch): the
// model is told the data is in host memory (`data=host fed=host`). Where the model's choice is dop's way, the launch on
// the application's device timed before the first try makes the buffers take the application's writes (`absorbed=`
// before that try), so that the try (`auto=model`, timed over the step from the application's first write) finds its
// inputs in dop's copies. Whichever way wins here, every result is exact.
TEST_CASE("apps: under auto a host-fed class is decided as host data and dop's first try finds its inputs", "[apps]") {
  const std::string model = std::string(DOP_SOURCE_DIR) + "/models/h100-xeon16/gbt.json";
  const std::string cmd = "'" + kApps + "/stream' --host --n 262144 --reps 12";
  const auto native = run_command("APP_DEVICE=first " + cmd);
  REQUIRE(native.rc == 0);
  const auto r = run_command("APP_DEVICE=first DOP_AUTO_EXPLORE_MS=1 '" + dop::test::dop_binary() +
                             "' exec --config auto --model '" + model +
                             "' --cpu pocl:1 --gpu pocl:0 --memory copy --log -- " + cmd);
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(summary(r.out).at("checksum") == summary(native.out).at("checksum"));
  std::vector<std::string> ways;  // each launch's auto= way, and "absorbed" for each absorbed write
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("dop-intercept: absorbed=") != std::string::npos) ways.push_back("absorbed");
    if (line.find("kernel=triad") == std::string::npos) continue;
    CHECK(line.find(" data=host fed=host ") != std::string::npos);
    const size_t p = line.find(" auto=");
    REQUIRE(p != std::string::npos);
    ways.push_back(line.substr(p + 6, line.find(' ', p + 6) - p - 6));
    if (ways.back() == "model") CHECK(line.find(" route=dop ") != std::string::npos);
  }
  CHECK(std::count(ways.begin(), ways.end(), "warm-up") == 0);
  const auto first_try = std::find(ways.begin(), ways.end(), "model");
  if (first_try == ways.end()) {  // the model chose the application's device: nothing to try, nothing absorbed
    CHECK(std::count(ways.begin(), ways.end(), "native") == 12);
    CHECK(std::count(ways.begin(), ways.end(), "absorbed") == 0);
    return;
  }
  REQUIRE(first_try - ways.begin() >= 3);
  CHECK(*(first_try - 1) == "absorbed");  // b and c, written after the launch before it
  CHECK(*(first_try - 2) == "absorbed");
  CHECK(*(first_try - 3) == "native");
}

// The application's queue on dop's GPU in copy mode, both devices: dop's GPU part runs on the application's own
// buffers, and (where the kernel has a footprint: an analysis build, or bundles) each device's chunks get only what
// they touch, staged into those buffers by the engine's own threads while the application waits on its reads.
TEST_CASE("apps: stream and stencil are exact on their own buffers with both devices in copy mode", "[apps]") {
  for (const std::string app : {"stream", "stencil"}) {
    const std::string cmd = "'" + kApps + "/" + app + "' --size small";
    const auto native = run_command("APP_DEVICE=first " + cmd);
    REQUIRE(native.rc == 0);
    const auto want = summary(native.out);
    const auto r = run_command("APP_DEVICE=first '" + dop::test::dop_binary() +
                               "' exec --cpu pocl:1 --gpu pocl:0 --memory copy --config 0.5,0.5 -- " + cmd);
    INFO(app << "\n" << r.out);
    REQUIRE(r.rc == 0);
    const auto got = summary(r.out);
    REQUIRE(got.count("check"));
    CHECK(got.at("check") == "ok");
    if (want.at("exact") == "yes") CHECK(got.at("checksum") == want.at("checksum"));
  }
}

TEST_CASE("apps: device choice and bad input", "[apps]") {
  const std::string stream = "'" + kApps + "/stream' --n 4096 --reps 1";
  // Both PoCL devices are CPUs here: asking for a GPU falls back to the first device, and says so.
  auto gpu = run_command("APP_DEVICE=gpu " + stream);
  INFO(gpu.out);
  REQUIRE(gpu.rc == 0);
  CHECK(gpu.out.find("no GPU device (asked for gpu): using the first device") != std::string::npos);
  CHECK(summary(gpu.out).at("requested") == "gpu");
  CHECK(summary(gpu.out).at("device_type") == "cpu");
  CHECK(summary(gpu.out).at("size") == "custom");
  auto cpu = run_command("'" + kApps + "/stream' --n 4096 --reps 1 --device cpu");
  REQUIRE(cpu.rc == 0);
  CHECK(summary(cpu.out).at("device_type") == "cpu");
  for (const std::string bad : {"--size huge", "--n -3", "--reps x", "--frobnicate", "--device tpu"}) {
    auto r = run_command("'" + kApps + "/stream' " + bad);
    INFO(bad << ": " << r.out);
    CHECK(r.rc == 2);
    CHECK(summary(r.out).empty());
    CHECK(r.out.find("stream: ") != std::string::npos);
  }
  auto missing = run_command("'" + kApps + "/stream' --source /nonexistent/stream.cl");
  CHECK(missing.rc == 2);
  CHECK(missing.out.find("cannot open the kernel source /nonexistent/stream.cl") != std::string::npos);
}

// The section clocks (app_common.h): an application whose section ends in app_read_result reports how long enqueueing
// took (submit_ms, within kernel_ms), the process's CPU time over the section and its own thread's (within the
// process's); one whose section does not (tiny: its threads time their own) reports none of them.
TEST_CASE("apps: the timed section's clocks: enqueueing time and CPU time", "[apps]") {
  for (const std::string app : {"lu", "stencil"}) {
    auto r = run_command("'" + kApps + "/" + app + "' --size small");
    INFO(app << ": " << r.out);
    REQUIRE(r.rc == 0);
    const auto kv = summary(r.out);
    REQUIRE(kv.count("submit_ms") == 1);
    const double kernel = std::stod(kv.at("kernel_ms")), submit = std::stod(kv.at("submit_ms"));
    const double cpu = std::stod(kv.at("cpu_ms")), main_cpu = std::stod(kv.at("main_cpu_ms"));
    CHECK(submit > 0);
    CHECK(submit <= kernel);
    CHECK(main_cpu > 0);
    CHECK(main_cpu <= cpu + 0.01);  // the clocks' resolution
  }
  auto tiny = run_command("'" + kApps + "/tiny' --size small");
  REQUIRE(tiny.rc == 0);
  CHECK(summary(tiny.out).count("submit_ms") == 0);
  CHECK(summary(tiny.out).count("kernel_ms") == 1);
}

// A kernel file with one change makes the application's own check fail: exit status 1, check=FAIL and what differs.
static void check_detects(const std::string& app, const std::string& from, const std::string& to,
                          const std::string& says) {
  std::string source = dop::test::read_file(kApps + "/" + app + ".cl");
  const size_t at = source.find(from);
  REQUIRE(at != std::string::npos);
  source.replace(at, from.size(), to);
  const std::string path = std::string(DOP_BINARY_DIR) + "/test_apps_wrong_" + app + ".cl";
  std::ofstream(path) << source;
  auto r = run_command("APP_DEVICE=first '" + kApps + "/" + app + "' --source '" + path + "'");
  INFO(r.out);
  CHECK(r.rc == 1);
  CHECK(summary(r.out).at("check") == "FAIL");
  CHECK(r.out.find(says) != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("apps: each application's own check catches a wrong kernel", "[apps]") {
  check_detects("stream", "b[i] + s * c[i]", "b[i] + s * c[i] + (i == 777)", "stream: a[777] is");
  check_detects("gemm_chain", "out[i] = a[i] + b[i]", "out[i] = a[i] + b[i] + (i == 5)", "gemm_chain: after 3 steps");
  check_detects("lu", "if (i >= n || j >= n) return;", "if (i >= n || j >= n || (i == 9 && j == 11)) return;",
                "lu: row ");
  check_detects("stencil", "grid[y * w + w - 1] = params[1];", "grid[y * w + w - 1] = params[1] + (y == 3);",
                "stencil: ");
  check_detects("tiny", "+ t + (uint)i", "+ t + (uint)i + (t == 150 && i == 3)", "tiny: thread 0 chain 0 differs");
  check_detects("compute", "ax += s * dx;", "ax += s * dx * 1.01f;", "compute: body ");
}

TEST_CASE("apps: run_apps.sh tables the runs and fails on a wrong result", "[apps]") {
  const std::string driver = std::string(DOP_SOURCE_DIR) + "/benchmarks/apps/run_apps.sh";
  const std::string tsv = std::string(DOP_BINARY_DIR) + "/test_apps_driver.tsv";
  auto r = run_command("'" + driver + "' --bin '" + kApps + "' --dop '" + dop::test::dop_binary() +
                       "' --apps 'tiny --launches 20' --repeat 2 --configs 1,0 --tsv '" + tsv + "'");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("note: no GPU device: APP_DEVICE=gpu fell back to the first device for 1 of 1 applications") !=
        std::string::npos);
  const std::string table = dop::test::read_file(tsv);
  INFO(table);
  for (const char* mode :
       {"tiny --launches 20\tnative-gpu\t", "tiny --launches 20\tnative-cpu\t", "tiny --launches 20\tdop:1,0\t"})
    CHECK(table.find(mode) != std::string::npos);
  // Every row ends with its runs' kernel_ms, two here, of which the median column is the mean.
  std::istringstream rows(table);
  std::string row;
  std::getline(rows, row);
  CHECK(row.substr(row.rfind('\t') + 1) == "kernel_ms_runs");
  int checked = 0;
  while (std::getline(rows, row)) {
    std::vector<std::string> cells;
    std::istringstream cs(row);
    for (std::string c; std::getline(cs, c, '\t');) cells.push_back(c);
    REQUIRE(cells.size() == 10);
    std::istringstream runs(cells[9]);
    std::vector<double> v{std::istream_iterator<double>(runs), std::istream_iterator<double>()};
    REQUIRE(v.size() == 2);
    CHECK(std::stod(cells[2]) == Approx((v[0] + v[1]) / 2).epsilon(1e-3));
    ++checked;
  }
  CHECK(checked == 3);
  // Round 2 starts where round 1's second mode ran: no mode always follows the same one.
  const size_t round2 = r.out.find("(2/2)");
  REQUIRE(round2 != std::string::npos);
  CHECK(r.out.rfind("\n", round2) == r.out.find("\n  tiny --launches 20: native-cpu (2/2)"));
  std::remove(tsv.c_str());
  // --lib NAME=BUILD_DIR: that build tree's dop exec whole (its bin/dop, its lib/libdop_intercept.so), one mode each.
  r = run_command("'" + driver + "' --bin '" + kApps + "' --dop /nonexistent/dop --lib 'tree=" + DOP_BINARY_DIR +
                  "' --apps 'tiny --launches 20' --repeat 1 --warmup 0 --configs 1,0 --tsv '" + tsv + "'");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK(dop::test::read_file(tsv).find("tiny --launches 20\tdop:1,0@tree\t") != std::string::npos);
  std::remove(tsv.c_str());
  // --models NAME=MODEL: auto once per model, in the same rounds (here two copies of a committed model).
  const std::string model = std::string(DOP_SOURCE_DIR) + "/tests/data/models/gbt.json";
  r = run_command("'" + driver + "' --bin '" + kApps + "' --dop '" + dop::test::dop_binary() +
                  "' --models 'a=" + model + "' --models 'b=" + model +
                  "' --apps 'tiny --launches 20' --repeat 1 --configs none --tsv '" + tsv + "'");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  for (const char* mode : {"tiny --launches 20\tdop:auto=a\t", "tiny --launches 20\tdop:auto=b\t"})
    CHECK(dop::test::read_file(tsv).find(mode) != std::string::npos);
  std::remove(tsv.c_str());
  r = run_command("'" + driver + "' --models a=/nonexistent.json --apps tiny");
  CHECK(r.rc == 2);
  CHECK(r.out.find("cannot read the model /nonexistent.json (--models a)") != std::string::npos);
  // --natives gpu: no native CPU runs; the dop mode's ratio is to the native GPU run's median.
  r = run_command("'" + driver + "' --bin '" + kApps + "' --dop '" + dop::test::dop_binary() +
                  "' --natives gpu --apps 'tiny --launches 20' --repeat 1 --configs 1,0 --tsv '" + tsv + "'");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  {
    const std::string t = dop::test::read_file(tsv);
    INFO(t);
    CHECK(t.find("\tnative-cpu\t") == std::string::npos);
    auto by_mode = tsv_rows_by_mode(t);
    REQUIRE(by_mode.count("native-gpu"));
    REQUIRE(by_mode.count("dop:1,0"));
    CHECK(by_mode["dop:1,0"][8] == by_mode["native-gpu"][2]);  // best native = the native GPU's median
    // The ratio is printed with three decimals: within half of the last one (0.187 for 0.18651 is right).
    CHECK(std::stod(by_mode["dop:1,0"][4]) ==
          Approx(std::stod(by_mode["dop:1,0"][2]) / std::stod(by_mode["native-gpu"][2])).epsilon(0).margin(5.01e-4));
  }
  // --again: the native GPU run a second time, as a mode whose ratio is to the first (an A/A calibration); it needs
  // no dop binary.
  r = run_command("'" + driver + "' --bin '" + kApps + "' --dop /nonexistent/dop --natives gpu --again --apps " +
                  "'tiny --launches 20' --repeat 2 --configs none --tsv '" + tsv + "'");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  {
    const std::string t = dop::test::read_file(tsv);
    INFO(t);
    auto by_mode = tsv_rows_by_mode(t);
    CHECK(by_mode.size() == 3);  // the header, native-gpu, again:native-gpu
    REQUIRE(by_mode.count("again:native-gpu"));
    CHECK(by_mode["again:native-gpu"][8] == by_mode["native-gpu"][2]);  // the best native is the first run's
    CHECK(std::stod(by_mode["again:native-gpu"][4]) ==
          Approx(std::stod(by_mode["again:native-gpu"][2]) / std::stod(by_mode["native-gpu"][2]))
              .epsilon(0)
              .margin(5.01e-4));
  }
  std::remove(tsv.c_str());
  r = run_command("'" + driver + "' --natives 'gpu tpu' --apps tiny");
  CHECK(r.rc == 2);
  CHECK(r.out.find("--natives takes gpu and/or cpu, not 'tpu'") != std::string::npos);

  // A stand-in for a bit-exact application whose output differs between runs: its checksum is its APP_DEVICE.
  const std::string fake = std::string(DOP_BINARY_DIR) + "/test_apps_fake";
  REQUIRE(std::system(("mkdir -p '" + fake + "'").c_str()) == 0);
  {
    std::ofstream s(fake + "/bad");
    s << "#!/bin/sh\n"
         "echo \"app=bad size=small device=x device_type=cpu requested=gpu launches=1 kernel_ms=1.0 check=ok "
         "checksum=0x$APP_DEVICE exact=yes\"\n";
  }
  REQUIRE(std::system(("chmod +x '" + fake + "/bad'").c_str()) == 0);
  auto bad = run_command("'" + driver + "' --bin '" + fake + "' --apps bad --repeat 1 --configs none");
  INFO(bad.out);
  CHECK(bad.rc == 1);
  CHECK(bad.out.find("FAIL: bad (native-cpu): checksum 0xcpu differs from the native run's 0xgpu") !=
        std::string::npos);
  auto usage = run_command("'" + driver + "' --size huge");
  CHECK(usage.rc == 2);
  CHECK(usage.out.find("--size is small, medium or large, not 'huge'") != std::string::npos);
}
