// The predictor (runtime tier): model files and their errors, feature derivation, the fast all-configuration
// evaluation against one walk per configuration, memoisation under threads, the C API, generated headers.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <random>
#include <thread>

#include "dop/expr.hpp"
#include "dop/predictor.h"
#include "dop/predictor.hpp"
#include "support.hpp"

using namespace dop::pred;

extern "C" int dop_test_c_api(const char* model_path, char* message, size_t size);

namespace {

std::string tmp(const std::string& f) { return std::string(DOP_BINARY_DIR) + "/predictor_test_" + f; }

void write(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

// Code features a (with expression a_expr) and b, then launch, derived and configuration features.
Model base_model() {
  Model m;
  m.type = "gbt";
  m.objective = "reg:squarederror";
  m.output = "normalised_performance";
  m.platform.id = "test-platform";
  m.platform.cpu_units = 8;
  m.platform.gpu_units = 4;
  m.cpu_levels = {0, 0.25, 0.5, 0.75, 1};
  m.gpu_levels = {0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1};
  Feature a;
  a.name = a.key = "a";
  a.expr_key = "a_expr";
  Feature b;
  b.name = b.key = "b";
  m.features = {a, b};
  for (const char* n :
       {"global_size", "num_groups", "local_x", "gpu_waves", "cpu_cores", "groups_per_cpu_core", "cpu_waves",
        "gpu_items_per_unit", "data_on_gpu", "in_bytes", "gpu_recv_bytes", "data_pinned", "cpu_util", "gpu_util"})
    m.features.push_back(builtin_feature(n));
  return m;
}

int index_of(const Model& m, const std::string& name) {
  for (size_t i = 0; i < m.features.size(); ++i)
    if (m.features[i].name == name) return int(i);
  throw std::runtime_error("no feature " + name);
}

// cpu_util < 0.6 ? 0.2 : (gpu_util < 0.3 ? (a < 5 ? 0.9 : 0.7) : 0.5), base 0.1; a missing goes right.
Model hand_model() {
  Model m = base_model();
  Tree t;
  const int cu = index_of(m, "cpu_util"), gu = index_of(m, "gpu_util"), a = index_of(m, "a");
  t.feature = {cu, -1, gu, a, -1, -1, -1};
  t.threshold = {0.6f, 0, 0.3f, 5, 0, 0, 0};
  t.left = {1, -1, 3, 5, -1, -1, -1};
  t.right = {2, -1, 4, 6, -1, -1, -1};
  t.default_left = {0, 0, 0, 0, 0, 0, 0};
  t.value = {0, 0.2f, 0, 0, 0.5f, 0.9f, 0.7f};
  m.trees = {t};
  m.base_score = 0.1f;
  return m;
}

// A random tree whose thresholds are feature values of random launches and configurations (so that splits split).
void random_subtree(Tree& t, const Model& m, std::mt19937_64& rng, int depth, int max_depth) {
  const size_t me = t.left.size();
  t.left.push_back(-1);
  t.right.push_back(-1);
  t.feature.push_back(-1);
  t.threshold.push_back(0);
  t.default_left.push_back(0);
  t.value.push_back(0);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  if (depth >= max_depth || (depth > 1 && rng() % 5 == 0)) {
    t.value[me] = u(rng);
    return;
  }
  const int f = int(rng() % m.features.size());
  LaunchShape l;
  l.work_dim = 2;
  l.global = {uint64_t(1) << (rng() % 12), uint64_t(1) << (rng() % 10), 1};
  l.local = {uint64_t(1) << (rng() % 5), 1, 1};
  l.in_bytes = (rng() % 3) * 1000;
  l.data_on_gpu = rng() % 2;
  l.data_pinned = rng() % 2;
  const auto cfgs = m.configs();
  std::vector<double> code = {double(rng() % 10), double(rng() % 100)};
  std::vector<float> x(m.features.size());
  feature_vector(m.features, m.platform, code.data(), l, cfgs[rng() % cfgs.size()], x.data());
  t.feature[me] = f;
  t.threshold[me] = x[size_t(f)] + (rng() % 2 ? 0.0f : 0.5f);
  t.default_left[me] = uint8_t(rng() % 2);
  t.left[me] = int32_t(t.left.size());
  random_subtree(t, m, rng, depth + 1, max_depth);
  t.right[me] = int32_t(t.left.size());
  random_subtree(t, m, rng, depth + 1, max_depth);
}

// base_model() with the estimate features, whose code features the estimate reads (bytes and operations).
Model estimate_base_model() {
  Model m = base_model();
  m.features[0].key = "global_bytes_per_item";
  m.features[1].key = "arith_float";
  m.features.push_back(builtin_feature("est_ms"));
  m.features.push_back(builtin_feature("est_rel"));
  m.features.push_back(builtin_feature("est_best_ms"));
  m.platform.figures = PlatformFigures::from_record("{}", "defaults");
  return m;
}

Model random_model(uint64_t seed, int trees, int depth, std::vector<double> cpu_levels = {},
                   std::vector<double> gpu_levels = {}, Model m = base_model()) {
  if (!cpu_levels.empty()) m.cpu_levels = cpu_levels;
  if (!gpu_levels.empty()) m.gpu_levels = gpu_levels;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < trees; ++i) {
    Tree t;
    random_subtree(t, m, rng, 0, depth);
    m.trees.push_back(t);
  }
  m.base_score = 0.25f;
  return m;
}

}  // namespace

TEST_CASE("launch shapes parse with named errors", "[predictor]") {
  const auto s = LaunchShape::parse("1000,30", "16,16");
  CHECK(s.work_dim == 2);
  CHECK(s.global_size() == 30000);
  CHECK(s.local_size() == 256);
  CHECK(s.num_groups() == 63 * 2);  // ceil(1000/16) * ceil(30/16)
  CHECK(s.str() == "1000x30/16x16");
  CHECK_THROWS_WITH(LaunchShape::parse("1024,0", "16,1"), Catch::Contains("'0' is not a size"));
  CHECK_THROWS_WITH(LaunchShape::parse("1024", "16,16"), Catch::Contains("different numbers of dimensions"));
  CHECK_THROWS_WITH(LaunchShape::parse("1,2,3,4", "1,1,1,1"), Catch::Contains("must be X, X,Y or X,Y,Z"));
  CHECK_THROWS_WITH(LaunchShape::parse("x", "1"), Catch::Contains("'x' is not a size"));
}

TEST_CASE("integer expressions of code features", "[predictor]") {
  CHECK(dop::expr::evaluate("global_size_0 * 4", launch_symbols(LaunchShape::parse("100", "10"))) == 400);

  const Model m = base_model();
  const auto l = LaunchShape::parse("64", "8");
  CodeFeatures c;
  c.values["b"] = 2;
  c.exprs["a_expr"] = "N * 4 + global_size_0";
  CHECK(code_vector(m.features, c, l, {{"N", 3}}) == std::vector<double>{12 + 64, 2});
  const auto missing = code_vector(m.features, c, l);  // N unknown: a is missing, not an error
  CHECK(std::isnan(missing[0]));
  c.exprs.clear();
  CHECK_THROWS_WITH(code_vector(m.features, c, l), Catch::Contains("code feature 'a' is required"));
  c.values["a"] = std::nan("");  // given as missing: allowed
  CHECK(std::isnan(code_vector(m.features, c, l)[0]));
}

TEST_CASE("derived features follow their definitions", "[predictor]") {
  const Model m = base_model();
  const auto l = LaunchShape::parse("1000,30", "16,16");  // 126 groups
  const double code[] = {1, 2};
  std::vector<float> x(m.features.size());
  feature_vector(m.features, m.platform, code, l, {0.25, 0.5}, x.data());
  CHECK(x[size_t(index_of(m, "num_groups"))] == 126.0f);
  CHECK(x[size_t(index_of(m, "gpu_waves"))] == 32.0f);  // ceil(126 / 4 units)
  CHECK(x[size_t(index_of(m, "cpu_cores"))] == 2.0f);   // round(0.25 * 8)
  CHECK(x[size_t(index_of(m, "groups_per_cpu_core"))] == 63.0f);
  CHECK(x[size_t(index_of(m, "cpu_waves"))] == 63.0f);
  CHECK(x[size_t(index_of(m, "gpu_items_per_unit"))] == float(30000 * 0.5 / 4));
  feature_vector(m.features, m.platform, code, l, {0, 1}, x.data());
  CHECK(x[size_t(index_of(m, "cpu_cores"))] == 0.0f);
  CHECK(x[size_t(index_of(m, "cpu_waves"))] == 0.0f);
  feature_vector(m.features, m.platform, code, l, {0.01, 1}, x.data());
  CHECK(x[size_t(index_of(m, "cpu_cores"))] == 1.0f);  // any CPU share uses at least one core
}

TEST_CASE("the data features follow their definitions and move the decision with the data", "[predictor]") {
  Model m = base_model();
  auto l = LaunchShape::parse("1024", "64");
  l.in_bytes = 4096;
  l.out_bytes = 1024;
  const double code[] = {1, 2};
  std::vector<float> x(m.features.size());
  feature_vector(m.features, m.platform, code, l, {0.25, 0.5}, x.data());
  CHECK(x[size_t(index_of(m, "data_on_gpu"))] == 0.0f);
  CHECK(x[size_t(index_of(m, "in_bytes"))] == 4096.0f);
  CHECK(x[size_t(index_of(m, "gpu_recv_bytes"))] == 4096.0f);  // host data, the GPU runs a share: it receives
  feature_vector(m.features, m.platform, code, l, {1, 0}, x.data());
  CHECK(x[size_t(index_of(m, "gpu_recv_bytes"))] == 0.0f);  // the GPU runs nothing
  l.data_on_gpu = true;
  feature_vector(m.features, m.platform, code, l, {0.25, 0.5}, x.data());
  CHECK(x[size_t(index_of(m, "data_on_gpu"))] == 1.0f);
  CHECK(x[size_t(index_of(m, "gpu_recv_bytes"))] == 0.0f);  // it holds them already
  CHECK(x[size_t(index_of(m, "data_pinned"))] == 0.0f);
  l.data_pinned = true;  // on the GPU wins: where the inputs' valid copy is
  feature_vector(m.features, m.platform, code, l, {0.25, 0.5}, x.data());
  CHECK(x[size_t(index_of(m, "data_pinned"))] == 0.0f);
  l.data_on_gpu = false;  // host data in page-locked memory: still received, in place
  feature_vector(m.features, m.platform, code, l, {0.25, 0.5}, x.data());
  CHECK(x[size_t(index_of(m, "data_pinned"))] == 1.0f);
  CHECK(x[size_t(index_of(m, "data_on_gpu"))] == 0.0f);
  CHECK(x[size_t(index_of(m, "gpu_recv_bytes"))] == 4096.0f);
  l.data_pinned = false;

  // gpu_recv_bytes < 1000 ? (gpu_util < 0.9 ? 0.3 : 0.9) : 0.1: the GPU wins only when it receives nothing.
  Tree t;
  const int recv = index_of(m, "gpu_recv_bytes"), gu = index_of(m, "gpu_util");
  t.feature = {recv, gu, -1, -1, -1};
  t.threshold = {1000, 0.9f, 0, 0, 0};
  t.left = {1, 3, -1, -1, -1};
  t.right = {2, 4, -1, -1, -1};
  t.default_left = {0, 0, 0, 0, 0};
  t.value = {0, 0, 0.1f, 0.3f, 0.9f};
  m.trees = {t};
  const Predictor p(m);
  const CodeFeatures c{{{"a", 1}, {"b", 0}}, {}};
  l.data_on_gpu = false;
  const Decision host = p.decide("k", c, l);
  CHECK_FALSE(host.cached);
  CHECK(host.config.gpu == 0);  // the first CPU-only configuration
  l.data_on_gpu = true;
  const Decision gpu = p.decide("k", c, l);  // the memo keys the data location: not the host decision
  CHECK_FALSE(gpu.cached);
  CHECK(gpu.config.cpu == 0);
  CHECK(gpu.config.gpu == 1);
  CHECK(p.decide("k", c, l).cached);
  l.in_bytes = 100;  // and the bytes
  l.data_on_gpu = false;
  CHECK_FALSE(p.decide("k", c, l).cached);
  CHECK(p.decide("k", c, l).config.gpu == 1);  // 100 bytes to receive are below the split
  l.data_pinned = true;                        // and page-locked host data apart from pageable
  CHECK_FALSE(p.decide("k", c, l).cached);
  CHECK(p.decide("k", c, l).cached);
}

TEST_CASE("a hand-made tree decides as computed by hand", "[predictor]") {
  const Predictor p(hand_model());
  REQUIRE(p.num_configs() == 44);
  const auto l = LaunchShape::parse("1024", "64");
  CodeFeatures c{{{"a", 1}, {"b", 0}}, {}};
  auto d = p.decide(c, l);
  CHECK(d.config.cpu == 0.75);
  CHECK(d.config.gpu == 0);
  CHECK(d.index == 26);  // 8 GPU-only, 9 at 0.25, 9 at 0.5, then (0.75, 0)
  CHECK(d.predicted == double(0.1f + 0.9f));
  const auto s = p.scores(c, l);
  CHECK(s[0] == double(0.1f + 0.2f));       // (0, 0.125)
  CHECK(s[27 + 2] == double(0.1f + 0.5f));  // (0.75, 0.375)
  c.values["a"] = std::nan("");             // missing: default_left = 0 goes right
  CHECK(p.decide(c, l).predicted == double(0.1f + 0.7f));
  c.values["a"] = 5;  // 5 < 5 is false
  CHECK(p.decide(c, l).predicted == double(0.1f + 0.7f));
  c.values["a"] = 4.999f;
  CHECK(p.decide(c, l).predicted == double(0.1f + 0.9f));
}

// The predictor picks an evaluation by model and grid: bit vectors for trees of at most 64 leaves (with
// checkpoints for features of more than 128 nodes), a walk of all configurations together for larger trees and
// grids of at most 64 configurations, multi-word bit vectors for larger trees on larger grids. Each must give
// exactly the outputs of one walk per configuration.
void check_against_reference(const Model& m, uint64_t seed) {
  const Predictor p(m);
  std::mt19937_64 rng(seed);
  const size_t C = m.configs().size();
  std::vector<double> fast(C), ref(C);
  for (int k = 0; k < 40; ++k) {
    LaunchShape l;
    l.work_dim = 2;
    l.global = {uint64_t(1) << (rng() % 12), uint64_t(1) << (rng() % 10), 1};
    l.local = {uint64_t(1) << (rng() % 5), 1, 1};
    l.in_bytes = (rng() % 3) * 1000;
    l.data_on_gpu = rng() % 2;
    l.data_pinned = rng() % 2;
    double code[2] = {double(rng() % 10), double(rng() % 100)};
    if (rng() % 4 == 0) code[rng() % 2] = std::nan("");
    p.scores(code, l, fast.data());
    p.scores_reference(code, l, ref.data());
    REQUIRE(fast == ref);
  }
}

TEST_CASE("every fast evaluation equals one walk per configuration", "[predictor]") {
  SECTION("bit vectors: trees of up to 64 leaves") {
    for (uint64_t seed = 1; seed <= 12; ++seed)
      check_against_reference(random_model(seed, 1 + int(seed % 20), 2 + int(seed % 5)), seed);
  }
  SECTION("bit vectors with checkpoints: 200 trees of depth 6") {
    check_against_reference(random_model(77, 200, 6), 77);
  }
  SECTION("walk: deeper trees") {
    for (uint64_t seed = 1; seed <= 12; ++seed)
      check_against_reference(random_model(seed, 1 + int(seed % 20), 7 + int(seed % 5)), seed);
  }
  SECTION("multi-word bit vectors: deeper trees on a grid of 80 configurations") {
    const std::vector<double> nine = {0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1};
    for (uint64_t seed = 1; seed <= 8; ++seed)
      check_against_reference(random_model(seed, 1 + int(seed % 20), 6 + int(seed % 6), nine, nine), seed);
  }
  SECTION("a grid without (0, 0)") {
    check_against_reference(random_model(5, 30, 5, {0.5, 1}, {0, 0.5, 1}), 5);
    check_against_reference(random_model(6, 30, 9, {0.5, 1}, {0, 0.5, 1}), 6);
  }
  SECTION("the estimate features (one value per configuration) on every backend") {
    const std::vector<double> nine = {0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1};
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      check_against_reference(random_model(seed, 1 + int(seed % 20), 2 + int(seed % 5), {}, {}, estimate_base_model()),
                              seed);
      check_against_reference(random_model(seed, 1 + int(seed % 20), 7 + int(seed % 5), {}, {}, estimate_base_model()),
                              seed);
      check_against_reference(random_model(seed, 1 + int(seed % 20), 6, nine, nine, estimate_base_model()), seed);
      check_against_reference(random_model(seed, 30, 5, {0.5, 1}, {0, 0.5, 1}, estimate_base_model()), seed);
      // The origin (0, 0) on a grid of other sizes: one-word and multi-word vectors with a row per grid position.
      check_against_reference(random_model(seed, 30, 5, {0, 1}, {0, 0.5, 1}, estimate_base_model()), seed);
      check_against_reference(random_model(seed, 4, 8, nine, nine, estimate_base_model()), seed);
    }
    check_against_reference(random_model(77, 200, 6, {}, {}, estimate_base_model()), 77);
  }
}

TEST_CASE("the mixing margin: both devices only where they beat every other configuration by more", "[predictor]") {
  const std::vector<Config> grid = {{0, 1}, {1, 0}, {1, 0.5}, {0.5, 0.5}};
  const double plain[] = {0.90, 0.92, 0.95, 0.60};
  CHECK(pick_config(grid, plain, 0) == 2);     // the highest output
  CHECK(pick_config(grid, plain, 0.05) == 1);  // (1, 0.5) beats (1, 0) by 0.03 only
  CHECK(pick_config(grid, plain, 0.02) == 2);  // ... which is more than 0.02
  const double far[] = {0.50, 0.60, 0.99, 0.98};
  CHECK(pick_config(grid, far, 0.05) == 2);  // far enough ahead: both devices
  const double ties[] = {0.9, 0.9, 0.95, 0.9};
  CHECK(pick_config(grid, ties, 0.05) == 0);  // the first of equal values in grid order
  const double nan_first[] = {std::nan(""), 0.5, -std::numeric_limits<double>::infinity(), 0.4};
  CHECK(pick_config(grid, nan_first, 0) == 1);  // NaN and -inf are never picked over a number
  const double none[] = {std::nan(""), std::nan(""), std::nan(""), std::nan("")};
  CHECK(pick_config(grid, none, 0) == 0);

  // The predictor decides with its model's margin, and the file carries it.
  Model m = hand_model();
  const auto l = LaunchShape::parse("1024", "64");
  const CodeFeatures c{{{"a", 1}, {"b", 0}}, {}};
  const auto scores = Predictor(m).scores(c, l);
  const auto configs = m.configs();
  for (double margin : {0.0, 0.05, 0.3, 0.9}) {
    m.mixed_margin = margin;
    const std::string path = tmp("margin.json");
    m.save(path);
    const Model back = Model::load(path);
    CHECK(back.mixed_margin == margin);
    CHECK((dop::test::read_file(path).find("\"mixed_margin\"") != std::string::npos) == (margin > 0));
    const auto d = Predictor(back).decide(c, l);
    CHECK(d.index == pick_config(configs, scores.data(), margin));
    CHECK(d.predicted == scores[d.index]);  // the model's own output, not less the margin
  }
  // The hand model's best, (0.75, 0) at 1.0, is a single device: every margin keeps it; one that moves the decision
  // is checked above.
  m.mixed_margin = 0.9;
  CHECK(Predictor(m).decide(c, l).config.gpu == 0);
}

TEST_CASE("model files round-trip exactly", "[predictor]") {
  const Model m = random_model(99, 20, 6);
  const std::string path = tmp("roundtrip.json");
  m.save(path);
  const Model back = Model::load(path);
  REQUIRE(back.trees.size() == m.trees.size());
  for (size_t t = 0; t < m.trees.size(); ++t) {
    CHECK(back.trees[t].threshold == m.trees[t].threshold);
    CHECK(back.trees[t].value == m.trees[t].value);
    CHECK(back.trees[t].left == m.trees[t].left);
    CHECK(back.trees[t].default_left == m.trees[t].default_left);
  }
  CHECK(back.base_score == m.base_score);
  CHECK(dop::test::read_file(path).rfind("{\n \"format\": \"dop-model/1\"", 0) == 0);
}

TEST_CASE("bad model files are refused with the file and the problem", "[predictor]") {
  const std::string good = hand_model().to_json();
  auto refuse = [&](const std::string& text, const std::string& expected) {
    const std::string path = tmp("bad.json");
    write(path, text);
    CHECK_THROWS_WITH(Model::load(path), Catch::Contains(path) && Catch::Contains(expected));
  };
  refuse("{\n \"format\": \"dop-model/1\",\n \"type\": }", "bad.json:3:10: invalid JSON");
  refuse("[1, 2]", "not a JSON object");
  refuse("{\"type\": \"dt\"}", "missing key 'format'");
  auto replace = [&](std::string s, const std::string& from, const std::string& to) {
    const auto p = s.find(from);
    REQUIRE(p != std::string::npos);
    return s.replace(p, from.size(), to);
  };
  refuse(replace(good, "dop-model/1", "dop-model/2"), "model format 'dop-model/2' is not supported");
  refuse(replace(good, "\"grid\"", "\"grit\""), "$: missing key 'grid'");
  refuse(replace(good, "\"left\": [1,", "\"left\": [9,"), "trees[0] node 0: child index out of range");
  refuse(replace(good, "\"left\": [1,", "\"left\": [0,"), "trees[0] node 0: child index out of range");
  refuse(replace(good, "\"feature\": [", "\"feature\": [77,"), "arrays of different lengths");
  refuse(replace(good, "\"name\": \"cpu_waves\"", "\"name\": \"cpu_wavez\""), "'cpu_wavez': not a feature");
  refuse(replace(good, "ceil(num_groups / gpu_units)", "num_groups"), "differs from this predictor's");
  refuse(replace(good, "\"type\": \"gbt\"", "\"type\": \"svm\""), "model type 'svm'");
  refuse(replace(good, "\"cpu_levels\": [", "\"cpu_levels\": [\"0\","), "$.grid.cpu_levels[0]: not a number");
  refuse(replace(good, "\"features\": [", "\"decision\": {\"mixed_margin\": 1.5}, \"features\": ["),
         "decision.mixed_margin 1.5");
  refuse(replace(good, "\"features\": [", "\"decision\": {\"mixed_margin\": \"x\"}, \"features\": ["),
         "$.decision.mixed_margin: not a number");
  refuse(replace(replace(good, "normalised_performance", "score"), "\"features\": [",
                 "\"decision\": {\"mixed_margin\": 0.05}, \"features\": ["),
         "decision.mixed_margin needs a model whose output is normalised_performance");
  CHECK_THROWS_WITH(Model::load(tmp("does-not-exist.json")), Catch::Contains("cannot be read"));
}

TEST_CASE("models of another platform or schema are refused", "[predictor]") {
  const std::string path = tmp("platform.json");
  hand_model().save(path);
  PredictorOptions o;
  o.platform_id = "other-platform";
  CHECK_THROWS_WITH(Predictor::load(path, o),
                    Catch::Contains("trained for platform 'test-platform', not for 'other-platform'"));
  o.platform_id = "test-platform";
  const Predictor p = Predictor::load(path, o);
  CodeFeatures only_b{{{"b", 1}}, {}};
  CHECK_THROWS_WITH(p.decide(only_b, LaunchShape::parse("64", "8")), Catch::Contains("code feature 'a' is required"));
}

TEST_CASE("decisions are memoised per kernel and launch, safely across threads", "[predictor]") {
  PredictorOptions o;
  o.cache_capacity = 64;
  const Model m = random_model(5, 30, 6);
  const Predictor p(m, o);
  const CodeFeatures c{{{"a", 3}, {"b", 40}}, {}};
  const auto l = LaunchShape::parse("4096,16", "64,1");
  const Decision first = p.decide("k.cl:k", c, l);
  CHECK_FALSE(first.cached);
  const Decision again = p.decide("k.cl:k", c, l);
  CHECK(again.cached);
  CHECK(again.index == first.index);
  CHECK(again.predicted == first.predicted);
  CHECK_FALSE(p.decide("k.cl:k", c, LaunchShape::parse("4096,16", "32,1")).cached);
  CHECK_FALSE(p.decide("k.cl:k", c, l, {{"N", 3}}).cached);  // other argument values: another decision
  CHECK_FALSE(p.decide("other.cl:k", c, l).cached);
  REQUIRE(p.cached("k.cl:k", l).has_value());
  CHECK(p.cached("k.cl:k", l)->index == first.index);
  CHECK_FALSE(p.cached("k.cl:k", LaunchShape::parse("8192,16", "64,1")).has_value());
  p.clear_cache();
  CHECK_FALSE(p.cached("k.cl:k", l).has_value());
  CHECK(p.cache_size() == 0);

  // Many threads, a few hundred distinct launches (more than the capacity): every decision equals the uncached one.
  std::vector<LaunchShape> shapes;
  std::vector<Decision> expected;
  for (unsigned i = 0; i < 300; ++i) {
    LaunchShape s;
    s.work_dim = 1;
    s.global = {64ull * (i + 1), 1, 1};
    s.local = {uint64_t(1) << (i % 7), 1, 1};
    shapes.push_back(s);
    expected.push_back(p.decide(c, s));
  }
  std::atomic<int> wrong{0}, hits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng{static_cast<unsigned>(t)};
      for (int i = 0; i < 3000; ++i) {
        const size_t k = rng() % (i < 1500 ? 20 : shapes.size());
        const Decision d = p.decide("k.cl:k", c, shapes[k]);
        if (d.index != expected[k].index || d.predicted != expected[k].predicted) ++wrong;
        if (d.cached) ++hits;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(wrong == 0);
  CHECK(hits > 0);
  CHECK(p.cache_size() <= 64);
}

TEST_CASE("the C API loads, predicts, memoises and reports errors", "[predictor]") {
  const std::string path = tmp("c_api.json");
  hand_model().save(path);
  char message[512] = {0};
  const int rc = dop_test_c_api(path.c_str(), message, sizeof message);
  INFO(message);
  CHECK(rc == 0);

  CHECK(dop_predictor_load(tmp("missing.json").c_str(), nullptr) == nullptr);
  CHECK_THAT(dop_predictor_last_error(), Catch::Contains("cannot be read"));
  CHECK(dop_predictor_load(path.c_str(), "another") == nullptr);
  CHECK_THAT(dop_predictor_last_error(), Catch::Contains("not for 'another'"));
}
