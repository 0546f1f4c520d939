// The real-world kernels (kernels/): their committed specs, their CPU references, and every kernel at its small
// size on PoCL against its reference, for both work-group organisations.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "dop/cl.hpp"
#include "dop/kernels.hpp"
#include "dop/run_single.hpp"
#include "dop/spec.hpp"

using namespace dop;

namespace {

std::string kernels_dir() { return std::string(DOP_SOURCE_DIR) + "/kernels"; }

const std::vector<std::string>& all_files() {
  static const std::vector<std::string> files = kernels::spec_files(kernels_dir());
  return files;
}

std::vector<Spec> load_all(const std::string& size) {
  std::vector<Spec> specs;
  for (const auto& f : kernels::spec_files(kernels_dir(), size)) specs.push_back(load_spec(f));
  return specs;
}

size_t output_index(const Spec& s) {
  for (size_t i = 0; i < s.args.size(); ++i)
    if (s.args[i].output) return i;
  FAIL("no output in " << s.name);
  return 0;
}

/// The largest error of an output relative to what the tolerance allows (1 = at the limit).
double worst_ratio(const Spec& s, const std::vector<ArgData>& got, const std::vector<ArgData>& want) {
  const size_t out = output_index(s);
  const float* g = got[out].as<float>();
  const float* w = want[out].as<float>();
  double worst = 0;
  for (size_t i = 0; i < s.args[out].count; ++i) {
    const double allowed = s.tolerance.abs + s.tolerance.rel * std::fabs(double(w[i]));
    worst = std::max(worst, std::fabs(double(g[i]) - double(w[i])) / allowed);
  }
  return worst;
}

cl_device_id test_device() {
  static const cl_device_id dev = [] {
    const auto sel = cl::select_devices(cl::discover());
    return sel.cpu ? sel.cpu->device : nullptr;
  }();
  return dev;
}

const std::map<std::string, std::string> kPaperSize = {
    // kernel -> Dopia Table 4's problem size (GEMM is not in Table 4: 1,024 as for SYR2K)
    {"conv2d", "8192"}, {"atax1", "16384"}, {"atax2", "16384"}, {"bicg1", "16384"}, {"bicg2", "16384"},
    {"fdtd1", "16384"}, {"fdtd2", "16384"}, {"fdtd3", "16384"}, {"gemm", "1024"},   {"gesummv", "16384"},
    {"mvt1", "16384"},  {"mvt2", "16384"},  {"syr2k", "1024"},  {"spmv", "16384"},  {"pagerank", "16384"},
};

}  // namespace

TEST_CASE("every kernel has a spec per size and work-group organisation, and every spec parses") {
  kernels::register_references();
  const auto& files = all_files();
  REQUIRE(kernels::names().size() == 15);
  CHECK(files.size() == 15 * 4 * 2);                  // 15 kernels x 4 sizes x 2 work-group organisations
  std::map<std::string, std::set<std::string>> seen;  // kernel -> {"size wg"}
  std::set<std::string> names;
  for (const auto& f : files) {
    CAPTURE(f);
    const Spec s = load_spec(f);
    CHECK(names.insert(s.name).second);
    CHECK(std::filesystem::path(f).stem().string() == s.name);
    CHECK(s.reference == "kernels:" + s.kernel_name);
    CHECK(find_reference(s.reference) != nullptr);
    const std::string src = read_kernel_source(s);
    CHECK(src.find("__kernel void " + s.kernel_name + "(") != std::string::npos);
    CHECK(s.meta.at("set") == "real");
    CHECK(s.meta.at("kernel") == s.kernel_name);
    const std::string size = s.meta.at("size");
    CHECK(s.name.rfind(s.kernel_name + "_" + size + "_", 0) == 0);
    if (size == "paper") CHECK(s.meta.at("n") == kPaperSize.at(s.kernel_name));
    // Table 4's organisations: 64 or 256 work-items (1D), 8x8 or 16x16 (2D).
    const std::string wg = s.local.size() == 1 ? std::to_string(s.local[0])
                                               : std::to_string(s.local[0]) + "x" + std::to_string(s.local[1]);
    CHECK(s.meta.at("wg") == wg);
    CHECK(((wg == "64" || wg == "256") || (wg == "8x8" || wg == "16x16")));
    seen[s.kernel_name].insert(size + " " + wg);
    size_t outputs = 0;
    for (const auto& a : s.args) outputs += a.output ? 1 : 0;
    CHECK(outputs == 1);
  }
  for (const auto& k : kernels::names()) {
    CAPTURE(k);
    const bool two_d = k == "conv2d" || k == "gemm" || k == "syr2k" || k.rfind("fdtd", 0) == 0;
    std::set<std::string> want;
    for (const char* size : {"small", "sweep", "paper", "large"})
      for (const char* wg : two_d ? std::vector<const char*>{"8x8", "16x16"} : std::vector<const char*>{"64", "256"})
        want.insert(std::string(size) + " " + wg);
    CHECK(seen[k] == want);
  }
}

TEST_CASE("spec_files selects a size class and tolerates a missing folder") {
  CHECK(kernels::spec_files(kernels_dir(), "small").size() == 30);
  CHECK(kernels::spec_files(kernels_dir(), "paper").size() == 30);
  CHECK(kernels::spec_files(kernels_dir(), "large").size() == 30);
  CHECK(kernels::spec_files(kernels_dir(), "sweep").size() == 30);
  CHECK(kernels::spec_files(kernels_dir(), "huge").empty());
  CHECK(kernels::spec_files(kernels_dir() + "/no-such-folder").empty());
  CHECK(std::filesystem::equivalent(kernels::default_dir(), kernels_dir()));
}

TEST_CASE("every kernel at its small size matches its CPU reference on PoCL") {
  kernels::register_references();
  const cl_device_id dev = test_device();
  REQUIRE(dev != nullptr);
  const auto specs = load_all("small");
  REQUIRE(specs.size() == 30);
  std::set<std::string> validated;
  for (const Spec& s : specs) {
    CAPTURE(s.name);
    const auto want = run_reference(s);
    const auto run = run_single(s, read_kernel_source(s), dev);
    const Comparison c = compare_outputs(s, run.args, want);
    const double ratio = worst_ratio(s, run.args, want);
    CAPTURE(c.first, c.max_abs_err, ratio);
    CHECK(c.ok);
    CHECK(ratio < 0.25);  // a correct kernel passes with a margin
    if (c.ok) validated.insert(s.name);
  }
  CHECK(validated.size() == specs.size());
}

TEST_CASE("the references compute something and the tolerances catch wrong results") {
  kernels::register_references();
  for (const Spec& s : load_all("small")) {
    if (s.meta.at("wg") != "64" && s.meta.at("wg") != "8x8") continue;  // the data does not depend on the wg
    CAPTURE(s.name);
    const size_t out = output_index(s);
    const auto initial = make_args(s);
    const auto want = run_reference(s);
    const float* w = want[out].as<float>();
    const float* w0 = initial[out].as<float>();
    const size_t n = s.args[out].count;

    // The reference overwrote most of the output (only borders may keep their initial values).
    size_t changed = 0;
    for (size_t i = 0; i < n; ++i) changed += w[i] != w0[i] ? 1 : 0;
    CHECK(changed >= n * 9 / 10);
    CHECK(compare_outputs(s, want, want).ok);

    // One element off by 0.1% (plus ten times the absolute tolerance) is a mismatch.
    auto wrong = want;
    float* g = wrong[out].as<float>();
    size_t at = 0;
    for (size_t i = 0; i < n; ++i)
      if (std::fabs(w[i]) > std::fabs(w[at])) at = i;
    g[at] = float(double(w[at]) * 1.001 + 10 * s.tolerance.abs);
    const Comparison c = compare_outputs(s, wrong, want);
    CHECK_FALSE(c.ok);
    CHECK(c.mismatches == 1);

    // A kernel that read other data (the first input with another seed) fails on most elements.
    Spec other = s;
    for (auto& a : other.args) {
      if (a.kind == ArgKind::buffer && a.access == Access::read && a.init.fill == Init::Fill::random) {
        a.init.seed += 1000;
        break;
      }
    }
    const Comparison d = compare_outputs(s, run_reference(other), want);
    CHECK_FALSE(d.ok);
    CHECK(d.mismatches >= changed / 2);
  }
}

TEST_CASE("the references reject arguments that do not fit") {
  kernels::register_references();
  Spec atax = load_spec(kernels_dir() + "/atax/atax1_small_n500_wg64.json");
  atax.args[3].value = 501;  // n larger than the buffers
  CHECK_THROWS_WITH(run_reference(atax),
                    Catch::Contains("atax1_small_n500_wg64.json: reference kernels:atax1: argument '") &&
                        Catch::Contains("elements, needs 5"));

  Spec spmv = load_spec(kernels_dir() + "/spmv/spmv_small_n1000_k32_wg64.json");
  spmv.args[1].init.bound = 1001;  // column indices beyond x
  CHECK_THROWS_WITH(run_reference(spmv), Catch::Contains("argument 'col'") && Catch::Contains("outside [0, 1000)"));

  Spec pr = load_spec(kernels_dir() + "/pagerank/pagerank_small_n1000_k16_wg64.json");
  pr.args[2].init.value = 0;  // a node without out-links
  CHECK_THROWS_WITH(run_reference(pr), Catch::Contains("argument 'outdeg'"));
  pr = load_spec(kernels_dir() + "/pagerank/pagerank_small_n1000_k16_wg64.json");
  pr.args[0].init.step = 17;  // row pointers past the stored in-links
  CHECK_THROWS_WITH(run_reference(pr), Catch::Contains("argument 'rowptr'"));

  Spec gemm = load_spec(kernels_dir() + "/gemm/gemm_small_n100x90x110_wg8x8.json");
  gemm.args.pop_back();  // nk missing
  CHECK_THROWS_WITH(run_reference(gemm), Catch::Contains("argument 'nk'") && Catch::Contains("missing"));
  gemm = load_spec(kernels_dir() + "/gemm/gemm_small_n100x90x110_wg8x8.json");
  gemm.args[3].type = ElemType::f64;  // alpha as double
  CHECK_THROWS_WITH(run_reference(gemm), Catch::Contains("argument 'alpha'"));
}
