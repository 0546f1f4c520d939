// dop train / eval / predict / export as users run them, on the committed PoCL sweep dataset.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "support.hpp"

using dop::test::dop_binary;
using dop::test::read_file;
using dop::test::run_command;
using nlohmann::json;

namespace {

std::string data(const std::string& f) { return std::string(DOP_SOURCE_DIR) + "/tests/data/models/" + f; }
std::string tmp(const std::string& f) { return std::string(DOP_BINARY_DIR) + "/models_cli_test_" + f; }
const std::string kData = data("pocl_real_small.csv");
// The committed models were trained for platform 'pocl-test': the commands that use them here name this platform
// so (without it they warn that the model is not these devices', which the platform test checks).
const std::string kDop = "DOP_PLATFORM_ID=pocl-test " + dop_binary();

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// A flat features file with every code feature of a model (value 1; the expression of global_bytes_per_item).
std::string features_for(const std::string& model) {
  const auto m = json::parse(read_file(model));
  json f = json::object();
  for (const auto& x : m["features"])
    if (x["source"] == "code") f[x["key"].get<std::string>()] = 1;
  const std::string path = tmp("features.json");
  write(path, f.dump());
  return path;
}

// The JSON on stdout; run_command merges stderr in, whose warnings (a dataset's problems) come first.
json parse(const std::string& out) {
  size_t at = 0;
  while (out.compare(at, 14, "dop: warning: ") == 0 && out.find('\n', at) != std::string::npos)
    at = out.find('\n', at) + 1;
  const auto j = json::parse(out.substr(at), nullptr, false);
  INFO(out);
  REQUIRE_FALSE(j.is_discarded());
  return j;
}

// This platform's id when nobody names it: its devices', as dop sweep writes it ("<CPU> + <GPU>").
std::string this_platform_devices() {
  const auto devices = parse(run_command(dop_binary() + " devices --json").out);
  std::string cpu, gpu;
  for (const auto& d : devices["devices"]) {
    if (d["id"] == devices["selection"]["cpu"]) cpu = d["name"];
    if (d["id"] == devices["selection"]["gpu"]) gpu = d["name"];
  }
  return cpu + " + " + gpu;
}

}  // namespace

TEST_CASE("dop predict, export: a committed model", "[cli][models]") {
  const std::string model = data("gbt.json");
  const std::string features = features_for(model);
  write(tmp("nofeatures.json"), "{}");
  auto r = run_command(kDop + " predict --model " + model + " --features " + tmp("nofeatures.json") +
                       " --global 1024,512 --local 16,16");
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("code feature 'mem_constant' is required by the model but was not given"));
  r = run_command(kDop + " predict --model " + model + " --features " + features +
                  " --global 1024,512 --local 16,16 --json");
  REQUIRE(r.rc == 0);
  const auto j = parse(r.out);
  CHECK(j["platform_id"] == "pocl-test");
  CHECK(j["launch"] == "1024x512/16x16");
  CHECK(j["configurations"].size() == 44);
  double best = -1e300;
  for (const auto& c : j["configurations"]) best = std::max(best, c["predicted"].get<double>());
  CHECK(j["predicted"].get<double>() == best);

  r = run_command(kDop + " predict --model " + model + " --features " + features + " --global 1024 --local 64 --all");
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("predicted normalised performance") && Catch::Contains("<- best"));

  r = run_command(kDop + " predict --model " + model + " --features " + features +
                  " --global 1024 --local 64 --platform-id h100-xeon16");
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("trained for platform 'pocl-test'") && Catch::Contains("h100-xeon16"));

  // With DOP_PLATFORM_ID naming another platform, the model is refused as with --platform-id; the flag wins.
  r = run_command("DOP_PLATFORM_ID=h100-xeon16 " + dop_binary() + " predict --model " + model + " --features " +
                  features + " --global 1024 --local 64");
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("trained for platform 'pocl-test', not for 'h100-xeon16'"));
  r = run_command("DOP_PLATFORM_ID=h100-xeon16 " + dop_binary() + " predict --model " + model + " --features " +
                  features + " --global 1024 --local 64 --platform-id pocl-test");
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, !Catch::Contains("warning"));

  write(tmp("corrupt.json"), "{\"format\": \"dop-model/1\",\n\"type\": \"gbt\",,\n}");
  r = run_command(kDop + " predict --model " + tmp("corrupt.json") + " --features " + features +
                  " --global 1024 --local 64");
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("corrupt.json:2:15: invalid JSON"));

  r = run_command(kDop + " predict --model " + model + " --features " + features + " --global 1024 --local 64,2");
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("different numbers of dimensions"));

  r = run_command(dop_binary() + " export " + model + " --header " + tmp("exported.hpp") + " --namespace my_model");
  REQUIRE(r.rc == 0);
  CHECK_THAT(read_file(tmp("exported.hpp")),
             Catch::Contains("namespace my_model {") && Catch::Contains("inline float predict(const float* x)"));
  r = run_command(dop_binary() + " export " + model + " --header " + tmp("exported.hpp") + " --namespace 9bad");
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("not a C++ namespace name"));
}

TEST_CASE("dop report and dop train read a dataset alike: an inf time is an invalid row, a repeat is refused",
          "[cli][models]") {
  const std::string text = read_file(kData);
  const size_t line2 = text.find('\n') + 1, line3 = text.find('\n', line2) + 1, line4 = text.find('\n', line3) + 1;
  // Line 2's median time (three columns after cpu_cores: median, min, max) becomes inf.
  std::string row2 = text.substr(line2, line3 - line2);
  std::vector<std::string> cols;
  for (size_t a = 0, b; a <= line2 - 1; a = b + 1) {
    b = text.find_first_of(",\n", a);
    cols.push_back(text.substr(a, b - a));
    if (text[b] == '\n') break;
  }
  const size_t median = size_t(std::find(cols.begin(), cols.end(), "time_ms_median") - cols.begin());
  REQUIRE(median < cols.size());
  size_t at = 0;
  for (size_t k = 0; k < median; ++k) at = row2.find(',', at) + 1;
  row2.replace(at, row2.find(',', at) - at, "inf");
  write(tmp("inf.csv"), text.substr(0, line2) + row2 + text.substr(line3));
  auto r = run_command(dop_binary() + " report " + tmp("inf.csv"));
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("warning: " + tmp("inf.csv") +
                                    ":2: invalid row (time_ms_median 'inf' is not a "
                                    "positive time), not used"));
  CHECK_THAT(r.out, Catch::Contains("1319 valid rows (1 invalid skipped)"));
#if DOP_ANALYSIS
  r = run_command(dop_binary() + " train " + tmp("inf.csv") + " --model dt --cv 2 --no-loko");
  CHECK_THAT(r.out, Catch::Contains(tmp("inf.csv") + ":2: invalid row (time_ms_median 'inf' is not a positive time)"));
#endif
  // Line 3 again at the end: the same platform, workload and configuration measured twice.
  write(tmp("twice.csv"), text + text.substr(line3, line4 - line3));
  for (const char* cmd : {" report ", DOP_ANALYSIS ? " train " : " report "}) {
    r = run_command(dop_binary() + cmd + tmp("twice.csv") + (cmd[1] == 't' ? " --model dt --cv 2" : ""));
    CHECK(r.rc == 1);
    CHECK_THAT(r.out, Catch::Contains(tmp("twice.csv") +
                                      ":1322: workload 'atax1_small_n500_wg256' (data on host) at configuration "
                                      "(0, 0.25) again (first at line 3)"));
  }
}

TEST_CASE("dop predict warns when the model was not trained on these devices, naming both platform ids",
          "[cli][models]") {
  const std::string model = data("gbt.json");
  const std::string features = features_for(model);
  const std::string here = this_platform_devices();
  auto r = run_command("env -u DOP_PLATFORM_ID " + dop_binary() + " predict --model " + model + " --features " +
                       features + " --global 1024 --local 64");
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("warning: " + model + ": the model was trained for platform 'pocl-test'") &&
                        Catch::Contains("this platform is '" + here + "'"));
  CHECK_THAT(r.out, Catch::Contains("cpu_util"));  // and it predicts
  // A sweep of these devices without a platform id gives rows, and so models, of the devices' id: no warning.
  auto m = parse(read_file(model));
  m["platform"]["id"] = here;
  write(tmp("here.json"), m.dump());
  r = run_command("env -u DOP_PLATFORM_ID " + dop_binary() + " predict --model " + tmp("here.json") + " --features " +
                  features + " --global 1024 --local 64");
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, !Catch::Contains("warning"));
  // A named platform (dop sweep --platform-id) whose record named these devices (dop train --platform writes them
  // into the model): no warning either; a record of other devices: the warning.
  for (const std::string& named : {here, std::string("other cpu + other gpu")}) {
    m["platform"]["id"] = "pocl-test";
    m["platform"]["devices"] = named;
    write(tmp("named.json"), m.dump());
    r = run_command("env -u DOP_PLATFORM_ID " + dop_binary() + " predict --model " + tmp("named.json") +
                    " --features " + features + " --global 1024 --local 64");
    INFO(r.out);
    CHECK(r.rc == 0);
    CHECK(Catch::Contains("warning").match(r.out) == (named != here));
    if (named != here) CHECK_THAT(r.out, Catch::Contains("dop retarget MODEL --platform P.json"));  // how to fix it
  }
}

TEST_CASE("a folder of models: dop takes this platform's gbt.json, or names the platforms it holds", "[cli][models]") {
  const std::string features = features_for(data("gbt.json"));
  const std::string here = this_platform_devices(), dir = tmp("folder");
  std::filesystem::remove_all(dir);
  auto m = parse(read_file(data("gbt.json")));
  // Two platforms' models: one whose record named other devices, one whose record named these; and a folder with none.
  const std::vector<std::array<std::string, 3>> platforms = {{"a-other", "other-host", "other cpu + other gpu"},
                                                             {"b-here", "this-host", here}};
  for (const auto& [name, id, devices] : platforms) {
    std::filesystem::create_directories(dir + "/" + name);
    m["platform"]["id"] = id;
    m["platform"]["devices"] = devices;
    write(dir + "/" + name + "/gbt.json", m.dump());
  }
  std::filesystem::create_directories(dir + "/empty");
  const std::string predict = " predict --model " + dir + " --features " + features + " --global 1024 --local 64";
  auto r = run_command("env -u DOP_PLATFORM_ID " + dop_binary() + predict);
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("gbt model for this-host") && !Catch::Contains("warning"));
  r = run_command("DOP_PLATFORM_ID=other-host " + dop_binary() + predict);  // a named platform: by its id
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("gbt model for other-host"));
  r = run_command("DOP_PLATFORM_ID=third-host " + dop_binary() + predict);
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains(dir +
                                    ": no gbt.json of this platform ('third-host') in its folders; found "
                                    "'other-host' (other cpu + other gpu), 'this-host' (" +
                                    here + ")") &&
                        Catch::Contains("dop retarget"));
  // A corrupt model in the folder is named, not passed over, where it may be this platform's (its text names the
  // platform: it is parsed) or where the folder has none of this platform (every model is parsed for the error).
  // One that cannot be this platform's is not parsed (dop exec reads the folder inside the application's run).
  std::filesystem::create_directories(dir + "/0-bad");
  write(dir + "/0-bad/gbt.json", "{\"format\": \"dop-model/1\", \"platform\": {\"id\": \"this-host\", ");
  r = run_command("DOP_PLATFORM_ID=this-host " + dop_binary() + predict);
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains(dir + "/0-bad/gbt.json"));
  write(dir + "/0-bad/gbt.json", "{\"format\": ");
  r = run_command("DOP_PLATFORM_ID=third-host " + dop_binary() + predict);
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains(dir + "/0-bad/gbt.json"));
  r = run_command("DOP_PLATFORM_ID=this-host " + dop_binary() + predict);
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("gbt model for this-host"));
  // dop exec takes the folder for the interposer (test_intercept runs an application with one).
  std::filesystem::remove_all(dir + "/0-bad");
  r = run_command(dop_binary() + " exec --config auto --model " + dir + " -- true");
  CHECK(r.rc == 0);
  r = run_command(dop_binary() + " exec --config auto --model " + dir + "/none -- true");
  CHECK(r.rc != 0);
  CHECK_THAT(r.out, Catch::Contains("no such file or folder"));
}

#if DOP_ANALYSIS
TEST_CASE("dop train --estimate adds the estimate features and carries the platform figures", "[cli][models]") {
  const std::string rec = tmp("platform.json"), model = tmp("est.json");
  {
    std::ofstream f(rec);
    f << R"({"platform_id": "pocl-test", "cpu": {"name": "a cpu"}, "gpu": {"compute_units": 2, "triad_gbs": 40,
                                                                       "name": "a gpu"}})";
  }
  auto r = run_command(dop_binary() + " train " + kData + " --platform " + rec + " --estimate --cv 0 --no-loko --out " +
                       model);
  INFO(r.out);
  REQUIRE(r.rc == 0);
  const auto m = parse(read_file(model));
  CHECK(m["estimate"]["gpu_triad_gbs"] == 40);         // from the record
  CHECK(m["platform"]["devices"] == "a cpu + a gpu");  // the record's devices: on them, no warning
  CHECK(m["estimate"]["defaults"].size() == 13);       // every other figure: a default, named
  CHECK(m["features"][m["features"].size() - 2]["name"] == "est_rel");
  CHECK(m["features"][m["features"].size() - 1]["name"] == "est_best_ms");
  r = run_command(dop_binary() + " eval " + model + " " + kData);
  CHECK(r.rc == 0);
  r = run_command(dop_binary() + " export " + model + " --header " + tmp("est.hpp"));
  CHECK(r.rc != 0);
  CHECK_THAT(r.out, Catch::Contains("does not compute the estimate features"));
  r = run_command(dop_binary() + " train " + kData + " --estimate --cv 0 --no-loko");
  CHECK(r.rc == 2);
  CHECK_THAT(r.out, Catch::Contains("--estimate needs the platform record"));
}

TEST_CASE("dop train with the args dop sweep upgrade adds evaluates the argument expressions it dropped before",
          "[cli][models]") {
  // The PoCL dataset has no data block: its expressions of kernel arguments (atax1: 8*n + 4) never evaluate.
  const std::string up = tmp("pocl_args.csv");
  auto r = run_command(dop_binary() + " sweep upgrade " + kData + " --set real --size small --out " + up);
  INFO(r.out);
  REQUIRE(r.rc == 0);
  auto expr_key = [](const std::string& model) {
    const json m = json::parse(read_file(model));
    for (const auto& f : m["features"])
      if (f["name"] == "global_bytes_per_item") return f.value("expr_key", std::string());
    return std::string("(no feature)");
  };
  for (const auto& [data, has_args] : {std::pair<std::string, bool>{kData, false}, {up, true}}) {
    const std::string model = tmp(has_args ? "args_dt.json" : "no_args_dt.json");
    r = run_command(dop_binary() + " train " + data + " --model dt --cv 0 --no-loko --json --out " + model);
    REQUIRE(r.rc == 0);
    CHECK(parse(r.out)["dataset"]["args_column"] == has_args);
    CHECK(expr_key(model) == (has_args ? "global_bytes_per_item_expr" : ""));
  }
}

TEST_CASE("dop train: cross-validation, leave-one-kernel-out, model and header", "[cli][models]") {
  const std::string model = tmp("dt.json"), header = tmp("dt.hpp");
  auto r = run_command(dop_binary() + " train " + kData + " --model dt --cv 5 --out " + model + " --header " + header +
                       " --json");
  REQUIRE(r.rc == 0);
  const auto j = parse(r.out);
  CHECK(j["dataset"]["workloads"] == 30);
  CHECK(j["cv"]["folds"] == 5);
  CHECK(j["cv"]["strategies"][0]["name"] == "model (dt)");
  CHECK(j["cv"]["strategies"][0]["workloads"] == 30);
  CHECK(j["loko"]["folds"] == 15);  // 15 real-world kernels, 2 workloads each
  CHECK(j["loko"]["per_kernel"].size() == 15);
  CHECK(j["model"]["path"] == model);
  CHECK(read_file(model).rfind("{\n \"format\": \"dop-model/1\"", 0) == 0);
  CHECK(parse(read_file(model))["decision"]["mixed_margin"] == 0.05);  // the default margin for mixing devices
  CHECK_THAT(read_file(header), Catch::Contains("inline Decision decide(") &&
                                    Catch::Contains("inline constexpr double kMixedMargin = 0.05"));
  r = run_command(dop_binary() + " train " + kData + " --model dt --cv 0 --no-loko --mixed-margin 0 --out " + model);
  REQUIRE(r.rc == 0);
  CHECK_FALSE(parse(read_file(model)).contains("decision"));  // no margin: the highest output, as before
  r = run_command(dop_binary() + " train " + kData + " --model dt --cv 0 --no-loko --mixed-margin 1.5");
  CHECK(r.rc == 2);
  CHECK_THAT(r.out, Catch::Contains("--mixed-margin"));

  r = run_command(dop_binary() + " train " + kData + " --model linear --cv 100 --no-loko");
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("100 folds requested, clamped to the 30 workloads") &&
                        Catch::Contains("strategy") && Catch::Contains("model (linear)") &&
                        Catch::Contains("best constant"));
  CHECK_THAT(r.out, !Catch::Contains("leave-one-kernel-out"));

  r = run_command(dop_binary() + " eval " + model + " " + kData + " --json");
  REQUIRE(r.rc == 0);
  const auto e = parse(r.out);
  CHECK(e["evaluation"]["strategies"].size() == 5);
  CHECK(e["evaluation"]["strategies"][1]["name"] == "CPU only");

  r = run_command(dop_binary() + " train " + kData + " --model svm");
  CHECK(r.rc != 0);
  CHECK_THAT(r.out, Catch::Contains("svm"));
  r = run_command(dop_binary() + " train " + kData + " --model gbt --param max_depth");
  CHECK(r.rc == 2);  // bad usage
  CHECK_THAT(r.out, Catch::Contains("--param 'max_depth' must be KEY=VALUE"));
}

TEST_CASE("dop predict takes the code features from the kernel source", "[cli][models]") {
  const std::string model = data("gbt.json");
  const std::string source = std::string(DOP_SOURCE_DIR) + "/kernels/gemm/gemm.cl";
  auto r = run_command(kDop + " predict --model " + model + " " + source +
                       " --kernel gemm --global 112,96 --local 16,16 --json");
  REQUIRE(r.rc == 0);
  const auto from_source = parse(r.out);
  // The same through `dop features --json` output.
  r = run_command(dop_binary() + " features " + source + " --json > " + tmp("gemm_features.json"));
  REQUIRE(r.rc == 0);
  r = run_command(kDop + " predict --model " + model + " --features " + tmp("gemm_features.json") +
                  " --kernel gemm --global 112,96 --local 16,16 --json");
  REQUIRE(r.rc == 0);
  const auto from_json = parse(r.out);
  CHECK(from_json["configurations"] == from_source["configurations"]);
  CHECK(from_json["cpu_util"] == from_source["cpu_util"]);
  // A kernel that is not in the file.
  r = run_command(kDop + " predict --model " + model + " " + source + " --kernel nope --global 64 --local 8");
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("no kernel 'nope'"));
}

TEST_CASE("dop retarget moves a model to another platform's record, and dop eval --platform-id decides its rows",
          "[cli][models]") {
  const std::string rec = tmp("retarget-a.json"), other = tmp("retarget-b.json"), model = tmp("retarget-a-model.json"),
                    moved = tmp("retarget-b-model.json");
  write(rec, R"({"platform_id": "pocl-test", "cpu": {"name": "a cpu", "compute_units": 2},
                 "gpu": {"compute_units": 2, "triad_gbs": 40, "name": "a gpu"}})");
  write(other, R"({"platform_id": "other-host", "cpu": {"name": "b cpu", "compute_units": 4},
                   "gpu": {"compute_units": 8, "triad_gbs": 80, "name": "b gpu"},
                   "grid": {"cpu_levels": [0, 0.25, 0.5, 0.75, 1],
                            "gpu_levels": [0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1]}})");
  auto r = run_command(dop_binary() + " train " + kData + " --platform " + rec + " --estimate --cv 0 --no-loko --out " +
                       model);
  INFO(r.out);
  REQUIRE(r.rc == 0);

  r = run_command(dop_binary() + " retarget " + model + " --platform " + other + " --out " + moved);
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out,
             Catch::Contains("gpu_triad_gbs") && Catch::Contains("40 -> 80") && Catch::Contains("the units differ"));
  const auto a = parse(read_file(model)), b = parse(read_file(moved));
  CHECK(b["platform"]["id"] == "other-host");
  CHECK(b["platform"]["devices"] == "b cpu + b gpu");
  CHECK(b["platform"]["cpu_units"] == 4);
  CHECK(b["platform"]["gpu_units"] == 8);
  CHECK(b["estimate"]["gpu_triad_gbs"] == 80);
  CHECK(b["trees"] == a["trees"]);  // what it learned stays
  CHECK(b["features"] == a["features"]);
  CHECK(b["training"]["retargeted"][0]["platform_id"] == "pocl-test");
  CHECK(b["training"]["retargeted"][0]["gpu_units"] == 2);

  // The other platform's rows: the model of the first refuses them unless told, the moved one takes them.
  std::string csv = read_file(kData), renamed;
  for (size_t at = 0, next; at < csv.size(); at = next) {
    next = csv.find('\n', at);
    next = next == std::string::npos ? csv.size() : next + 1;
    std::string line = csv.substr(at, next - at);
    if (line.rfind("pocl-test,", 0) == 0) line = "other-host," + line.substr(10);
    renamed += line;
  }
  write(tmp("retarget-rows.csv"), renamed);
  r = run_command(dop_binary() + " eval " + model + " " + tmp("retarget-rows.csv"));
  CHECK(r.rc != 0);
  CHECK_THAT(r.out, Catch::Contains("no data rows of platform 'pocl-test'"));
  r = run_command(dop_binary() + " eval " + model + " " + tmp("retarget-rows.csv") + " --platform-id other-host");
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("trained for platform 'pocl-test'; deciding the rows of platform 'other-host'"));
  r = run_command(dop_binary() + " eval " + moved + " " + tmp("retarget-rows.csv") + " --json");
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK(parse(r.out)["evaluation"]["strategies"][0]["workloads"] == 30);
  // At launch: the moved model is the other platform's.
  const std::string features = features_for(model);
  r = run_command("DOP_PLATFORM_ID=other-host " + dop_binary() + " predict --model " + moved + " --features " +
                  features + " --global 1024 --local 64");
  CHECK(r.rc == 0);
  r = run_command("DOP_PLATFORM_ID=other-host " + dop_binary() + " predict --model " + model + " --features " +
                  features + " --global 1024 --local 64");
  CHECK(r.rc != 0);

  // What it refuses, by name: not a record, no platform id, bad units, another grid; no file is written.
  write(tmp("retarget-bad.json"), "[1, 2");
  r = run_command(dop_binary() + " retarget " + model + " --platform " + tmp("retarget-bad.json") + " --out " +
                  tmp("retarget-none.json"));
  CHECK(r.rc != 0);
  CHECK_THAT(r.out, Catch::Contains("retarget-bad.json: not a JSON object"));
  write(tmp("retarget-bad.json"), R"({"cpu": {"compute_units": 4}})");
  r = run_command(dop_binary() + " retarget " + model + " --platform " + tmp("retarget-bad.json") + " --out " +
                  tmp("retarget-none.json"));
  CHECK_THAT(r.out, Catch::Contains("platform_id: missing"));
  write(tmp("retarget-bad.json"), R"({"platform_id": "x", "cpu": {"compute_units": -3}})");
  r = run_command(dop_binary() + " retarget " + model + " --platform " + tmp("retarget-bad.json") + " --out " +
                  tmp("retarget-none.json"));
  CHECK_THAT(r.out, Catch::Contains("cpu.compute_units: not a positive count"));
  write(tmp("retarget-bad.json"), R"({"platform_id": "x", "grid": {"cpu_levels": [0, 0.5, 1], "gpu_levels": [0, 1]}})");
  r = run_command(dop_binary() + " retarget " + model + " --platform " + tmp("retarget-bad.json") + " --out " +
                  tmp("retarget-none.json"));
  CHECK(r.rc != 0);
  CHECK_THAT(r.out, Catch::Contains("the platform's grid is not the model's"));
  CHECK_FALSE(std::ifstream(tmp("retarget-none.json")).good());

  // A model without the estimate features moves too; its decisions do not read the figures.
  r = run_command(dop_binary() + " retarget " + data("dt.json") + " --platform " + other + " --out " +
                  tmp("retarget-dt.json"));
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("no estimate features") && Catch::Contains("the units differ"));
}

TEST_CASE("dop train and eval report bad datasets with file, line and column", "[cli][models]") {
  std::string text = read_file(kData);
  const auto third = text.find('\n', text.find('\n') + 1) + 1;
  const auto comma = text.find(",1,512,", third);  // work_dim, global_size of line 3
  REQUIRE(comma != std::string::npos);
  text.replace(comma, 7, ",1,5x2,");
  write(tmp("bad.csv"), text);
  auto r = run_command(dop_binary() + " train " + tmp("bad.csv") + " --model dt --cv 2");
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("bad.csv:3: column 41 (global_size): '5x2' is not a number"));
  r = run_command(dop_binary() + " eval " + data("dt.json") + " " + tmp("bad.csv"));
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("bad.csv:3: column 41 (global_size)"));
  r = run_command(dop_binary() + " eval " + data("dt.json") + " " + tmp("missing.csv"));
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("missing.csv: cannot be read"));
}

TEST_CASE("dop train reads a gzip-compressed dataset", "[cli][models]") {
  REQUIRE(run_command("gzip -c " + kData + " > " + tmp("data.csv.gz")).rc == 0);
  const auto plain = run_command(dop_binary() + " train " + kData + " --model dt --cv 4 --no-loko --json");
  const auto gz = run_command(dop_binary() + " train " + tmp("data.csv.gz") + " --model dt --cv 4 --no-loko --json");
  REQUIRE(plain.rc == 0);
  REQUIRE(gz.rc == 0);
  auto a = parse(plain.out), b = parse(gz.out);
  CHECK(a["cv"]["strategies"] == b["cv"]["strategies"]);
  CHECK(a["dataset"]["rows"] == b["dataset"]["rows"]);
}

TEST_CASE("dop run --auto runs the configuration the model chooses", "[cli][models]") {
  const std::string model = data("gbt.json");
  const std::string spec = std::string(DOP_SOURCE_DIR) + "/kernels/atax/atax1_small_n500_wg256.json";
  const std::string source = std::string(DOP_SOURCE_DIR) + "/kernels/atax/atax.cl";
  const auto sj = parse(read_file(spec));
  auto r = run_command(kDop + " predict --model " + model + " " + source + " --kernel atax1 --global " +
                       std::to_string(sj["global"][0].get<size_t>()) + " --local " +
                       std::to_string(sj["local"][0].get<size_t>()) + " --arg n=500 --json");
  REQUIRE(r.rc == 0);
  const auto want = parse(r.out);
  // Code features from the source (analysis build) ...
  r = run_command(kDop + " run " + spec + " --auto --model " + model + " --validate --json");
  REQUIRE(r.rc == 0);
  auto j = parse(r.out);
  CHECK(j["auto"]["cpu_util"] == want["cpu_util"]);
  CHECK(j["auto"]["gpu_util"] == want["gpu_util"]);
  CHECK(j["config"]["cpu_util"] == want["cpu_util"]);
  CHECK(j["config"]["gpu_util"] == want["gpu_util"]);
  CHECK(j["auto"]["predicted"] == want["predicted"]);
  CHECK(j["validation"]["ok"] == true);
  // ... or from a kernel bundle, as on a machine without Clang.
  r = run_command(dop_binary() + " bundle " + source + " --kernel atax1 --out " + tmp("atax1.bundle.json"));
  REQUIRE(r.rc == 0);
  r = run_command(kDop + " run " + spec + " --auto --model " + model + " --bundle " + tmp("atax1.bundle.json") +
                  " --json");
  REQUIRE(r.rc == 0);
  j = parse(r.out);
  CHECK(j["auto"]["cpu_util"] == want["cpu_util"]);
  CHECK(j["auto"]["gpu_util"] == want["gpu_util"]);
  // Errors: no model; a model of another platform.
  r = run_command(dop_binary() + " run " + spec + " --auto");
  CHECK(r.rc == 2);  // bad usage
  CHECK_THAT(r.out, Catch::Contains("--auto needs --model"));
  r = run_command(dop_binary() + " run " + spec + " --auto --model " + model + " --platform-id h100-xeon16");
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("h100-xeon16"));
  // Nobody names this platform: the model of another one runs, with a warning naming both ids.
  r = run_command("env -u DOP_PLATFORM_ID " + dop_binary() + " run " + spec + " --auto --model " + model);
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("the model was trained for platform 'pocl-test'"));
}
#endif

TEST_CASE("dop train --test-set: trained without the test set, its table beside CV and LOKO", "[cli][models]") {
  // The PoCL dataset (15 real kernels at 2 sizes) with 9 kernels relabelled as a training set: the other 6 kernels'
  // 12 workloads are the test set.
  std::string text = read_file(kData);
  size_t relabelled = 0;
  for (const char* k : {"atax1", "atax2", "bicg1", "bicg2", "conv2d", "fdtd1", "fdtd2", "fdtd3", "gemm"}) {
    const std::string from = ",real," + std::string(k) + ",", to = ",paper," + std::string(k) + ",";
    for (size_t p = text.find(from); p != std::string::npos; p = text.find(from, p)) {
      text.replace(p, from.size(), to);
      ++relabelled;
    }
  }
  REQUIRE(relabelled == 18 * 44);
  write(tmp("testset.csv"), text);
  auto r = run_command(dop_binary() + " train " + tmp("testset.csv") + " --model dt --cv 3 --test-set real --json");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  const auto j = parse(r.out);
  CHECK(j["test_set"]["train_workloads"] == 18);
  CHECK(j["test_set"]["strategies"].size() == 5);
  CHECK(j["test_set"]["strategies"][0]["workloads"] == 12);
  CHECK(j["test_set"]["strategies"][4]["name"] == "best constant");
  CHECK(j["test_set"]["per_kernel"].size() == 6);
  CHECK(j["cv"]["strategies"][0]["workloads"] == 30);
  CHECK(j["loko"]["folds"] == 6);
  r = run_command(dop_binary() + " train " + tmp("testset.csv") + " --model dt --cv 3 --test-set real");
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("grouped k-fold cross-validation") && Catch::Contains("leave-one-kernel-out") &&
                        Catch::Contains("test set 'real' (trained on the other sets) of dt: 12 workloads") &&
                        Catch::Contains("trained on 18 workloads of other sets"));
}

TEST_CASE("dop train --seeds N: each evaluation repeated with N seeds, the first seed's table and the spread",
          "[cli][models]") {
  auto r = run_command(dop_binary() + " train " + kData + " --model gbt --param rounds=20 --cv 3 --no-loko --seeds 3 " +
                       "--threads 1 --json");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  const auto j = parse(r.out);
  const auto& sp = j["cv"]["seed_spread"];
  CHECK(sp["seeds"] == 3);
  CHECK(sp["first_seed"] == 1);
  REQUIRE(sp["perf_mean"]["values"].size() == 3);
  // The table is the first seed's: the same as a run with --seeds 1.
  CHECK(sp["perf_mean"]["values"][0].get<double>() == j["cv"]["strategies"][0]["perf"]["mean"].get<double>());
  CHECK(sp["perf_mean"]["min"].get<double>() <= sp["perf_mean"]["mean"].get<double>());
  CHECK(sp["perf_mean"]["mean"].get<double>() <= sp["perf_mean"]["max"].get<double>());
  const auto one = parse(run_command(dop_binary() + " train " + kData + " --model gbt --param rounds=20 --cv 3 " +
                                     "--no-loko --threads 1 --json")
                             .out);
  CHECK(one["cv"]["strategies"][0]["perf"]["mean"] == j["cv"]["strategies"][0]["perf"]["mean"]);
  CHECK_FALSE(one["cv"].contains("seed_spread"));
  r = run_command(dop_binary() + " train " + kData + " --model dt --cv 3 --no-loko --seeds 2 --seed 7");
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("over 2 seeds (7..8), the model's mean [least .. greatest]:"));
  r = run_command(dop_binary() + " train " + kData + " --model dt --cv 3 --seeds 0");
  CHECK(r.rc != 0);
}

TEST_CASE("dop run --auto tells the model where the data is: resident data moves the decision", "[cli][models]") {
  // gpu_recv_bytes < 1000 ? (gpu_util < 0.9 ? 0.3 : 0.9) : 0.1: the GPU only when it receives nothing.
  const json model = {
      {"format", "dop-model/1"},
      {"type", "dt"},
      {"objective", "reg:squarederror"},
      {"output", "normalised_performance"},
      {"platform", {{"id", "pocl-test"}, {"cpu_units", 2}, {"gpu_units", 1}}},
      {"grid",
       {{"cpu_levels", {0, 0.25, 0.5, 0.75, 1}}, {"gpu_levels", {0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1}}}},
      {"features",
       {{{"name", "gpu_recv_bytes"},
         {"source", "derived"},
         {"definition", "gpu_util > 0 && !data_on_gpu ? in_bytes : 0"}},
        {{"name", "gpu_util"}, {"source", "config"}, {"definition", "gpu_util"}}}},
      {"trees",
       {{"base_score", 0},
        {"count", 1},
        {"list",
         {{{"feature", {0, 1, -1, -1, -1}},
           {"threshold", {1000, 0.9, 0, 0, 0}},
           {"left", {1, 3, -1, -1, -1}},
           {"right", {2, 4, -1, -1, -1}},
           {"default_left", {0, 0, 0, 0, 0}},
           {"value", {0, 0, 0.1, 0.3, 0.9}}}}}}}};
  write(tmp("data_model.json"), model.dump());
  const std::string spec = std::string(DOP_SOURCE_DIR) + "/kernels/atax/atax1_small_n500_wg256.json";
  std::map<std::string, json> decided;
  for (const char* memory : {"copy", "resident"}) {
    const auto r = run_command(kDop + " run " + spec + " --auto --model " + tmp("data_model.json") + " --memory " +
                               memory + " --validate --json");
    INFO(r.out);
    REQUIRE(r.rc == 0);
    decided[memory] = parse(r.out.substr(r.out.find('{')))["auto"];  // after a warning: (0.25, 0) runs as (0.5, 0)
  }
  CHECK(decided["copy"]["gpu_util"] == 0);  // host data: the GPU would receive atax1's 1,002,000 input bytes
  CHECK(decided["resident"]["cpu_util"] == 0);
  CHECK(decided["resident"]["gpu_util"] == 1);
}
