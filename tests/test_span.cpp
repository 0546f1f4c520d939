// The span set (docs/synthetic.md, "The span set"): its names, its count, its size ladder, its references, and a
// sample swept through `dop sweep --set span` at every configuration of the grid on PoCL.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "dop/dataset.hpp"
#include "dop/spec.hpp"
#include "dop/synthetic.hpp"
#include "support.hpp"

namespace syn = dop::synthetic;
using dop::test::dop_binary;
using dop::test::run_command;

namespace {

constexpr double kTestScale = 0.001;  // products n = 32-176, matrix-vector and stencils up to 736, tri up to 179K

double meta_number(const dop::Spec& s, const std::string& key) { return std::stod(s.meta.at(key)); }

// The work of a span workload at its extents: n (tri), n^2 (matrix-vector, stencils), n^3 (products).
double work(const std::vector<size_t>& n) {
  double w = 1;
  for (size_t e : n) w *= double(e);
  return w;
}

std::string family_key(const syn::Params& p) {
  return std::string(syn::family_name(p.family)) + (p.radius ? std::to_string(p.radius) : "");
}

}  // namespace

TEST_CASE("span: the set is 9 families x 4 γ x 5 rungs x 2 work-group sizes = 360, names unique and canonical") {
  const auto set = syn::span_set();
  REQUIRE(set.size() == 360);
  std::set<std::string> names;
  std::map<std::string, int> per_family;
  for (const auto& p : set) {
    CHECK(p.span());
    CHECK_FALSE(p.extended());
    const std::string n = syn::name(p);
    names.insert(n);
    CHECK(syn::parse_name(n) == p);  // round trip
    ++per_family[family_key(p)];
  }
  CHECK(names.size() == 360);
  CHECK(per_family == std::map<std::string, int>{{"tri", 40},
                                                 {"mm", 40},
                                                 {"mmt", 40},
                                                 {"mvr", 40},
                                                 {"mvc", 40},
                                                 {"st1", 40},
                                                 {"st2", 40},
                                                 {"st4", 40},
                                                 {"gv", 40}});
  // Nesting order: family, γ, rung, work-group size.
  CHECK(syn::name(set[0]) == "tri_c0_s1_wg64");
  CHECK(syn::name(set[1]) == "tri_c0_s1_wg256");
  CHECK(syn::name(set[2]) == "tri_c0_s2_wg64");
  CHECK(syn::name(set[40 + 10]) == "mm_c4_s1_wg8x8");
  CHECK(syn::name(set[319]) == "st4_c64_s5_wg16x16");
  CHECK(syn::name(set[320]) == "gv_c0_s1_wg64");  // added after the first sweeps: earlier indices are unchanged
  CHECK(syn::name(set[359]) == "gv_c64_s5_wg256");
  // The paper set is untouched and separate.
  CHECK(syn::paper_set().size() == 1224);
  for (const auto& p : syn::paper_set()) REQUIRE_FALSE(p.span());
  // 36 programs: one per family and γ.
  std::set<std::string> programs;
  for (const auto& p : set) programs.insert(syn::program_name(p));
  CHECK(programs.size() == 36);
  CHECK(programs.count("span_st2_c16") == 1);
}

TEST_CASE("span: names parse into their parameters and non-canonical spellings are refused") {
  const syn::Params mm = syn::parse_name("mm_c8_s3_wg16x16");
  CHECK(mm.family == syn::Family::matmul);
  CHECK(mm.gamma == 8);
  CHECK(mm.size == 3);
  CHECK(mm.wg == 256);
  CHECK(mm.dim == 2);
  const syn::Params st = syn::parse_name("st2_c0_s5_wg8x8");
  CHECK(st.family == syn::Family::stencil);
  CHECK(st.radius == 2);
  CHECK(st.wg == 64);
  CHECK(syn::parse_name("mvc_c64_s1_wg64").family == syn::Family::matvec_cols);
  CHECK(syn::parse_name("mvr_c0_s2_wg256").dim == 1);
  CHECK(syn::parse_name("mmt_c0_s1_wg8x8").family == syn::Family::matmul_bt);
  CHECK(syn::parse_name("tri_c200_s4_wg1024").gamma == 200);  // outside the set, inside the grammar
  const syn::Params gv = syn::parse_name("gv_c16_s2_wg256");
  CHECK(gv.family == syn::Family::gather);
  CHECK(gv.dim == 1);
  CHECK(gv.wg == 256);

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"mm_c8_s3_wg256", "did you mean 'mm_c8_s3_wg16x16'"},     // a 2D family's group spelled 1D
      {"mvr_c0_s2_wg16x16", "did you mean 'mvr_c0_s2_wg256'"},   // and the other way round
      {"mm_s3_c8_wg16x16", "did you mean 'mm_c8_s3_wg16x16'"},   // order
      {"mm_c08_s3_wg16x16", "did you mean 'mm_c8_s3_wg16x16'"},  // leading zero
      {"mm_c8_s3_wg4x64", "did you mean 'mm_c8_s3_wg16x16'"},    // not the launch's shape
      {"st_c0_s1_wg8x8", "st<radius>"},
      {"st9_c0_s1_wg8x8", "radius must be 1..8"},
      {"xx_c0_s1_wg64", "unknown family 'xx'"},
      {"mm_c8_s6_wg8x8", "rung must be 1..5"},
      {"tri_c300_s1_wg64", "must be 0..256"},
      {"tri_c0_s1_wg96", "power of two"},
      {"mm_c8_s3", "expected <family>_c<γ>_s<rung>_wg<size>"},
      {"mm_c8_s3_wg8x8_lm", "unexpected part 'lm'"},
      {"mm_c8_c4_s3_wg8x8", "given twice"},
  };
  for (const auto& [name, why] : bad) {
    INFO(name);
    try {
      syn::parse_name(name);
      FAIL("accepted " + name);
    } catch (const std::invalid_argument& e) {
      CHECK_THAT(e.what(), Catch::Contains(why));
      CHECK_THAT(e.what(), Catch::Contains(name));
    }
  }
  // The element-wise grammar still parses as before.
  CHECK_FALSE(syn::parse_name("2mat3d2c1T_d1_float_s1_wg64").span());
  // Span parameters that the grammar cannot express are refused by validate().
  syn::Params p = syn::parse_name("mm_c0_s1_wg8x8");
  p.alpha = 2;
  CHECK_THROWS_WITH(syn::validate(p), Catch::Contains("αmat parameters"));
  p = syn::parse_name("mm_c0_s1_wg8x8");
  p.dtype = syn::DType::f64;
  CHECK_THROWS_WITH(syn::validate(p), Catch::Contains("float only"));
  CHECK_THROWS_WITH(syn::traffic_per_element(syn::parse_name("tri_c0_s1_wg64")), Catch::Contains("element-wise"));
}

TEST_CASE("span: sizes grow by rung, rung 1 is about 0.5 ms and the top stays within the sweep's limits") {
  std::map<std::string, std::vector<syn::Params>> ladders;  // family, γ, wg -> rungs 1..5
  for (const auto& p : syn::span_set()) ladders[syn::pattern(p) + "/" + std::to_string(p.wg)].push_back(p);
  REQUIRE(ladders.size() == 72);
  for (const auto& [key, rungs] : ladders) {
    INFO(key);
    REQUIRE(rungs.size() == 5);
    double last_work = 0, last_best = 0, last_test_work = 0;
    for (const auto& p : rungs) {
      const syn::Workload w = syn::generate(p);
      const double best = meta_number(w.spec, "est_best_ms");
      const double wk = work(syn::extents(p));
      const double test_wk = work(syn::extents(p, kTestScale));
      CHECK(wk > last_work);
      CHECK(best > last_best);
      CHECK(test_wk > last_test_work);  // still distinct at the tests' scale
      if (p.size == 1) CHECK((best > 0.4 && best < 0.6));
      CHECK(best <= 500);
      CHECK(meta_number(w.spec, "est_slowest_ms") <= 4100);
      double bytes = 0;
      for (const auto& a : w.spec.args) bytes += a.kind == dop::ArgKind::buffer ? double(a.bytes()) : 0;
      CHECK(bytes <= 2.0 * 1024 * 1024 * 1024);
      CHECK(bytes == meta_number(w.spec, "bytes"));
      last_work = wk;
      last_best = best;
      last_test_work = test_wk;
    }
  }
  // The scale multiplies the work: products grow with n^3, the others with n^2 or n.
  const syn::Params mm = syn::parse_name("mm_c0_s3_wg16x16");
  const double ratio = work(syn::extents(mm, 8.0)) / work(syn::extents(mm));
  CHECK((ratio > 7 && ratio < 9));
  CHECK_THROWS_WITH(syn::extents(syn::parse_name("mvc_c0_s5_wg64"), 100.0), Catch::Contains("32-bit indices"));
  CHECK_THROWS_WITH(syn::extents(mm, 0.0), Catch::Contains("positive"));
}

TEST_CASE("span: specs describe the workload: arguments, launch, intensity, orientation") {
  const syn::Workload mvc = syn::generate(syn::parse_name("mvc_c16_s2_wg64"), kTestScale);
  const auto n = syn::extents(syn::parse_name("mvc_c16_s2_wg64"), kTestScale);
  REQUIRE(n.size() == 2);
  const dop::Spec& s = mvc.spec;
  CHECK(s.kernel_name == "span_mvc_c16");
  CHECK(s.kernel_file == "span_mvc_c16.cl");
  CHECK(s.reference == "synthetic:mvc_c16_s2_wg64");
  CHECK(s.global == std::vector<size_t>{(n[1] + 63) / 64 * 64});  // a work-item per column
  CHECK(s.local == std::vector<size_t>{64});
  std::vector<std::string> arg_names;
  for (const auto& a : s.args) arg_names.push_back(a.name);
  CHECK(arg_names == std::vector<std::string>{"A", "x", "y", "M", "N", "c1", "c2"});
  CHECK(s.meta.at("set") == "span");
  CHECK(s.meta.at("span_family") == "mvc");
  CHECK(s.meta.at("orientation") == "gpu");
  CHECK(s.meta.at("reuse") == "vector");
  // 2 * (1 + γ) flops per term over 4 bytes of A: (1 + 16) / 2 operations per byte (x and y add a little).
  CHECK(meta_number(syn::generate(syn::parse_name("mvc_c16_s2_wg64")).spec, "intensity") == Approx(8.5).epsilon(0.01));
  const syn::Workload mm = syn::generate(syn::parse_name("mm_c0_s1_wg16x16"), kTestScale);
  CHECK(mm.spec.local == std::vector<size_t>{16, 16});
  CHECK(mm.spec.meta.at("orientation") == "gpu");
  CHECK(syn::generate(syn::parse_name("mmt_c0_s1_wg8x8")).spec.meta.at("orientation") == "cpu");
  // gv: K column indices per row, uniform over x's rows; x is read at random.
  const syn::Workload gv = syn::generate(syn::parse_name("gv_c0_s3_wg64"), kTestScale);
  const auto gn = syn::extents(syn::parse_name("gv_c0_s3_wg64"), kTestScale);
  REQUIRE(gn.size() == 2);
  CHECK(gn[1] == 16);
  arg_names.clear();
  for (const auto& a : gv.spec.args) arg_names.push_back(a.name);
  CHECK(arg_names == std::vector<std::string>{"A", "C", "x", "y", "N", "K"});
  CHECK(gv.spec.args[1].type == dop::ElemType::i32);
  CHECK(gv.spec.args[1].count == gn[0] * gn[1]);
  CHECK(gv.spec.args[1].init.fill == dop::Init::Fill::random_index);
  CHECK(gv.spec.args[1].init.bound == gn[0]);
  CHECK(gv.spec.global == std::vector<size_t>{(gn[0] + 63) / 64 * 64});  // a work-item per row
  CHECK(gv.spec.meta.at("reuse") == "random");
  CHECK(gv.spec.meta.at("orientation") == "cpu");
  // The span set's intensities run from the triad's 0.17 to thousands (products with long chains).
  double lo = 1e9, hi = 0;
  for (const auto& p : syn::span_set()) {
    if (p.size != 3 || p.wg != 64) continue;
    const double i = meta_number(syn::generate(p).spec, "intensity");
    lo = std::min(lo, i);
    hi = std::max(hi, i);
  }
  CHECK(lo < 0.2);
  CHECK(hi > 100);
  // Every spec survives the JSON round trip.
  const dop::Spec back = dop::parse_spec(dop::spec_to_json(mm.spec), "mm.json");
  CHECK(back.name == mm.spec.name);
  CHECK(back.meta == mm.spec.meta);
}

TEST_CASE("span: the reference computes the family's formula and refuses specs that do not fit") {
  syn::register_references();
  // A 16 x 16 stencil of radius 1 and a product, checked element by element against a direct evaluation.
  syn::Params p = syn::parse_name("st1_c4_s1_wg8x8");
  const syn::Workload st = syn::generate(p, kTestScale);
  const auto out = dop::run_reference(st.spec);
  const auto in = dop::make_args(st.spec);
  const size_t m = size_t(st.spec.args[2].value), n = size_t(st.spec.args[3].value);
  const float* I = in[0].as<float>();
  const float* O = out[1].as<float>();
  auto f = [](float t) {
    for (int r = 0; r < 4; ++r) t = t * 0.984375f + 0.015625f;
    return t;
  };
  for (size_t i : {size_t(0), size_t(1), m / 2, m - 2, m - 1})
    for (size_t j : {size_t(0), size_t(1), n / 3, n - 2, n - 1}) {
      INFO(i << "," << j);
      if (i == 0 || j == 0 || i == m - 1 || j == n - 1) {
        CHECK(O[i * n + j] == 0.0f);  // the border is not written
        continue;
      }
      const double want = double(f(0.5f * I[i * n + j])) + f(0.25f * I[(i - 1) * n + j]) +
                          f(0.25f * I[(i + 1) * n + j]) + f(0.25f * I[i * n + j - 1]) + f(0.25f * I[i * n + j + 1]);
      CHECK(O[i * n + j] == Approx(want).epsilon(1e-6));
    }
  const syn::Workload mmt = syn::generate(syn::parse_name("mmt_c0_s1_wg8x8"), kTestScale);
  const auto mo = dop::run_reference(mmt.spec);
  const auto mi = dop::make_args(mmt.spec);
  const size_t k = size_t(mmt.spec.args[5].value), nn = size_t(mmt.spec.args[4].value);
  double want = 0;
  for (size_t kk = 0; kk < k; ++kk) want += double(mi[0].as<float>()[2 * k + kk]) * mi[1].as<float>()[3 * k + kk];
  CHECK(mo[2].as<float>()[2 * nn + 3] == Approx(want).epsilon(1e-5));  // C[2][3] = row 2 of A . row 3 of B
  // gv: row 5 of the sparse product, directly.
  const syn::Workload gv = syn::generate(syn::parse_name("gv_c0_s1_wg64"), kTestScale);
  const auto go = dop::run_reference(gv.spec);
  const auto gi = dop::make_args(gv.spec);
  const size_t gk = size_t(gv.spec.args[5].value), gn = size_t(gv.spec.args[4].value);
  double gwant = 0;
  std::set<int32_t> columns;
  for (size_t kk = 0; kk < gk; ++kk) {
    const int32_t c = gi[1].as<int32_t>()[5 * gk + kk];
    REQUIRE((c >= 0 && size_t(c) < gn));
    columns.insert(c);
    gwant += double(gi[0].as<float>()[5 * gk + kk]) * gi[2].as<float>()[c];
  }
  CHECK(columns.size() > 1);  // at random, not one column
  CHECK(go[3].as<float>()[5] == Approx(gwant).epsilon(1e-5));
  dop::Spec bad_index = gv.spec;  // a column outside x is refused, not read
  bad_index.args[1].init.bound = gn + 1000000;
  CHECK_THROWS_WITH(dop::run_reference(bad_index), Catch::Contains("is not a row of x"));
  // A spec whose arguments do not fit the name.
  dop::Spec broken = mmt.spec;
  broken.args[1].count = 5;
  CHECK_THROWS_WITH(dop::run_reference(broken), Catch::Contains("buffer 'B' holds fewer than"));
  broken = mmt.spec;
  broken.args.pop_back();
  CHECK_THROWS_WITH(dop::run_reference(broken), Catch::Contains("no argument named 'K'"));
}

TEST_CASE("dop synth list/emit --set span") {
  const auto list = run_command(dop_binary() + " synth list --set span");
  REQUIRE(list.rc == 0);
  CHECK(std::count(list.out.begin(), list.out.end(), '\n') == 360);
  CHECK_THAT(list.out, Catch::StartsWith("tri_c0_s1_wg64\ntri_c0_s1_wg256\n"));
  const std::string dir = std::string(DOP_BINARY_DIR) + "/span_emit_test";
  const auto emit = run_command(dop_binary() + " synth emit --all --set span --scale 0.001 --out " + dir);
  INFO(emit.out);
  REQUIRE(emit.rc == 0);
  CHECK_THAT(emit.out, Catch::Contains("wrote 360 workload specs and 36 kernels"));
  const dop::Spec s = dop::load_spec(dir + "/st4_c64_s2_wg16x16.json");
  CHECK(dop::read_kernel_source(s) == syn::kernel_source(syn::parse_name("st4_c64_s2_wg16x16")));
  const auto one = run_command(dop_binary() + " synth emit mm_c8_s3_wg256 --out " + dir);
  CHECK(one.rc != 0);
  CHECK_THAT(one.out, Catch::Contains("did you mean 'mm_c8_s3_wg16x16'"));
}

TEST_CASE("dop sweep --set span: a sample of every family validates at every configuration of the grid") {
  // 45 workloads spread over the set sorted by name: five of each family, together every γ and every rung, each at
  // all 44 configurations, validated against its reference (a wrong output makes its row invalid). The other
  // work-group size is validated on one device in test_synthetic_run.cpp.
  const std::string out = std::string(DOP_BINARY_DIR) + "/span_sweep_test.csv";
  std::remove(out.c_str());
  const auto r = run_command(dop_binary() + " sweep --set span --scale 0.001 --sample 45 --repeat 1 --warmup 0 " +
                             "--platform-id test --out " + out);
  INFO(r.out);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("1980 rows written, 0 already present, 0 invalid"));
  std::ifstream f(out);
  std::string line;
  std::getline(f, line);
  const auto header = dop::csv_split(line);
  const auto col = [&](const char* n) { return size_t(std::find(header.begin(), header.end(), n) - header.begin()); };
  const size_t iw = col("workload"), is = col("set"), iv = col("valid");
  std::set<std::string> families, gammas, rungs;
  size_t rows = 0;
  while (std::getline(f, line)) {
    const auto v = dop::csv_split(line);
    REQUIRE(v.size() == header.size());
    CHECK(v[is] == "span");
    CHECK(v[iv] == "1");
    const syn::Params p = syn::parse_name(v[iw]);
    families.insert(family_key(p));
    gammas.insert(std::to_string(p.gamma));
    rungs.insert(std::to_string(p.size));
    ++rows;
  }
  CHECK(rows == 1980);
  CHECK(families == std::set<std::string>{"tri", "mm", "mmt", "mvr", "mvc", "st1", "st2", "st4", "gv"});
  CHECK(gammas == std::set<std::string>{"0", "4", "16", "64"});
  CHECK(rungs == std::set<std::string>{"1", "2", "3", "4", "5"});
}

TEST_CASE("dop sweep --name-suffix keeps rows at another scale apart, and resumes them by their names") {
  // The same two workloads at two scales into one dataset: the second sweep's rows carry the suffix and do not resume
  // (or collide with) the first's; run again, it finds its own rows present.
  const std::string out = std::string(DOP_BINARY_DIR) + "/span_suffix_test.csv";
  std::remove(out.c_str());
  const std::string base = dop_binary() + " sweep --set span --match '^gv_c0_s1_' --configs 3 --repeat 1 --warmup 0 " +
                           "--platform-id test --out " + out;
  const auto usual = run_command(base + " --scale 0.001");
  INFO(usual.out);
  REQUIRE(usual.rc == 0);
  CHECK_THAT(usual.out, Catch::Contains("6 rows written, 0 already present, 0 invalid"));
  const auto tiny = run_command(base + " --scale 0.0005 --name-suffix _x0.0005");
  INFO(tiny.out);
  REQUIRE(tiny.rc == 0);
  CHECK_THAT(tiny.out, Catch::Contains("6 rows written, 0 already present, 0 invalid"));
  const auto again = run_command(base + " --scale 0.0005 --name-suffix _x0.0005");
  CHECK_THAT(again.out, Catch::Contains("0 rows written, 6 already present"));
  std::ifstream f(out);
  std::string line;
  std::getline(f, line);
  const auto header = dop::csv_split(line);
  const size_t iw = size_t(std::find(header.begin(), header.end(), "workload") - header.begin());
  std::multiset<std::string> names;
  while (std::getline(f, line)) names.insert(dop::csv_split(line)[iw]);
  CHECK(names.count("gv_c0_s1_wg64") == 3);
  CHECK(names.count("gv_c0_s1_wg64_x0.0005") == 3);
  CHECK(names.count("gv_c0_s1_wg256_x0.0005") == 3);
  // A suffix that would break the dataset's CSV is refused before anything runs.
  const auto bad = run_command(base + " --name-suffix 'a,b'");
  CHECK(bad.rc != 0);
  CHECK_THAT(bad.out, Catch::Contains("--name-suffix 'a,b': letters, digits"));
}
