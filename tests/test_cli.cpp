// The dop binary as a user runs it.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "support.hpp"

using dop::test::dop_binary;
using dop::test::run_command;

TEST_CASE("dop --version and --help") {
  auto r = run_command(dop_binary() + " --version");
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::StartsWith("dop "));
  r = run_command(dop_binary() + " devices --help");
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("--json"));
  r = run_command(dop_binary() + " run --help");
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("--config"));
}

TEST_CASE("dop: bad usage exits 2 with CLI11's message, whatever CLI11's own code for it") {
  struct Case {
    const char* args;
    const char* says;
  };
  const Case cases[] = {
      {"", "A subcommand is required"},                          // RequiredError (106)
      {"frobnicate", "A subcommand is required"},                // no such subcommand
      {"devices --no-such-flag", "--no-such-flag"},              // ExtrasError
      {"run", "spec is required"},                               // RequiredError: the positional
      {"sweep --set paper --out x.csv --repeat 0", "--repeat"},  // ValidationError (105)
      {"sweep --set paper --out x.csv --repeat many", "many"},   // ConversionError (101)
      {"report a.csv b.csv", "b.csv"},                           // ExtrasError: one positional
      // The three corners are always measured: fewer than 3 sampled configurations cannot mean what they say.
      {"sweep --set paper --out x.csv --configs 2", "fewer than the 3 configurations always measured"},
      {"sweep --set paper --out x.csv --configs 1", "give 0 (the whole grid) or at least 3"},
      {"synth emit --out /nonexistent/never", "give workload names or --all"},  // dop's own UsageError
  };
  for (const auto& c : cases) {
    const auto r = run_command(dop_binary() + " " + c.args);
    INFO("dop " << c.args << ": " << r.out);
    CHECK(r.rc == 2);
    CHECK_THAT(r.out, Catch::Contains("dop: usage error:") && Catch::Contains(c.says) &&
                          Catch::Contains("Run with --help for more information."));
  }
  // An error in what the flags name (not usage) is 1.
  const auto r = run_command(dop_binary() + " run /nonexistent/spec.json");
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::StartsWith("dop: error:"));
}

TEST_CASE("dop sweep --help names every size of the real-world kernels' specs") {
  // The sizes as the spec files under kernels/ have them: <kernel>_<size>_<dims>_wg<wg>.json.
  std::set<std::string> sizes;
  for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(DOP_SOURCE_DIR) + "/kernels")) {
    if (e.path().extension() != ".json") continue;
    const std::string name = e.path().stem().string();
    const size_t a = name.find('_'), b = name.find('_', a + 1);
    if (a != std::string::npos && b != std::string::npos) sizes.insert(name.substr(a + 1, b - a - 1));
  }
  REQUIRE(sizes.size() >= 4);
  const auto r = run_command(dop_binary() + " sweep --help");
  REQUIRE(r.rc == 0);
  for (const auto& size : sizes) {
    INFO(size);
    CHECK_THAT(r.out, Catch::Contains(" " + size + " |") || Catch::Contains("| " + size + " "));
  }
}

TEST_CASE("dop devices --json lists the PoCL devices with roles") {
  const auto r = run_command(dop_binary() + " devices --json");
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["devices"].size() >= 2);
  CHECK(j["devices"][0]["id"] == "pocl:0");
  CHECK(j["devices"][0]["type"] == "cpu");
  CHECK(j["devices"][0]["fission_by_counts"] == true);
  CHECK_THAT(j["devices"][0]["svm"].get<std::string>(), Catch::Contains("fine"));
  CHECK(j["selection"]["cpu"] == "pocl:0");
  CHECK(j["selection"]["gpu"] == "pocl:1");
}

TEST_CASE("dop devices table and a bad --gpu flag") {
  auto r = run_command(dop_binary() + " devices");
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("pocl:0") && Catch::Contains("fission"));
  r = run_command(dop_binary() + " devices --gpu nvidia:3");
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("no OpenCL device matches --gpu 'nvidia:3'"));
}

TEST_CASE("dop demo validates a kernel on every device") {
  const auto r = run_command(dop_binary() + " demo -n 100000");
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("pocl:0") && Catch::Contains("pocl:1") && Catch::Contains("ok"));
}

namespace {
std::string data(const std::string& f) { return std::string(DOP_SOURCE_DIR) + "/tests/data/run/" + f; }
}  // namespace

TEST_CASE("dop run validates co-execution against a plain run") {
  for (const char* cfg : {"1,1", "0.5,0.25", "0,1", "1,0"}) {
    const auto r = run_command(dop_binary() + " run " + data("saxpy.json") + " --config " + cfg + " --validate --json");
    INFO(cfg << ": " << r.out);
    REQUIRE(r.rc == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["validation"]["ok"] == true);
    CHECK(j["last"]["cpu"]["work_groups"].get<size_t>() + j["last"]["gpu"]["work_groups"].get<size_t>() == 1024);
  }
  const auto r = run_command(dop_binary() + " run " + data("saxpy.json") + " --memory copy --repeat 3 --validate");
  CHECK(r.rc == 0);
  CHECK_THAT(r.out,
             Catch::Contains("over 3 run(s)") && Catch::Contains("validation against a plain run on pocl:0: ok"));
}

TEST_CASE("dop run --memory svm runs both devices on shared virtual memory") {
  for (const char* cfg : {"1,1", "0.5,0.5", "0,1"}) {
    const auto r = run_command(dop_binary() + " run " + data("saxpy.json") + " --memory svm --config " + cfg +
                               " --repeat 2 --validate --json");
    INFO(cfg << ": " << r.out);
    REQUIRE(r.rc == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["validation"]["ok"] == true);
    CHECK(j["memory"] == "svm");
    CHECK(j["last"]["h2d_bytes"] == 0);
  }
  // One PoCL device, so no GPU role: svm runs the CPU alone on its own SVM.
  const auto r = run_command("POCL_DEVICES=pthread " + dop_binary() + " run " + data("saxpy.json") +
                             " --memory svm --config 1,0 --validate");
  INFO(r.out);
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("memory svm") && Catch::Contains("validation against a plain run on pocl:0: ok"));
}

TEST_CASE("dop run names what is wrong with a spec") {
  struct Case {
    const char* file;
    const char* message;
  } cases[] = {
      {"bad_kernel_name.json", "no kernel named 'saxpi' (the program has: saxpy)"},
      {"bad_file.json", "kernel.file"},
      {"bad_argcount.json", "kernel 'saxpy' has 4 arguments, the spec gives 3"},
      {"bad_local.json", "local[0] = 96 does not divide global[0] = 65536"},
      {"does_not_exist.json", "does_not_exist.json: cannot be read"},
  };
  for (const auto& c : cases) {
    const auto r = run_command(dop_binary() + " run " + data(c.file));
    INFO(c.file << ": " << r.out);
    CHECK(r.rc == 1);
    CHECK_THAT(r.out, Catch::Contains(c.message) && Catch::Contains("dop: error:"));
  }
  auto r = run_command(dop_binary() + " run " + data("saxpy.json") + " --config 2,0");
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("'2' is not a number in [0,1]"));
  r = run_command(dop_binary() + " run " + data("saxpy.json") + " --memory shared");
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("memory mode 'shared'"));
}

TEST_CASE("dop bench split prints dynamic against 19 static splits") {
  const std::string out = std::string(DOP_BINARY_DIR) + "/split_test.json";
  const auto r = run_command(dop_binary() + " bench split " + data("saxpy.json") + " --repeat 1 --out " + out);
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("median dynamic / best static over 1 workloads"));
  const auto j = nlohmann::json::parse(dop::test::read_file(out));
  REQUIRE(j["workloads"].size() == 1);
  CHECK(j["workloads"][0]["static"].size() == 21);  // 19 splits + CPU only + GPU only
  const double best = j["workloads"][0]["best_static_cpu_share"].get<double>();
  CHECK(best >= 0.05);
  CHECK(best <= 0.95);
  // Dynamic runs warm and cold, both recorded.
  const auto& w = j["workloads"][0];
  REQUIRE(w["dynamic_cold_ms"].size() == 1);
  CHECK(w["dynamic_cold_ms"][0].get<double>() > 0);
  CHECK(w["cold_ratio"].get<double>() > 0);
  REQUIRE(w["dynamic_warm"].size() == 1);
}

TEST_CASE("dop run --repeat starts warm after a run on both devices and --cold never does") {
  const std::string run = " run " + data("saxpy.json") + " --config 1,1 --repeat 4 --json";
  auto r = run_command(dop_binary() + run + " --cold");
  INFO(r.out);
  REQUIRE(r.rc == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["last"]["warm"] == false);
  CHECK(j["last"]["start_cpu_share"].get<double>() == -1);
  // Warm needs a run on which both devices ran a chunk; on a small kernel the CPU may take everything every time.
  // The last run is warm whenever a share was learned: its start share is then in [0, 1].
  r = run_command(dop_binary() + run);
  REQUIRE(r.rc == 0);
  j = nlohmann::json::parse(r.out);
  const auto& last = j["last"];
  if (last["warm"].get<bool>()) {
    CHECK(last["start_cpu_share"].get<double>() >= 0);
    CHECK(last["start_cpu_share"].get<double>() <= 1);
  } else {
    CHECK(last["start_cpu_share"].get<double>() == -1);
  }
  CHECK(last["balanced_cpu_share"].get<double>() >= 0);
  CHECK(last["balanced_cpu_share"].get<double>() <= 1);
  // Every launch says where its time went: a device's kernel time where it ran work-groups, none where it ran none,
  // and each device stopped within the launch's time.
  const auto& runs = j["runs"];
  REQUIRE(runs.size() == 5);  // the warm-up and 4
  for (const auto& x : runs) {
    INFO(x.dump());
    for (const char* d : {"cpu", "gpu"}) {
      const bool ran = x[std::string(d) + "_work_groups"].get<long>() > 0;
      CHECK((x[std::string(d) + "_busy_ms"].get<double>() > 0) == ran);
      CHECK(x[std::string(d) + "_finish_ms"].get<double>() <= x["time_ms"].get<double>());
    }
    CHECK(x["h2d_ms"].get<double>() >= 0);
    CHECK(x["d2h_ms"].get<double>() >= 0);
  }
}

TEST_CASE("dop characterize writes a platform record with positive measurements") {
  const std::string out = std::string(DOP_BINARY_DIR) + "/platform_test.json";
  const auto r = run_command(dop_binary() + " characterize --mib 4 --repeat 1 --name test-platform --out " + out);
  INFO(r.out);
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(dop::test::read_file(out));
  CHECK(j["format"] == "dop-platform/1");
  CHECK(j["platform_id"] == "test-platform");
  CHECK(j["grid"]["cpu_levels"].size() == 5);
  CHECK(j["grid"]["gpu_levels"].size() == 9);
  REQUIRE_FALSE(j["cpu"]["triad_gbs_by_cores"].empty());
  for (const auto& b : j["cpu"]["triad_gbs_by_cores"]) CHECK(b["triad_gbs"].get<double>() > 0);
  CHECK(j["gpu"]["triad_gbs"].get<double>() > 0);
  CHECK(j["gpu"]["copy_pinned"]["h2d_gbs"].get<double>() > 0);
  CHECK(j["gpu"]["copy_pageable"]["d2h_latency_us"].get<double>() > 0);
  CHECK(j["cpu"]["launch_latency_us"].get<double>() > 0);
  // Peak operation rates (the estimate's compute roof): per CPU core, and of the whole GPU.
  for (const char* k : {"peak_gops_float_per_core", "peak_gops_int_per_core"}) CHECK(j["cpu"][k].get<double>() > 0);
  for (const char* k : {"peak_gops_float", "peak_gops_int"}) CHECK(j["gpu"][k].get<double>() > 0);
  // Random access (the estimate's share of traffic at data-dependent addresses).
  CHECK(j["cpu"]["gather_gbs"].get<double>() > 0);
  CHECK(j["gpu"]["gather_gbs"].get<double>() > 0);
}
