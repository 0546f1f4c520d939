// The footprints the analysis proves, used by the runtime: every real kernel and a sample of synthetic ones run in
// copy mode with sliced copies into poisoned GPU buffers (a byte the GPU needed and did not get is garbage) and
// still reproduce their references, while the GPU receives only its share of the bounded buffers.
#include <catch2/catch.hpp>

#include <cstdio>

#include "dop/bounds.hpp"
#include "dop/features.hpp"
#include "dop/kernels.hpp"
#include "dop/runtime.hpp"
#include "dop/synthetic.hpp"

using namespace dop;
namespace syn = dop::synthetic;

namespace {

Footprint analysed_footprint(const std::string& source, const Spec& s) {
  features::Options o;
  o.kernel = s.kernel_name;
  o.build_options = s.build_options;
  const auto r = features::analyze(source, s.kernel_file, o);
  REQUIRE(r.kernels.size() == 1);
  return parse_footprint(features::to_json(r.kernels[0], -1), s.kernel_file);
}

// Bytes of the buffers whose footprint is bounded, and of all buffers.
std::pair<size_t, size_t> bounded_bytes(const Footprint& fp, const Spec& s) {
  size_t bounded = 0, all = 0;
  for (const auto& a : s.args) {
    if (a.kind != ArgKind::buffer) continue;
    all += a.bytes();
    const auto it = fp.args.find(a.name);
    if (it != fp.args.end() && !it->second.whole) bounded += a.bytes();
  }
  return {bounded, all};
}

// Runs `s` at every configuration and at static splits, sliced, into poisoned GPU buffers. Returns the share of the
// input bytes the GPU received at a 50:50 static split.
double run_sliced(const Spec& s, const std::string& source, const std::vector<ArgData>& want,
                  const std::vector<Config>& configs) {
  ExecutorOptions o;
  o.memory = MemoryMode::copy;
  o.footprint = analysed_footprint(source, s);
  o.poison_gpu_buffers = true;
  Executor ex(s, source, cl::select_devices(cl::discover(), "pocl:0", "pocl:1"), o);
  for (const auto& c : configs) {
    auto args = make_args(s);
    ex.launch(args, c);
    const auto cmp = compare_outputs(s, args, want);
    INFO(s.name << " at " << to_string(c) << ": " << cmp.first);
    REQUIRE(cmp.ok);
  }
  double half = 0;
  for (double share : {0.25, 0.5, 0.9}) {
    auto args = make_args(s);
    const auto r = ex.launch_static(args, Config{1, 1}, share);
    const auto cmp = compare_outputs(s, args, want);
    INFO(s.name << " static CPU share " << share << ": " << cmp.first);
    REQUIRE(cmp.ok);
    if (share == 0.5) half = double(r.h2d_bytes) / double(bounded_bytes(o.footprint, s).second);
  }
  return half;
}

}  // namespace

TEST_CASE("sliced copies: every real kernel at all 44 configurations into poisoned GPU buffers") {
  kernels::register_references();
  const auto files = kernels::spec_files(kernels::default_dir(), "small");
  REQUIRE(files.size() == 30);
  size_t sliced = 0;
  for (const auto& f : files) {
    const Spec s = load_spec(f);
    const std::string source = read_kernel_source(s);
    const auto [bounded, all] = bounded_bytes(analysed_footprint(source, s), s);
    const double half = run_sliced(s, source, run_reference(s), Grid{}.configs());
    std::printf("%-40s bounded %5.1f%% of the buffers; GPU received %5.1f%% at a 50:50 split\n", s.name.c_str(),
                100.0 * double(bounded) / double(all), 100.0 * half);
    // Kernels whose every buffer is bounded by rows (all but the CSR ones, and the column-wise or whole-matrix
    // reads some kernels make) send the GPU less than everything.
    if (bounded == all && half < 0.95) ++sliced;
  }
  CHECK(sliced >= 10);
}

TEST_CASE("sliced copies: a sample of synthetic workloads into poisoned GPU buffers") {
  syn::register_references();
  const auto set = syn::paper_set();
  const std::vector<Config> configs{{1, 1}, {0.5, 0.5}, {0.25, 1}, {1, 0.125}, {0, 1}};
  size_t n = 0, sliced = 0;
  for (size_t i = 0; i < set.size(); i += 73) {
    const syn::Workload w = syn::generate(set[i], 0.004);
    const double half = run_sliced(w.spec, w.source, run_reference(w.spec), configs);
    if (half < 0.95) ++sliced;
    ++n;
  }
  std::printf("synthetic: %zu workloads, %zu sent the GPU less than everything at a 50:50 split\n", n, sliced);
  CHECK(n >= 16);
  CHECK(sliced > 0);
}

TEST_CASE("__local sizes: every synthetic workload with a local tile is bounded by its footprint and accepted") {
  // The launch-time check of __local arguments (dop/bounds.hpp) on the analysis' footprints: a tile of exactly the
  // work-group's rows is what the kernel indexes, so every one is checked and none is refused; one element less is.
  size_t n = 0;
  for (const auto& p : syn::extended_set()) {
    if (!p.local_mem) continue;
    const syn::Workload w = syn::generate(p, 0.004);
    Footprint fp = analysed_footprint(w.source, w.spec);
    const ArgSpec& tile = w.spec.args.back();
    REQUIRE(tile.kind == ArgKind::local);
    INFO(w.spec.name);
    REQUIRE(fp.args.count(tile.name));
    CHECK_FALSE(fp.args.at(tile.name).whole);
    for (const auto& a : w.spec.args)  // the tile alone: the buffers' check is another test's
      if (a.kind == ArgKind::buffer) fp.args.erase(a.name);
    const auto args = make_args(w.spec);
    CHECK_NOTHROW(check_footprint_bounds(w.spec, args, fp, w.spec.local));
    Spec smaller = w.spec;
    smaller.args.back().count -= 1;
    CHECK_THROWS_WITH(check_footprint_bounds(smaller, args, fp, w.spec.local),
                      Catch::Contains("__local argument 'tile' is too small"));
    ++n;
  }
  std::printf("synthetic: %zu workloads with a local tile, all bounded and accepted\n", n);
  CHECK(n >= 8);
}
