// The dop binary as a user runs it.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

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
  r = run_command(dop_binary());
  CHECK(r.rc != 0);  // a subcommand is required
}

TEST_CASE("dop devices --json lists the PoCL devices with roles") {
  const auto r = run_command(dop_binary() + " devices --json");
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["devices"].size() >= 2);
  CHECK(j["devices"][0]["id"] == "pocl:0");
  CHECK(j["devices"][0]["type"] == "cpu");
  CHECK(j["devices"][0]["fission_by_counts"] == true);
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
