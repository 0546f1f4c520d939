// The sweep as users run it: a dataset on PoCL with two devices, resumed after kill -9 at random points with
// exactly the rows of an uninterrupted sweep, and shards that merge to the whole.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "dop/sweep.hpp"
#include "support.hpp"

using dop::test::dop_binary;
using dop::test::run_command;

namespace {

std::string data(const std::string& f) { return std::string(DOP_SOURCE_DIR) + "/tests/data/run/" + f; }
std::string tmp(const std::string& f) { return std::string(DOP_BINARY_DIR) + "/sweep_test_" + f; }
const std::string kSpecs = " --spec " + data("saxpy.json") + " --spec " + data("saxpy_b.json") + " --spec " +
                           data("saxpy_c.json") + " --platform-id test --repeat 1 --warmup 0";

struct Rows {
  std::vector<std::string> header;
  std::multiset<std::string> keys;  // workload|cpu|gpu
  size_t invalid = 0;
};

Rows read_rows(const std::string& path) {
  Rows r;
  std::ifstream f(path);
  std::string line;
  size_t iw = 0, ic = 0, ig = 0, iv = 0, it = 0;
  while (std::getline(f, line)) {
    auto fields = dop::csv_split(line);
    if (r.header.empty()) {
      r.header = fields;
      auto idx = [&](const char* n) { return size_t(std::find(fields.begin(), fields.end(), n) - fields.begin()); };
      iw = idx("workload");
      ic = idx("cpu_util");
      ig = idx("gpu_util");
      iv = idx("valid");
      it = idx("time_ms_median");
      continue;
    }
    REQUIRE(fields.size() == r.header.size());
    r.keys.insert(fields[iw] + "|" + fields[ic] + "|" + fields[ig]);
    if (fields[iv] != "1") ++r.invalid;
    CHECK(std::stod(fields[it]) > 0);
  }
  return r;
}

// Lines in `path` (0 when it does not exist yet).
size_t count_lines(const std::string& path) {
  std::ifstream f(path);
  return size_t(std::count(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>(), '\n'));
}

// Starts `dop sweep ARGS --out OUT` and kills it with SIGKILL once OUT holds `lines` lines and a further `delay_us`
// microseconds have passed (if it is still running): kill points follow the sweep's progress, not the clock, so
// they fall inside the sweep on a fast machine and a slow one alike. Returns true if it finished by itself.
bool run_and_kill(const std::string& args, const std::string& out, size_t lines, int delay_us) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const std::string cmd = "exec " + dop_binary() + " sweep " + args + " --out " + out + " >/dev/null 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);  // a hung sweep fails the test
  int status = 0;
  while (count_lines(out) < lines && std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
  if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return false;
}

// Runs `dop sweep ARGS --out OUT` into a fresh file and checks that it wrote `n` distinct valid rows.
void expect_fresh_sweep(const std::string& args, const std::string& out, size_t n) {
  std::remove(out.c_str());
  const auto r = run_command(dop_binary() + " sweep " + args + " --out " + out);
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains(std::to_string(n) + " rows written, 0 already present, 0 invalid"));
  const Rows rows = read_rows(out);
  CHECK(rows.keys.size() == n);
  CHECK(std::set<std::string>(rows.keys.begin(), rows.keys.end()).size() == n);
  CHECK(rows.invalid == 0);
}

}  // namespace

TEST_CASE("a small sweep produces a valid dataset over the full grid") {
  const std::string out = tmp("full.csv");
  std::remove(out.c_str());
  const auto r = run_command(dop_binary() + " sweep" + kSpecs + " --out " + out);
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("132 rows written, 0 already present, 0 invalid"));
  const Rows rows = read_rows(out);
  CHECK(rows.header == dop::dataset_columns({}));
  CHECK(rows.keys.size() == 132);
  CHECK(std::set<std::string>(rows.keys.begin(), rows.keys.end()).size() == 132);
  CHECK(rows.invalid == 0);
  // Running again adds nothing.
  const auto again = run_command(dop_binary() + " sweep" + kSpecs + " --out " + out);
  CHECK_THAT(again.out, Catch::Contains("0 rows written, 132 already present"));
}

TEST_CASE("a sweep killed at random points and resumed has exactly the rows of an uninterrupted one") {
  const std::string out = tmp("killed.csv");
  std::remove(out.c_str());
  std::mt19937 rng(12345);
  int kills = 0;
  // Each run is killed a random number of rows after the point where the last one was (header + 132 rows in all),
  // at a random moment after that row: between rows, or inside a write or a workload's fdatasync.
  for (int attempt = 0; attempt < 40; ++attempt) {
    const size_t target = count_lines(out) + 1 + rng() % 40;
    if (run_and_kill(kSpecs, out, target, int(rng() % 3000))) break;
    ++kills;
  }
  CHECK(kills > 0);  // the test exercised at least one kill: the first target (at most row 40 of 132) is mid-sweep
  const auto finish = run_command(dop_binary() + " sweep" + kSpecs + " --out " + out);
  REQUIRE(finish.rc == 0);
  const Rows rows = read_rows(out);
  CHECK(rows.keys.size() == 132);  // a multiset: duplicates would count twice
  CHECK(std::set<std::string>(rows.keys.begin(), rows.keys.end()).size() == 132);
  CHECK(rows.invalid == 0);
}

TEST_CASE("shards merge to the whole and a torn or foreign file is handled") {
  std::vector<std::string> parts;
  for (int i = 0; i < 3; ++i) {
    const std::string p = tmp("shard" + std::to_string(i) + ".csv");
    std::remove(p.c_str());
    const auto r = run_command(dop_binary() + " sweep" + kSpecs + " --shard " + std::to_string(i) + "/3 --out " + p);
    REQUIRE(r.rc == 0);
    CHECK(read_rows(p).keys.size() == 44);  // one workload each
    parts.push_back(p);
  }
  // A torn last line, as a killed writer leaves it, is dropped by the merge.
  { std::ofstream(parts[2], std::ios::app) << "test,saxpy_c,spec,sax"; }
  const std::string merged = tmp("merged.csv");
  auto r = run_command(dop_binary() + " sweep merge " + merged + " " + parts[0] + " " + parts[1] + " " + parts[2] +
                       " " + parts[0]);  // a shard given twice adds nothing
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("merged 132 rows from 4 datasets"));
  const Rows rows = read_rows(merged);
  CHECK(rows.keys.size() == 132);
  CHECK(std::set<std::string>(rows.keys.begin(), rows.keys.end()).size() == 132);

  const std::string foreign = tmp("foreign.csv");
  { std::ofstream(foreign) << "platform_id,workload,cpu_util,gpu_util,other\n"; }
  r = run_command(dop_binary() + " sweep merge " + tmp("m2.csv") + " " + merged + " " + foreign);
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("foreign.csv: its columns differ"));
  r = run_command(dop_binary() + " sweep" + kSpecs + " --out " + foreign);
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("has other columns than this sweep writes"));
  r = run_command(dop_binary() + " sweep" + kSpecs + " --shard 3/3 --out " + tmp("x.csv"));
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("shard 3/3"));
  // Bad usage exits 2 (docs/cli.md): a malformed --shard, no --out.
  r = run_command(dop_binary() + " sweep" + kSpecs + " --shard 1of3 --out " + tmp("x.csv"));
  CHECK(r.rc == 2);
  CHECK_THAT(r.out, Catch::Contains("--shard '1of3' must be I/N"));
  r = run_command(dop_binary() + " sweep" + kSpecs);
  CHECK(r.rc == 2);
  CHECK_THAT(r.out, Catch::Contains("dop sweep needs --out DATA.csv"));
}

TEST_CASE("dop sweep --set real validates every real-world kernel at every configuration") {
  expect_fresh_sweep("--set real --size small --repeat 1 --warmup 0 --platform-id test", tmp("real.csv"), 1320);
  const auto bad = run_command(dop_binary() + " sweep --set real --size huge --out " + tmp("none.csv"));
  CHECK(bad.rc == 1);
  CHECK_THAT(bad.out, Catch::Contains("no real-world kernel specs of size 'huge'"));
}

TEST_CASE("dop report summarises a dataset and draws the heat map") {
  const std::string out = tmp("report.csv"), svg = tmp("report.svg");
  std::remove(out.c_str());
  REQUIRE(run_command(dop_binary() + " sweep" + kSpecs + " --out " + out).rc == 0);
  const auto r = run_command(dop_binary() + " report " + out + " --svg " + svg);
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("132 valid rows") && Catch::Contains("3 workloads (3 with the full grid)"));
  CHECK_THAT(r.out, Catch::Contains("baselines (mean normalised performance): CPU only"));
  // Where each best configuration ran, by the engine's work-groups per device: the three workloads are counted once.
  const auto at = r.out.find("  both devices ");
  REQUIRE(at != std::string::npos);
  size_t both = 0, cpu = 0, gpu = 0, of = 0;
  REQUIRE(std::sscanf(r.out.c_str() + at, "  both devices %zu, the CPU alone %zu, the GPU alone %zu (of %zu workloads)",
                      &both, &cpu, &gpu, &of) == 4);
  CHECK(of == 3);
  CHECK(both + cpu + gpu == 3);
  CHECK_THAT(r.out, !Catch::Contains("ran the whole GPU"));  // the analysis build made the malleable forms
  // A dataset whose GPU levels below 1 ran unthrottled says so once, naming the first such row.
  const auto old =
      run_command(dop_binary() + " report " + std::string(DOP_SOURCE_DIR) + "/tests/data/models/pocl_real_small.csv");
  CHECK(old.rc == 0);
  CHECK_THAT(old.out, Catch::Contains("pocl_real_small.csv:2: 1050 rows at GPU levels below 1 ran the whole GPU"));
  const std::string s = dop::test::read_file(svg);
  CHECK(s.rfind("<svg", 0) == 0);
  size_t rects = 0;
  for (size_t p = s.find("<rect"); p != std::string::npos; p = s.find("<rect", p + 1)) ++rects;
  CHECK(rects == 44);
  const auto bad = run_command(dop_binary() + " report " + data("saxpy.json"));
  CHECK(bad.rc == 1);
  CHECK_THAT(bad.out, Catch::Contains("no column 'workload'"));

  // A gzip-compressed dataset reads as the plain one: report, merge, read_text_file; a truncated one is refused.
  REQUIRE(run_command("gzip -c " + out + " > " + out + ".gz").rc == 0);
  CHECK(dop::read_text_file(out + ".gz") == dop::read_text_file(out));
  const auto rz = run_command(dop_binary() + " report " + out + ".gz");
  INFO(rz.out);
  CHECK(rz.rc == 0);
  CHECK_THAT(rz.out, Catch::Contains("132 valid rows"));
  const auto mz = run_command(dop_binary() + " sweep merge " + tmp("mz.csv") + " " + out + ".gz");
  CHECK(mz.rc == 0);
  CHECK(read_rows(tmp("mz.csv")).keys.size() == 132);
  REQUIRE(run_command("head -c 300 " + out + ".gz > " + tmp("cut.csv.gz")).rc == 0);
  CHECK_THROWS_WITH(dop::read_text_file(tmp("cut.csv.gz")), Catch::Contains("cut.csv.gz: truncated gzip data") ||
                                                                Catch::Contains("cut.csv.gz: corrupt gzip data"));
  const auto wz = run_command(dop_binary() + " sweep" + kSpecs + " --out " + out + ".gz");
  CHECK(wz.rc == 1);
  CHECK_THAT(wz.out, Catch::Contains("a sweep appends to a plain CSV"));
}

TEST_CASE("dop sweep --memory svm validates a real-world kernel at every configuration") {
  const std::string spec = std::string(DOP_SOURCE_DIR) + "/kernels/bicg/bicg2_small_n500_wg64.json";
  expect_fresh_sweep("--spec " + spec + " --memory svm --repeat 1 --warmup 0 --platform-id test", tmp("svm.csv"), 44);
}

namespace {

// The values of column `name` in a dataset, row by row.
std::vector<std::string> column(const std::string& path, const std::string& name) {
  std::ifstream f(path);
  std::string line;
  std::vector<std::string> out;
  size_t i = 0;
  bool header = true;
  while (std::getline(f, line)) {
    const auto fields = dop::csv_split(line);
    if (header) {
      i = size_t(std::find(fields.begin(), fields.end(), name) - fields.begin());
      REQUIRE(i < fields.size());
      header = false;
      continue;
    }
    out.push_back(fields[i]);
  }
  return out;
}

// `path` without the columns `first` and the n - 1 after it: the data block (data_on, in_bytes, out_bytes, args), a
// dataset as swept before it, or args alone, as upgraded before args existed.
std::string without_columns(const std::string& path, const std::string& first = "data_on", long n = 4) {
  std::ifstream f(path);
  std::string line, out;
  size_t at = 0;
  while (std::getline(f, line)) {
    auto fields = dop::csv_split(line);
    if (out.empty()) at = size_t(std::find(fields.begin(), fields.end(), first) - fields.begin());
    REQUIRE(at + size_t(n) <= fields.size());
    fields.erase(fields.begin() + long(at), fields.begin() + long(at) + n);
    out += dop::csv_line(fields);
  }
  return out;
}

}  // namespace

TEST_CASE("the sweep writes where the data is, the buffers' bytes and the arguments, which an upgrade re-derives") {
  const std::string saxpy = " --spec " + data("saxpy.json") + " --platform-id test --repeat 1 --warmup 0";
  for (const std::string memory : {"copy", "resident", "pinned"}) {
    INFO(memory);
    const std::string out = tmp("data_" + memory + ".csv");
    std::remove(out.c_str());
    auto r = run_command(dop_binary() + " sweep" + saxpy + " --memory " + memory + " --configs 6 --out " + out);
    INFO(r.out);
    REQUIRE(r.rc == 0);
    CHECK_THAT(r.out, Catch::Contains("6 rows written, 0 already present, 0 invalid"));
    // saxpy's buffers: y (65500 floats, no access given: read_write) and x (65500 floats, read). The kernel reads
    // both (524000 bytes) and writes y (262000).
    for (const auto& v : column(out, "data_on"))
      CHECK(v == (memory == "resident" ? "gpu" : memory == "pinned" ? "pinned" : "host"));
    for (const auto& v : column(out, "in_bytes")) CHECK(v == "524000");
    for (const auto& v : column(out, "out_bytes")) CHECK(v == "262000");
    // Its integer scalar (the float a is none): what the predictor's expressions get at launch.
    for (const auto& v : column(out, "args")) CHECK(v == "n=65500");
    // The same file as swept before the data block, and as upgraded before args, upgraded: the fresh sweep's
    // columns, byte for byte.
    for (const std::string first : {"data_on", "args"}) {
      const std::string old = tmp("data_old_" + memory + ".csv"), up = tmp("data_up_" + memory + ".csv");
      { std::ofstream(old) << without_columns(out, first, first == "args" ? 1 : 4); }
      r = run_command(dop_binary() + " sweep upgrade " + old + " --spec " + data("saxpy.json") + " --memory " + memory +
                      " --out " + up);
      INFO(r.out);
      REQUIRE(r.rc == 0);
      CHECK(dop::test::read_file(up) == dop::test::read_file(out));
    }
    const std::string old = tmp("data_old_" + memory + ".csv");
    { std::ofstream(old) << without_columns(out); }
    // Rows of a workload the given set does not have are refused by name.
    r = run_command(dop_binary() + " sweep upgrade " + old + " --spec " + data("saxpy_b.json") + " --out " +
                    tmp("data_refused.csv"));
    CHECK(r.rc == 1);
    CHECK_THAT(r.out,
               Catch::Contains("rows of workloads that the given set does not have") && Catch::Contains(": saxpy"));
  }
  // Both situations of one workload in one file are two rows per configuration, no duplicates.
  const std::string both = tmp("data_both.csv");
  auto r =
      run_command(dop_binary() + " sweep merge " + both + " " + tmp("data_copy.csv") + " " + tmp("data_resident.csv"));
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("merged 12 rows from 2 datasets"));
  // Page-locked host data is a third place of the data: reported, kept apart from host data, and a model input of
  // its own (data_pinned) where a row has it.
  r = run_command(dop_binary() + " report " + tmp("data_pinned.csv"));
  CHECK(r.rc == 0);
  r = run_command(dop_binary() + " sweep merge " + tmp("data_three.csv") + " " + both + " " + tmp("data_pinned.csv"));
  CHECK_THAT(r.out, Catch::Contains("merged 18 rows from 2 datasets"));
  auto model_features = [&](const std::string& data) {
    const std::string model = tmp("data_model.json");
    std::remove(model.c_str());
    const auto t = run_command(dop_binary() + " train " + data + " --model dt --cv 0 --no-loko --out " + model);
    INFO(t.out);
    REQUIRE(t.rc == 0);
    std::set<std::string> names;
    const auto m = nlohmann::json::parse(dop::read_text_file(model));  // kept: the loop reads into it
    for (const auto& f : m.at("features")) names.insert(f.at("name").get<std::string>());
    return names;
  };
  const auto three = model_features(tmp("data_three.csv"));
  CHECK(three.count("data_pinned") == 1);
  CHECK(three.count("data_on_gpu") == 1);
  const auto two = model_features(both);  // no pinned row: no such input
  CHECK(two.count("data_pinned") == 0);
  CHECK(two.count("data_on_gpu") == 1);
}

TEST_CASE("dop sweep --configs N measures N configurations per workload, the corners always, the same every run") {
  const std::string a = tmp("sampled_a.csv"), b = tmp("sampled_b.csv");
  for (const auto& out : {a, b}) {
    std::remove(out.c_str());
    const auto r = run_command(dop_binary() + " sweep" + kSpecs + " --configs 8 --out " + out);
    INFO(r.out);
    REQUIRE(r.rc == 0);
    CHECK_THAT(r.out, Catch::Contains("24 rows written, 0 already present, 0 invalid"));
  }
  const Rows ra = read_rows(a), rb = read_rows(b);
  CHECK(ra.keys == rb.keys);  // deterministic per workload
  std::map<std::string, std::set<std::string>> per_workload;
  for (const auto& k : ra.keys) {
    const auto bar = k.find('|');
    per_workload[k.substr(0, bar)].insert(k.substr(bar + 1));
  }
  REQUIRE(per_workload.size() == 3);
  for (const auto& [w, configs] : per_workload) {
    INFO(w);
    CHECK(configs.size() == 8);
    CHECK(configs.count("1|0"));  // CPU only
    CHECK(configs.count("0|1"));  // GPU only
    CHECK(configs.count("1|1"));  // all
  }
  CHECK(per_workload["saxpy"] != per_workload["saxpy_b"]);  // spread differently per workload name
}

TEST_CASE("dop sweep --match sweeps the workloads of a set whose names match, and refuses a pattern that fits none") {
  const std::string out = tmp("matched.csv");
  std::remove(out.c_str());
  // Two of the span set's 360: rung 1 of tri at γ 0, both work-group sizes; 3 configurations each.
  auto r = run_command(dop_binary() + " sweep --set span --match '^tri_c0_s1_' --scale 0.001 --configs 3 " +
                       "--repeat 1 --warmup 0 --platform-id test --out " + out);
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("6 rows written, 0 already present, 0 invalid"));
  const Rows rows = read_rows(out);
  std::set<std::string> names;
  for (const auto& k : rows.keys) names.insert(k.substr(0, k.find('|')));
  CHECK(names == std::set<std::string>{"tri_c0_s1_wg256", "tri_c0_s1_wg64"});
  std::ifstream f(out);
  std::string line;
  std::getline(f, line);
  const auto header = dop::csv_split(line);
  const size_t is = size_t(std::find(header.begin(), header.end(), "set") - header.begin());
  while (std::getline(f, line)) CHECK(dop::csv_split(line)[is] == "span");  // the set's own label, not "spec"

  r = run_command(dop_binary() + " sweep --set span --match '^nothing_' --out " + tmp("matched_none.csv"));
  CHECK(r.rc != 0);
  CHECK_THAT(r.out, Catch::Contains("--match '^nothing_': none of the 360 workloads' names matches"));
  r = run_command(dop_binary() + " sweep --set span --match '(' --out " + tmp("matched_bad.csv"));
  CHECK(r.rc != 0);
  CHECK_THAT(r.out, Catch::Contains("--match '(': not a regular expression"));
}

TEST_CASE("a sweep without malleable forms names the GPU levels it would not measure") {
  dop::Grid grid;  // Dopia's: 0, 1/8, ..., 1
  const std::string why = dop::unthrottled_levels_problem(grid, true, false);
  CHECK_THAT(why, Catch::Contains("levels 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875 would run the whole GPU") &&
                      Catch::Contains("--bundles DIR"));
  CHECK(dop::unthrottled_levels_problem(grid, true, true).empty());    // bundles or an analysis build
  CHECK(dop::unthrottled_levels_problem(grid, false, false).empty());  // no GPU: nothing to throttle
  grid.gpu_levels = {0, 1};
  CHECK(dop::unthrottled_levels_problem(grid, true, false).empty());  // only whole-GPU levels
}

TEST_CASE("dop sweep lengthens the warm-up while the warm starts learn, within --settle") {
  // One workload at the grid's 44 configurations, 32 of them on both devices: there the warm-up's cold launch
  // learns (LaunchResult::learning), so at least one more untimed run follows, and at most --settle.
  const std::string out = tmp("settle.csv");
  const std::string args =
      " sweep --spec " + data("saxpy.json") + " --platform-id test --repeat 1 --warmup 1 --out " + out;
  auto settled = [&](const std::string& extra) {
    std::remove(out.c_str());
    const auto r = run_command(dop_binary() + args + extra);
    INFO(r.out);
    REQUIRE(r.rc == 0);
    CHECK_THAT(r.out, Catch::Contains("44 rows written"));
    const auto at = r.out.find("warm-up: ");
    return at == std::string::npos ? 0L : std::stol(r.out.substr(at + 9));
  };
  const long runs = settled("");
  CHECK(runs >= 32);
  CHECK(runs <= 32 * 6);
  CHECK(settled(" --settle 2") <= 32 * 2);
  CHECK(settled(" --settle 0") == 0);
}

TEST_CASE("dop sweep prints each distinct note of its launches once, naming where it first appeared") {
  // local_reverse synchronises its work-group (barrier): it has no malleable form, so every GPU level below 1 runs
  // the whole GPU, and its launches say so (LaunchResult::note), one text per level asked.
  const std::string out = tmp("notes.csv");
  std::remove(out.c_str());
  const auto r = run_command(dop_binary() + " sweep --spec " + data("local_reverse.json") +
                             " --platform-id test --repeat 1 --warmup 0 --settle 0 --unthrottled --out " + out);
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("note: local_reverse at 0,0.125: GPU ran unthrottled (1/8 asked)"));
  CHECK_THAT(r.out, Catch::Contains("note: local_reverse at 0,0.875: GPU ran unthrottled (7/8 asked)"));
  size_t notes = 0;
  for (size_t at = r.out.find("note: "); at != std::string::npos; at = r.out.find("note: ", at + 1)) ++notes;
  CHECK(notes == 7);  // levels 1/8 .. 7/8, each once though 5 CPU levels ran it
}
