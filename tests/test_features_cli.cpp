// `dop features` as a user runs it: text, --json, --csv, --kernel, --options, and the three error cases.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "support.hpp"

using dop::test::dop_binary;
using dop::test::run_command;

namespace {
std::string data(const std::string& name) { return std::string(DOP_SOURCE_DIR) + "/tests/data/features/" + name; }
}  // namespace

TEST_CASE("dop features --json: one record per kernel, Table 1 keys first") {
  const auto r = run_command(dop_binary() + " features --json " + data("paper_example.cl"));
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::ordered_json::parse(r.out);
  REQUIRE(j["kernels"].size() == 1);
  const auto& k = j["kernels"][0];
  CHECK(k["kernel"] == "paper_example");
  CHECK(k["complete"] == true);
  const auto& f = k["features"];
  auto it = f.begin();
  for (const char* key : {"mem_constant", "mem_continuous", "mem_stride", "mem_random", "arith_int", "arith_float"}) {
    REQUIRE(it != f.end());
    CHECK(it.key() == key);
    ++it;
  }
  CHECK(f["mem_constant"] == 1);
  CHECK(f["mem_continuous"] == 2);
  CHECK(f["mem_stride"] == 2);
  CHECK(f["mem_random"] == 1);
  CHECK(k["loops"][0]["trip"]["expr"] == "N");
  CHECK(j["diagnostics"].empty());
}

TEST_CASE("dop features --csv and text output, --kernel") {
  auto r = run_command(dop_binary() + " features --csv " + data("two_kernels.cl"));
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::StartsWith("file,kernel,mem_constant,mem_continuous,mem_stride,mem_random,arith_int,"
                                      "arith_float,"));
  CHECK_THAT(r.out, Catch::Contains(",first,0,2,0,0,0,1,") && Catch::Contains(",second,1,1,0,0,0,2,"));

  r = run_command(dop_binary() + " features --csv --kernel second " + data("two_kernels.cl"));
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains(",second,") && !Catch::Contains(",first,"));

  r = run_command(dop_binary() + " features " + data("gemm_2d.cl"));
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out,
             Catch::Contains("kernel gemm") && Catch::Contains("mem_stride") && Catch::Contains("trip symbolic"));

  r = run_command(dop_binary() + " features --json --csv " + data("gemm_2d.cl"));
  CHECK(r.rc != 0);  // one format at a time
}

TEST_CASE("dop features --options passes build options") {
  const auto r = run_command(dop_binary() + " features --json --options '-DDATA_TYPE=float -DBLOCK=8 -DALPHA=2' " +
                             data("needs_defs.cl"));
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["diagnostics"].empty());
  CHECK(j["kernels"][0]["loops"][0]["trip"]["value"] == 8);
}

TEST_CASE("dop features errors name the file or kernel and exit 1") {
  auto r = run_command(dop_binary() + " features /nonexistent/k.cl");
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("dop: error: cannot read '/nonexistent/k.cl'"));

  const auto tmp = std::filesystem::temp_directory_path() / "dop_features_no_kernel.cl";
  {
    std::ofstream f(tmp);
    f << "float helper(float x) { return x * 2.0f; }\n";
  }
  r = run_command(dop_binary() + " features " + tmp.string());
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("dop: error: no kernel in '" + tmp.string() + "'"));
  std::filesystem::remove(tmp);

  r = run_command(dop_binary() + " features --kernel nope " + data("two_kernels.cl"));
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("dop: error: no kernel named 'nope'") && Catch::Contains("first, second"));
}

TEST_CASE("dop features works on every kernel file in the repository") {
  namespace fs = std::filesystem;
  int files = 0;
  for (const char* dir : {"tests/data/features", "kernels", "synthetic"}) {
    const fs::path root = fs::path(DOP_SOURCE_DIR) / dir;
    if (!fs::is_directory(root)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      if (e.path().extension() != ".cl") continue;
      ++files;
      INFO(e.path().string());
      const auto r = run_command(dop_binary() + " features --json '" + e.path().string() + "'");
      CHECK(r.rc == 0);
      if (r.rc == 0) CHECK_FALSE(nlohmann::json::parse(r.out)["kernels"].empty());
    }
  }
  CHECK(files >= 29);
}

namespace {

// A kernel long enough that neither the parse nor the analysis ends in 1 ms.
std::filesystem::path long_kernel_file() {
  const auto path = std::filesystem::temp_directory_path() / "dop_features_long.cl";
  std::ofstream f(path);
  f << "__kernel void long_one(__global float* a) {\n  float x = a[get_global_id(0)];\n";
  for (int i = 0; i < 20000; ++i) f << "  x = x * 1.0001f + a[" << i << "];\n";
  f << "  a[get_global_id(0)] = x;\n}\n";
  return path;
}

}  // namespace

TEST_CASE("dop features whose analysis timed out exits 1 unless --accept-partial") {
  const auto path = long_kernel_file();
  auto r = run_command(dop_binary() + " features --csv --time-limit 1 " + path.string());
  CHECK(r.rc == 1);
  CHECK_THAT(r.out,
             Catch::Contains("dop: error: the analysis of '" + path.string() + "' timed out (--time-limit 1 ms)") &&
                 Catch::Contains("--accept-partial"));
  CHECK_THAT(r.out, !Catch::Contains("file,kernel"));  // no partial rows
  r = run_command(dop_binary() + " features --json --time-limit 1 --accept-partial " + path.string() + " 2>/dev/null");
  CHECK(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["kernels"][0]["complete"] == false);
  // With time enough, the same file is whole and exits 0.
  r = run_command(dop_binary() + " features --json --time-limit 0 " + path.string() + " 2>/dev/null");
  CHECK(r.rc == 0);
  CHECK(nlohmann::json::parse(r.out)["kernels"][0]["complete"] == true);
  std::filesystem::remove(path);
}

TEST_CASE("dop bundle whose analysis timed out says so, not that the file does not compile") {
  const auto path = long_kernel_file();
  const auto out = std::filesystem::temp_directory_path() / "dop_bundle_long.json";
  std::filesystem::remove(out);
  auto r = run_command(dop_binary() + " bundle " + path.string() + " --time-limit 1 --out " + out.string());
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("the analysis of '" + path.string() +
                                    "' timed out after 0.001 s (--time-limit 1 "
                                    "ms): no bundle written"));
  CHECK_THAT(r.out, !Catch::Contains("does not compile"));
  CHECK_FALSE(std::filesystem::exists(out));
  r = run_command(dop_binary() + " bundle " + path.string() + " --time-limit 0 --out " + out.string());
  CHECK(r.rc == 0);
  CHECK(std::filesystem::exists(out));
  std::filesystem::remove(out);
  std::filesystem::remove(path);
}
