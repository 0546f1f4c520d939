// The launch-time bounds check (dop/bounds.hpp) over the workloads dop ships, on the analysis' footprints and
// without launching anything: every one of them validates (test_synthetic_run, test_kernels), so none may be
// refused. The hidden case "[.corpus]" sweeps every synthetic set at several scales and lists what is refused
// (`build/tests/test_bounds_corpus "[.corpus]"`).
#include <catch2/catch.hpp>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "dop/bounds.hpp"
#include "dop/features.hpp"
#include "dop/kernels.hpp"
#include "dop/synthetic.hpp"

using namespace dop;
namespace syn = dop::synthetic;

namespace {

// Each program analysed once (by source and build options).
class Footprints {
 public:
  const Footprint& of(const std::string& source, const Spec& s) {
    const std::string key = s.kernel_name + '\n' + s.build_options + '\n' + source;
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    features::Options o;
    o.kernel = s.kernel_name;
    o.build_options = s.build_options;
    const auto r = features::analyze(source, s.kernel_file, o);
    REQUIRE(r.kernels.size() == 1);
    return memo_.emplace(key, parse_footprint(features::to_json(r.kernels[0], -1), s.kernel_file)).first->second;
  }

 private:
  std::map<std::string, Footprint> memo_;
};

// What check_footprint_bounds says of the spec: "" when it accepts it. Only the scalars are materialised (the check
// reads the buffers' sizes from the spec), so that workloads of any size cost nothing to check.
std::string refusal(const Spec& s, const Footprint& fp) {
  Spec scalars = s;
  for (auto& a : scalars.args)
    if (a.kind != ArgKind::scalar) a.count = 0;
  const auto args = make_args(scalars);
  try {
    check_footprint_bounds(s, args, fp, s.local);
  } catch (const LaunchError& e) {
    return e.what();
  }
  return "";
}

// A launch of two work-groups of 64 over buffer `y` of `count` floats and scalar n: the check takes the first
// work-group's reach (dop/bounds.hpp).
Spec two_groups(int64_t count, int64_t n) {
  return parse_spec(R"({"kernel":{"file":"k.cl","name":"k"},"global":[128],"local":[64],"args":[
    {"name":"y","kind":"buffer","type":"float","count":)" +
                        std::to_string(count) + R"(},{"name":"n","kind":"scalar","type":"int","value":)" +
                        std::to_string(n) + "}]}",
                    "k.json");
}

// A footprint of one write to y at `terms`, with `extra` keys in the access and `ranges` for its atoms.
Footprint write_at(const std::string& terms, const std::string& extra, const std::string& ranges) {
  return parse_footprint(R"({"footprint":{"args":{"y":{"whole":false,"accesses":[{"write":true,"bytes":4,"terms":)" +
                             terms + extra + "}]}},\"ranges\":{" + ranges + "}}}",
                         "k");
}

}  // namespace

TEST_CASE("launch-time bounds: what a launch certainly touches is refused, what it may touch is not") {
  const std::string gid = R"J("get_global_id(0)":["gid_lo_0","gid_hi_0"])J";
  const std::string y_i = R"J([[4,"get_global_id(0)"]])J";
  // y[i] for every work-item (a footprint of a bundle made before "may" and "guards": as then), 64 floats needed.
  const Footprint plain = write_at(y_i, "", gid);
  CHECK_THAT(refusal(two_groups(63, 3), plain), Catch::Contains("needs 256 bytes of it, it has 252"));
  CHECK(refusal(two_groups(64, 3), plain) == "");
  // Behind a condition the footprint does not bound it by: not refused (a real overrun stops at the guard page).
  CHECK(refusal(two_groups(1, 3), write_at(y_i, R"J(,"may":true)J", gid)) == "");
  // `if (i < n) y[i]`: what the work-items within the guard touch, n floats.
  const Footprint guarded = write_at(y_i, R"J(,"guards":[["get_global_id(0)","<=","n-1"]])J", gid);
  CHECK(refusal(two_groups(3, 3), guarded) == "");
  CHECK_THAT(refusal(two_groups(2, 3), guarded), Catch::Contains("needs 12 bytes of it, it has 8"));
  CHECK(refusal(two_groups(1, 0), guarded) == "");  // no work-item within the guard
  CHECK_THROWS_WITH(write_at(y_i, R"J(,"guards":[["get_global_id(0)","<","n"]])J", gid),
                    Catch::Contains("k: footprint: argument 'y': a guard is not [atom, \"<=\" or \">=\", bound]"));
  CHECK_THROWS_WITH(write_at(y_i, R"J(,"guards":[["get_global_id(1)","<=","n"]])J", gid),
                    Catch::Contains("atom 'get_global_id(1)' has no range"));
  // y[i - 16*(i/16)] (i % 16): interval arithmetic reaches 256 bytes, the work-items only 64: not certain.
  const std::string quot = R"J(,"(get_global_id(0)/16)":["gid_lo_0/16","gid_hi_0/16"])J";
  CHECK(refusal(two_groups(16, 3),
                write_at(R"J([[4,"get_global_id(0)"],[-64,"(get_global_id(0)/16)"]])J", "", gid + quot)) == "");
  // A constant negative offset is certain: y[i + n - 2] reaches (63 + 3 - 2 + 1) * 4 bytes.
  const Footprint shifted = write_at(R"J([[4,"get_global_id(0)"],[4,"n"],[-8]])J", "", gid + R"J(,"n":["n","n"])J");
  CHECK_THAT(refusal(two_groups(64, 3), shifted), Catch::Contains("needs 260 bytes of it, it has 256"));
  // A loop that does not run (iter0 in [0, n-1] with n = 0) touches nothing.
  const Footprint loop = write_at(R"J([[4,"iter0"],[400]])J", "", R"J("iter0":["0","n-1"])J");
  CHECK(refusal(two_groups(1, 0), loop) == "");
  CHECK_THAT(refusal(two_groups(1, 1), loop), Catch::Contains("needs 404 bytes of it, it has 4"));
}

TEST_CASE("launch-time bounds: no shipped workload that validates is refused (kernels/, extended _lm)") {
  Footprints fps;
  size_t n = 0, buffers = 0, refused = 0;
  // Every spec of kernels/, of every size: a global size rounded up past the data and guarded in the kernel.
  for (const auto& path : kernels::spec_files(kernels::default_dir())) {
    const Spec s = load_spec(path);
    INFO(path);
    const Footprint& fp = fps.of(read_kernel_source(s), s);
    CHECK(refusal(s, fp) == "");
    // The check still refuses what is certainly too small: each buffer of one element.
    for (size_t i = 0; i < s.args.size(); ++i) {
      if (s.args[i].kind != ArgKind::buffer) continue;
      Spec tiny = s;
      tiny.args[i].count = 1;
      ++buffers;
      if (refusal(tiny, fp).find("args[" + std::to_string(i) + "].count: buffer '") != std::string::npos) ++refused;
    }
    ++n;
  }
  CHECK(n >= 100);
  std::printf("bounds: %zu of the %zu buffers of kernels/ specs refused at one element\n", refused, buffers);
  CHECK(refused * 2 >= buffers);
  // The synthetic workloads that stage results in local memory: each work-group writes its rows from the group id
  // and a loop over the tile, guarded by the rows' count (the work-items' own bounds do not cover it).
  size_t lm = 0;
  for (const auto& p : syn::extended_set()) {
    if (!p.local_mem) continue;
    const syn::Workload w = syn::generate(p, 0.004);
    INFO(w.spec.name);
    CHECK(refusal(w.spec, fps.of(w.source, w.spec)) == "");
    ++lm;
  }
  CHECK(lm >= 8);
  std::printf("bounds: %zu kernels/ specs and %zu synthetic _lm workloads checked\n", n, lm);
}

TEST_CASE("launch-time bounds: every synthetic set at several scales", "[.corpus]") {
  Footprints fps;
  for (const char* set : {"paper", "extended", "span"}) {
    const auto params = std::string(set) == "paper"      ? syn::paper_set()
                        : std::string(set) == "extended" ? syn::extended_set()
                                                         : syn::span_set();
    for (double scale : {0.004, 0.02, 0.1, 1.0}) {
      size_t n = 0, refused = 0;
      for (const auto& p : params) {
        const syn::Workload w = syn::generate(p, scale);
        const std::string why = refusal(w.spec, fps.of(w.source, w.spec));
        if (!why.empty()) {
          ++refused;
          std::printf("refused: %s at %g: %s\n", w.spec.name.c_str(), scale, why.c_str());
        }
        ++n;
      }
      std::printf("bounds: set %s, scale %g: %zu workloads, %zu refused\n", set, scale, n, refused);
      CHECK(refused == 0);
    }
  }
}
