// The synthetic workload family: names, sets, shapes, specs, the CPU reference and `dop synth`.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dop/cl.hpp"
#include "dop/run_single.hpp"
#include "dop/spec.hpp"
#include "dop/synthetic.hpp"
#include "support.hpp"

namespace syn = dop::synthetic;
namespace fs = std::filesystem;
using dop::test::dop_binary;
using dop::test::run_command;

namespace {

std::string without_gamma(syn::Params p) {
  p.gamma = 0;
  return syn::pattern(p);
}

size_t arg_index(const dop::Spec& s, const std::string& name) {
  for (size_t i = 0; i < s.args.size(); ++i)
    if (s.args[i].name == name) return i;
  FAIL("no argument " << name << " in " << s.name);
  return 0;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::path(DOP_BINARY_DIR) / "test-synthetic" / name;
  fs::remove_all(d);
  return d;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// Names and sets
// ---------------------------------------------------------------------------------------------------------------

TEST_CASE("synthetic: the paper set is Table 4's 1,224 workloads with unique names over the 17 patterns") {
  const auto set = syn::paper_set();
  REQUIRE(set.size() == 1224);
  std::set<std::string> names;
  std::map<std::string, int> per_pattern, per_dtype, per_dim, per_gamma, per_rung, per_wg;
  for (const auto& p : set) {
    const std::string n = syn::name(p);
    names.insert(n);
    CHECK(syn::parse_name(n) == p);
    CHECK_FALSE(p.extended());
    ++per_pattern[without_gamma(p)];
    ++per_dtype[syn::dtype_name(p.dtype)];
    ++per_dim[std::to_string(p.dim)];
    ++per_gamma[std::to_string(p.gamma)];
    ++per_rung[std::to_string(p.size)];
    ++per_wg[std::to_string(p.wg)];
  }
  CHECK(names.size() == 1224);
  const auto& patterns = syn::paper_patterns();
  REQUIRE(patterns.size() == 17);
  CHECK(std::set<std::string>(patterns.begin(), patterns.end()).size() == 17);
  REQUIRE(per_pattern.size() == 17);
  for (const auto& pat : patterns) CHECK(per_pattern[pat] == 72);
  CHECK(per_dtype == std::map<std::string, int>{{"float", 612}, {"int", 612}});
  CHECK(per_dim == std::map<std::string, int>{{"1", 612}, {"2", 612}});
  CHECK(per_gamma == std::map<std::string, int>{{"0", 408}, {"2", 408}, {"4", 408}});
  CHECK(per_rung == std::map<std::string, int>{{"1", 408}, {"2", 408}, {"3", 408}});
  CHECK(per_wg == std::map<std::string, int>{{"256", 612}, {"64", 612}});
  // Table 4's pattern names appear verbatim at the start of the names.
  CHECK(names.count("1mat3d_d1_float_s1_wg64") == 1);
  CHECK(names.count("2mat3d4c1C1R1T_d2_int_s3_wg256") == 1);
  CHECK(names.count("1mat4d2c1T_d1_float_s2_wg64") == 1);
}

TEST_CASE("synthetic: kernel sources depend only on pattern, γ, dim and dtype: 204 programs") {
  std::map<std::string, std::string> sources;
  for (const auto& p : syn::paper_set()) {
    const std::string src = syn::kernel_source(p);
    const auto [it, inserted] = sources.emplace(syn::program_name(p), src);
    if (!inserted) CHECK(it->second == src);
    CHECK_THAT(src, Catch::Contains("__kernel void " + syn::program_name(p) + "("));
  }
  CHECK(sources.size() == 204);                    // 17 patterns x 3 γ x 2 dims x 2 dtypes
  auto is_identifier = [](const std::string& s) {  // [A-Za-z_][A-Za-z0-9_]*
    auto ok = [](char c, bool first) {
      return c == '_' || std::isalpha(static_cast<unsigned char>(c)) ||
             (!first && std::isdigit(static_cast<unsigned char>(c)));
    };
    if (s.empty() || !ok(s[0], true)) return false;
    return std::all_of(s.begin() + 1, s.end(), [&](char c) { return ok(c, false); });
  };
  for (const auto& p : syn::extended_set()) CHECK(is_identifier(syn::program_name(p)));
  CHECK_FALSE(is_identifier("2mat3d"));
}

TEST_CASE("synthetic: the extended set adds each extension and keeps the paper set first") {
  const auto paper = syn::paper_set();
  const auto ext = syn::extended_set();
  REQUIRE(ext.size() == 2200);
  CHECK(std::equal(paper.begin(), paper.end(), ext.begin()));
  std::set<std::string> names;
  int coarsen = 0, div = 0, lm = 0, f64 = 0, d3 = 0;
  for (size_t i = 0; i < ext.size(); ++i) {
    const auto& p = ext[i];
    names.insert(syn::name(p));
    CHECK(syn::parse_name(syn::name(p)) == p);
    if (i < paper.size()) continue;
    CHECK(p.extended());
    coarsen += p.coarsen == 4;
    div += p.divergent;
    lm += p.local_mem;
    f64 += p.dtype == syn::DType::f64;
    d3 += p.dim == 3;
  }
  CHECK(names.size() == ext.size());
  CHECK(coarsen == 272);
  CHECK(div == 272);
  CHECK(lm == 272);
  CHECK(f64 == 136);
  CHECK(d3 == 24);
}

TEST_CASE("synthetic: names parse into their parameters") {
  auto p = syn::parse_name("2mat3d2c1T_d1_float_s1_wg64");
  CHECK(p.alpha == 2);
  CHECK(p.beta == 3);
  CHECK(p.gamma == 2);
  CHECK(p.delta == 1);
  CHECK(p.epsilon == 0);
  CHECK(p.theta == 0);
  CHECK(p.dim == 1);
  CHECK(p.dtype == syn::DType::f32);
  CHECK(p.size == 1);
  CHECK(p.wg == 64);
  CHECK(syn::pattern(p) == "2mat3d2c1T");
  CHECK(p.terms() == 2);

  p = syn::parse_name("2mat3d4c1C1R1T_d2_int_s3_wg256");
  CHECK((p.alpha == 2 && p.gamma == 4 && p.theta == 1 && p.epsilon == 1 && p.delta == 1));
  CHECK((p.dim == 2 && p.dtype == syn::DType::i32 && p.size == 3 && p.wg == 256));
  CHECK(p.terms() == 3);

  p = syn::parse_name("1mat4d_d3_double_s2_wg256_w4_div");
  CHECK((p.beta == 4 && p.dim == 3 && p.dtype == syn::DType::f64 && p.coarsen == 4 && p.divergent));
  CHECK_FALSE(p.local_mem);
  CHECK(p.extended());
}

TEST_CASE("synthetic: malformed names are refused with the reason") {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "expected <pattern>_d<dim>"},
      {"1mat3d", "expected <pattern>_d<dim>"},
      {"mat3d_d1_float_s1_wg64", "must start with <α>mat"},
      {"1mat_d1_float_s1_wg64", "needs <β>d"},
      {"1mat3d1x_d1_float_s1_wg64", "unknown pattern suffix 'x'"},
      {"1mat3d1T1T_d1_float_s1_wg64", "given twice"},
      {"1mat3d1T1C_d1_float_s1_wg64", "did you mean '1mat3d1C1T_d1_float_s1_wg64'"},
      {"1mat3d0c_d1_float_s1_wg64", "did you mean '1mat3d_d1_float_s1_wg64'"},
      {"9mat3d_d1_float_s1_wg64", "α (matrices) must be 1..8"},
      {"1mat5d_d1_float_s1_wg64", "β (matrix dimensions) must be 2..4"},
      {"1mat3d_d3_float_s1_wg64", "needs β > dim"},
      {"1mat3d_x1_float_s1_wg64", "expected d<dim>"},
      {"1mat3d_d1_half_s1_wg64", "unknown data type 'half'"},
      {"1mat3d_d1_float_s0_wg64", "size rung must be 1..8"},
      {"1mat3d_d1_float_1_wg64", "expected s<rung>"},
      {"1mat3d_d1_float_s1_wg96", "power of two"},
      {"1mat3d_d1_float_s1_64", "expected wg<work-group size>"},
      {"1mat3d_d1_float_s1_wg64_fast", "unknown extension 'fast'"},
      {"1mat3d_d1_float_s1_wg64_w4_lm", "_lm and _w cannot be combined"},
      {"1mat3d_d1_float_s1_wg64_w1", "did you mean '1mat3d_d1_float_s1_wg64'"},
      {"1mat3d_d1_float_s1_wg64_lm_div", "did you mean '1mat3d_d1_float_s1_wg64_div_lm'"},
  };
  for (const auto& [text, why] : bad) {
    INFO(text);
    try {
      syn::parse_name(text);
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      CHECK_THAT(e.what(), Catch::Contains(why) && Catch::Contains("'" + text + "'"));
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Sizes and launch shapes
// ---------------------------------------------------------------------------------------------------------------

TEST_CASE("synthetic: the size ladder and launch shapes") {
  const double rung_bytes = 256.0 * 1024 * 1024;
  const auto paper = syn::paper_set();
  const auto set = syn::extended_set();
  for (size_t i = 0; i < set.size(); ++i) {
    const syn::Params& p = set[i];
    INFO(syn::name(p));
    const auto n = syn::extents(p, 1.0);
    REQUIRE(n.size() == size_t(p.beta));
    const size_t inner = std::accumulate(n.begin() + 1, n.end(), size_t(1), std::multiplies<size_t>());
    CHECK(inner == 256);
    // Every workload of a rung moves about the same bytes: 256 MiB * 2^(rung-1), within the rounding of n[0].
    const double bytes = double(n[0] * inner) * syn::traffic_per_element(p);
    CHECK(std::fabs(bytes / (rung_bytes * std::ldexp(1.0, p.size - 1)) - 1) < 0.01);
    std::vector<size_t> global, local;
    syn::launch_shape(p, n, global, local);
    REQUIRE(global.size() == size_t(p.dim));
    REQUIRE(local.size() == size_t(p.dim));
    CHECK(std::accumulate(local.begin(), local.end(), size_t(1), std::multiplies<size_t>()) == size_t(p.wg));
    size_t groups = 1;
    for (size_t k = 0; k < global.size(); ++k) {
      CHECK(global[k] % local[k] == 0);
      const size_t items = k == 0 ? (n[0] + size_t(p.coarsen) - 1) / size_t(p.coarsen) : n[k];
      CHECK(global[k] >= items);
      CHECK(global[k] < items + local[k]);  // rounded up, not more
      if (k > 0) CHECK(local[k] <= n[k]);   // inner work-item dimensions are not padded
      groups *= global[k] / local[k];
    }
    // Enough work-groups to spread over 16 cores and a GPU at the default scale (coarsening divides them by K).
    CHECK(groups >= (i < paper.size() ? 16u : 4u));
  }
  // The paper's ladder is 1:2:4; traffic per element sets the base.
  auto p = syn::parse_name("1mat3d_d1_float_s1_wg64");
  CHECK(syn::traffic_per_element(p) == 8);  // one float read, one written
  CHECK(syn::extents(p) == std::vector<size_t>{131072, 16, 16});
  p.size = 3;
  CHECK(syn::extents(p) == std::vector<size_t>{524288, 16, 16});
  CHECK(syn::traffic_per_element(syn::parse_name("2mat3d1C1R1T_d1_float_s1_wg64")) == 4 + 4 + 128 + 128);
  CHECK(syn::traffic_per_element(syn::parse_name("2mat3d1C_d1_double_s1_wg64")) == 8 + 8);
  CHECK(syn::extents(syn::parse_name("2mat3d1C1R1T_d1_float_s1_wg64"))[0] == 3972);  // round(2^28 / 264 / 256)

  std::vector<size_t> global, local;
  p = syn::parse_name("1mat3d_d2_float_s1_wg64");
  syn::launch_shape(p, syn::extents(p), global, local);
  CHECK(local == std::vector<size_t>{8, 8});
  CHECK(global == std::vector<size_t>{131072, 16});
  p.wg = 256;
  syn::launch_shape(p, syn::extents(p), global, local);
  CHECK(local == std::vector<size_t>{16, 16});
  p = syn::parse_name("1mat4d_d3_int_s1_wg256");
  syn::launch_shape(p, syn::extents(p), global, local);
  CHECK(local == std::vector<size_t>{8, 8, 4});
  CHECK(global == std::vector<size_t>{131072, 16, 4});
  p = syn::parse_name("1mat4d_d1_int_s1_wg256_w4");
  syn::launch_shape(p, syn::extents(p), global, local);
  CHECK(global == std::vector<size_t>{131072 / 4});

  // Scale: extents follow it, at least 1 row; 32-bit indexing bounds it.
  p = syn::parse_name("2mat3d_d1_float_s3_wg256");
  CHECK(syn::extents(p, 0.01)[0] == 3495);  // round(2^30 / 12 / 256 * 0.01)
  CHECK(syn::extents(p, 1e-9)[0] == 1);
  CHECK(syn::extents(p, 20.0)[0] == 6990507);
  CHECK_THROWS_WITH(syn::extents(p, 30.0), Catch::Contains("more than 32-bit indices allow"));
  for (double bad : {0.0, -1.0, std::nan("")})
    CHECK_THROWS_WITH(syn::extents(p, bad), "scale must be a positive number");
}

// ---------------------------------------------------------------------------------------------------------------
// Specs
// ---------------------------------------------------------------------------------------------------------------

TEST_CASE("synthetic: every paper spec survives the JSON round trip") {
  for (const auto& p : syn::paper_set()) {
    const syn::Workload w = syn::generate(p, 0.004);
    INFO(w.spec.name);
    const std::string json = dop::spec_to_json(w.spec);
    const dop::Spec back = dop::parse_spec(json, "synthetic.json");  // checks types, sizes, local | global
    CHECK(back.name == w.spec.name);
    CHECK(back.kernel_name == w.program);
    CHECK(back.kernel_file == w.program + ".cl");
    CHECK(back.global == w.spec.global);
    CHECK(back.local == w.spec.local);
    CHECK(back.reference == "synthetic:" + w.spec.name);
    CHECK(back.tolerance.rel == w.spec.tolerance.rel);
    CHECK(back.tolerance.abs == w.spec.tolerance.abs);
    CHECK(back.meta == w.spec.meta);
    REQUIRE(back.args.size() == w.spec.args.size());
    for (size_t i = 0; i < back.args.size(); ++i) {
      const auto &a = back.args[i], &b = w.spec.args[i];
      CHECK((a.name == b.name && a.kind == b.kind && a.type == b.type && a.count == b.count && a.value == b.value &&
             a.access == b.access && a.output == b.output && a.init.fill == b.init.fill && a.init.seed == b.init.seed &&
             a.init.min == b.init.min && a.init.max == b.init.max));
    }
    CHECK(dop::spec_to_json(back) == json);
  }
}

TEST_CASE("synthetic: a spec's arguments, data and metadata") {
  const syn::Workload w = syn::generate(syn::parse_name("2mat3d2c1C1R1T_d1_float_s2_wg256"), 0.004);
  const dop::Spec& s = w.spec;
  std::vector<std::string> names;
  for (const auto& a : s.args) names.push_back(a.name);
  CHECK(names == std::vector<std::string>{"A", "B", "Out", "Idx", "N0", "N1", "N2", "K", "c1", "c2"});
  const auto ext = syn::extents(syn::parse_name(s.name), 0.004);
  const size_t n = ext[0] * 16 * 16;
  CHECK(ext[0] == 32);  // round(2^29 / 264 / 256 * 0.004)
  CHECK(s.args[0].count == n);
  CHECK(s.args[0].init.fill == dop::Init::Fill::random);
  CHECK(s.args[0].init.seed != s.args[1].init.seed);
  CHECK(s.args[0].init.seed < (uint64_t(1) << 53));
  CHECK((s.args[2].output && s.args[2].access == dop::Access::write));
  CHECK((s.args[3].type == dop::ElemType::i32 && s.args[3].init.fill == dop::Init::Fill::permutation));
  CHECK(s.args[4].value == 32);
  CHECK(s.args[7].value == double(n / 3));
  CHECK(s.global == std::vector<size_t>{256});
  CHECK(s.local == std::vector<size_t>{256});
  CHECK(s.meta.at("pattern") == "2mat3d2c1C1R1T");
  CHECK(s.meta.at("extents") == "32x16x16");
  CHECK(s.meta.at("set") == "paper");
  // Deterministic: the same workload gives the same spec, and its index array is a permutation.
  CHECK(dop::spec_to_json(syn::generate(syn::parse_name(s.name), 0.004).spec) == dop::spec_to_json(s));
  const auto args = dop::make_args(s);
  std::vector<int32_t> idx(args[3].as<int32_t>(), args[3].as<int32_t>() + n);
  std::sort(idx.begin(), idx.end());
  std::vector<int32_t> iota(n);
  std::iota(iota.begin(), iota.end(), 0);
  CHECK(idx == iota);
  // Local memory of the _lm extension is an argument of kind local sized by the work-group.
  const auto lm = syn::generate(syn::parse_name("1mat3d_d2_float_s1_wg64_lm"), 0.004).spec;
  CHECK((lm.args.back().kind == dop::ArgKind::local && lm.args.back().count == 64 * 16));
}

TEST_CASE("synthetic: implied features follow the parameters") {
  auto f = syn::implied_features(syn::parse_name("2mat3d2c1C1R1T_d1_float_s1_wg64"));
  CHECK(f.mem_constant == 1);
  CHECK(f.mem_stride == 1);
  CHECK(f.mem_random == 1);
  CHECK(f.mem_continuous == 2);  // the index array and the output; no continuous term (3 special ones, α = 2)
  CHECK(f.arith_data == 2 + 3 * 2);
  CHECK(f.data_is_float);
  f = syn::implied_features(syn::parse_name("2mat3d4c_d2_int_s1_wg64"));
  CHECK(f.mem_continuous == 3);
  CHECK((f.mem_constant == 0 && f.mem_stride == 0 && f.mem_random == 0));
  CHECK(f.arith_data == 1 + 2 * 4);
  CHECK_FALSE(f.data_is_float);
}

// ---------------------------------------------------------------------------------------------------------------
// The reference
// ---------------------------------------------------------------------------------------------------------------

TEST_CASE("synthetic: the reference computes Table 2's formula") {
  // Independent re-computation of Out = (A^T*c1 + c2) + (B[Idx]*c1 + c2) + (A[K]*c1 + c2) at extents 3x16x16.
  syn::register_references();
  REQUIRE(dop::find_reference("synthetic:2mat3d2c1C1R1T_d1_float_s1_wg64") != nullptr);
  const auto p = syn::parse_name("2mat3d2c1C1R1T_d1_float_s1_wg64");
  const double scale = 3.0 * 256 * syn::traffic_per_element(p) / (256.0 * 1024 * 1024);
  REQUIRE(syn::extents(p, scale) == std::vector<size_t>{3, 16, 16});
  const syn::Workload w = syn::generate(p, scale);
  const auto want = dop::run_reference(w.spec);
  const auto in = dop::make_args(w.spec);
  const float* A = in[0].as<float>();
  const float* B = in[1].as<float>();
  const int32_t* idx = in[3].as<int32_t>();
  const float* out = want[2].as<float>();
  const size_t n0 = 3, n1 = 16, n2 = 16, K = 3 * 16 * 16 / 3;
  const float c1 = 1.25f, c2 = 0.5f;
  CHECK(w.spec.args[8].value == c1);
  CHECK(w.spec.args[9].value == c2);
  for (size_t i0 = 0; i0 < n0; ++i0)
    for (size_t i1 = 0; i1 < n1; ++i1)
      for (size_t i2 = 0; i2 < n2; ++i2) {
        const size_t e = (i0 * n1 + i1) * n2 + i2, t = (i2 * n1 + i1) * n0 + i0;
        const float expect = (A[t] * c1 + c2) + (B[size_t(idx[e])] * c1 + c2) + (A[K] * c1 + c2);
        REQUIRE(out[e] == Approx(expect).epsilon(1e-6));
      }
}

TEST_CASE("synthetic: the reference wraps int arithmetic like OpenCL and applies the extensions") {
  syn::register_references();
  // Inputs near INT_MAX: (a*3 + 7)*(-2) - 5 overflows; the reference must wrap modulo 2^32 (and UBSan must stay quiet).
  syn::Workload w = syn::generate(syn::parse_name("1mat3d4c_d1_int_s1_wg64"), 0.0001);
  w.spec.args[0].init.fill = dop::Init::Fill::constant;
  w.spec.args[0].init.value = 2000000000;
  const auto want = dop::run_reference(w.spec);
  const int64_t wide = ((int64_t(2000000000) * 3 + 7) * -2) - 5;
  const auto wrapped = int32_t(uint32_t(uint64_t(wide) & 0xffffffffu));
  CHECK(want[1].as<int32_t>()[0] == wrapped);
  CHECK(want[1].as<int32_t>()[w.spec.args[1].count - 1] == wrapped);

  // _div: odd outer rows apply s = s*b1 + b2 four more times.
  w = syn::generate(syn::parse_name("1mat3d_d1_int_s1_wg64_div"), 0.0001);
  const auto in = dop::make_args(w.spec);
  const auto out = dop::run_reference(w.spec);
  const int32_t* a = in[0].as<int32_t>();
  const int32_t* o = out[1].as<int32_t>();
  CHECK(o[5] == a[5]);  // row 0
  int32_t s = a[256 + 5];
  for (int r = 0; r < 4; ++r) s = s * 2 - 1;
  CHECK(o[256 + 5] == s);           // row 1
  CHECK(o[512 + 5] == a[512 + 5]);  // row 2
}

TEST_CASE("synthetic: the reference refuses specs that do not fit the workload") {
  syn::register_references();
  syn::Workload w = syn::generate(syn::parse_name("2mat3d2c_d1_float_s1_wg64"), 0.001);
  auto spec = w.spec;
  spec.args.erase(spec.args.begin() + long(arg_index(spec, "c2")));
  CHECK_THROWS_WITH(dop::run_reference(spec), Catch::Contains("no argument named 'c2'"));
  spec = w.spec;
  spec.args[arg_index(spec, "N0")].value = 100000;  // larger than the buffers
  CHECK_THROWS_WITH(dop::run_reference(spec), Catch::Contains("holds fewer than"));
  spec = w.spec;
  spec.reference = "synthetic:2mat3d2c_d1_float_s1_wg65";
  CHECK_THROWS_WITH(dop::run_reference(spec), Catch::Contains("power of two"));
}

// ---------------------------------------------------------------------------------------------------------------
// dop synth
// ---------------------------------------------------------------------------------------------------------------

TEST_CASE("dop synth list prints the sets, one name per line") {
  auto r = run_command(dop_binary() + " synth list");
  REQUIRE(r.rc == 0);
  std::string expected;
  for (const auto& p : syn::paper_set()) expected += syn::name(p) + "\n";
  CHECK(r.out == expected);
  r = run_command(dop_binary() + " synth list --set extended");
  REQUIRE(r.rc == 0);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 2200);
  CHECK_THAT(r.out, Catch::Contains("1mat4d4c1T_d3_int_s2_wg256\n"));
  r = run_command(dop_binary() + " synth list --set huge");
  CHECK(r.rc != 0);
  CHECK_THAT(r.out, Catch::Contains("huge"));
}

TEST_CASE("dop synth emit writes kernels and specs that load, run and validate") {
  syn::register_references();
  const fs::path dir = fresh_dir("emit-some");
  const std::string a = "2mat3d2c1C1R1T_d2_float_s1_wg64", b = "2mat3d2c1C1R1T_d2_float_s2_wg256",
                    c = "1mat4d1R_d3_int_s1_wg64_lm";
  auto r =
      run_command(dop_binary() + " synth emit " + a + " " + b + " " + c + " --out " + dir.string() + " --scale 0.004");
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("wrote 3 workload specs and 2 kernels"));
  CHECK(fs::exists(dir / "syn_2mat3d2c1C1R1T_d2_float.cl"));
  CHECK(fs::exists(dir / "syn_1mat4d1R_d3_int_lm.cl"));
  const auto sel = dop::cl::select_devices(dop::cl::discover());
  REQUIRE(sel.cpu);
  for (const std::string& name : {a, b, c}) {
    INFO(name);
    const dop::Spec s = dop::load_spec((dir / (name + ".json")).string());
    CHECK(s.name == name);
    CHECK(s.kernel_file == (dir / (s.kernel_name + ".cl")).string());
    const std::string src = dop::read_kernel_source(s);
    CHECK(src == syn::kernel_source(syn::parse_name(name)));
    const auto run = dop::run_single(s, src, sel.cpu->device);
    const auto cmp = dop::compare_outputs(s, run.args, dop::run_reference(s));
    CHECK(cmp.ok);
    CHECK(cmp.first == "");
  }
}

TEST_CASE("dop synth emit --all writes the whole set") {
  const fs::path dir = fresh_dir("emit-all");
  const auto r = run_command(dop_binary() + " synth emit --all --out " + dir.string() + " --scale 0.004");
  REQUIRE(r.rc == 0);
  size_t json = 0, cl = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    json += e.path().extension() == ".json";
    cl += e.path().extension() == ".cl";
  }
  CHECK(json == 1224);
  CHECK(cl == 204);
  const dop::Spec s = dop::load_spec((dir / "1mat4d4c1T_d2_int_s3_wg256.json").string());
  CHECK(s.meta.at("scale") == "0.004");
  CHECK(s.args[0].count == 127 * 256);  // round(2^30 / 132 / 256 * 0.004) rows
}

TEST_CASE("dop synth emit errors name the problem and write nothing") {
  const fs::path dir = fresh_dir("emit-errors");
  auto r =
      run_command(dop_binary() + " synth emit 1mat3d_d1_float_s1_wg64 1mat3d_d1_flaot_s1_wg64 --out " + dir.string());
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("dop: error: synthetic workload '1mat3d_d1_flaot_s1_wg64': unknown data type"));
  CHECK_FALSE(fs::exists(dir));  // nothing written, not even the valid one
  fs::create_directories(dir);
  dop::test::run_command("touch " + (dir / "file").string());
  r = run_command(dop_binary() + " synth emit 1mat3d_d1_float_s1_wg64 --out " + (dir / "file" / "sub").string());
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("cannot create output folder '" + (dir / "file" / "sub").string() + "'"));
  r = run_command(dop_binary() + " synth emit --out " + dir.string());
  CHECK(r.rc == 2);  // bad usage
  CHECK_THAT(r.out, Catch::Contains("give workload names or --all"));
  r = run_command(dop_binary() + " synth emit 1mat3d_d1_float_s1_wg64 --out " + dir.string() + " --scale 0");
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("scale must be a positive number"));
  r = run_command(dop_binary() + " synth emit 1mat3d_d1_float_s3_wg64 --out " + dir.string() + " --scale 100");
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("more than 32-bit indices allow"));
  r = run_command(dop_binary() + " synth emit 1mat3d_d1_float_s1_wg64");
  CHECK(r.rc != 0);
  CHECK_THAT(r.out, Catch::Contains("--out"));
}
