// The trainer (analysis tier): the dataset loader and its errors, predictions equal to XGBoost's, the ridge
// baseline, cross-validation grouped by workload (no leakage), leave-one-kernel-out, the baselines' metrics.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <set>
#include <sstream>

#include "dop/predictor.hpp"
#include "dop/trainer.hpp"
#include "support.hpp"

using namespace dop;

namespace {

std::string pocl_dataset() { return std::string(DOP_SOURCE_DIR) + "/tests/data/models/pocl_real_small.csv"; }
std::string tmp(const std::string& f) { return std::string(DOP_BINARY_DIR) + "/trainer_test_" + f; }

const char* kLaunchAndTail =
    "work_dim,global_size,local_size,num_groups,global_x,global_y,global_z,local_x,local_y,local_z,cpu_util,gpu_util,"
    "cpu_cores,gpu_alloc,gpu_throttled,time_ms_median,time_ms_min,time_ms_max,repeats,cpu_work_groups,"
    "gpu_work_groups,cpu_chunks,gpu_chunks,h2d_ms,d2h_ms,merge_ms,valid,error";

struct SynthRow {
  std::string platform = "synth", workload, set = "paper", kernel;
  std::vector<std::string> features;  // mem_continuous, global_bytes_per_item, global_bytes_per_item_expr
  uint64_t gx = 1024, lx = 64;
  double cpu = 0, gpu = 0, time = 1;
  int valid = 1;
};

std::string header_line() {
  return std::string(
             "platform_id,workload,set,kernel,mem_continuous,global_bytes_per_item,"
             "global_bytes_per_item_expr,") +
         kLaunchAndTail + "\n";
}

std::string row_line(const SynthRow& r) {
  std::ostringstream o;
  o.precision(17);
  const uint64_t groups = (r.gx + r.lx - 1) / r.lx;
  o << r.platform << "," << r.workload << "," << r.set << "," << r.kernel;
  for (const auto& f : r.features) o << "," << f;
  o << ",1," << r.gx << "," << r.lx << "," << groups << "," << r.gx << ",1,1," << r.lx << ",1,1," << r.cpu << ","
    << r.gpu << "," << std::lround(r.cpu * 8) << "," << std::lround(r.gpu * 8) << ",1," << r.time << "," << r.time
    << "," << r.time << ",1,0,0,0,0,0,0,0," << r.valid << "," << (r.valid ? "" : "wrong output") << "\n";
  return o.str();
}

// n workloads on the 5 x 9 grid: unique global sizes, random times (a random best), code features per kernel (some
// missing, given by an expression of the launch instead).
std::string synthetic_dataset(const std::string& name, size_t n, uint64_t seed, double structure = 0,
                              const std::string& expr = "global_size_0 / 256") {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(1.0, 2.0);
  std::string text = header_line();
  const double cpu[] = {0, 0.25, 0.5, 0.75, 1};
  for (size_t w = 0; w < n; ++w) {
    SynthRow r;
    r.workload = "w" + std::to_string(w);
    r.kernel = "k" + std::to_string(w % 7);
    r.set = w % 3 == 0 ? "real" : "paper";
    r.gx = 1024 * (w + 1);
    r.lx = w % 2 ? 64 : 256;
    const bool missing = w % 5 == 0;
    r.features = {std::to_string(w % 7), missing ? "" : std::to_string(4 * (w % 4 + 1)), expr};
    for (double c : cpu)
      for (int g = 0; g <= 8; ++g) {
        if (c == 0 && g == 0) continue;
        r.cpu = c;
        r.gpu = g / 8.0;
        // `structure` > 0: kernels k0..k3 like the CPU, the others the GPU (learnable); 0: pure noise.
        const double pref = (w % 7 < 4) ? c - r.gpu : r.gpu - c;
        r.time = u(rng) * (1 - structure * 0.4 * pref);
        text += row_line(r);
      }
  }
  const std::string path = tmp(name);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

std::string write_text(const std::string& name, const std::string& text) {
  const std::string path = tmp(name);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

// The rows of one workload over the 5 x 9 grid, time(cpu level 0..4, gpu level 0..8) each.
std::string grid_rows(SynthRow r, const std::function<double(int, int)>& time) {
  std::string t;
  for (int c = 0; c <= 4; ++c)
    for (int g = 0; g <= 8; ++g) {
      if (!c && !g) continue;
      r.cpu = c / 4.0;
      r.gpu = g / 8.0;
      r.time = time(c, g);
      t += row_line(r);
    }
  return t;
}

std::string good_rows(size_t workloads) {
  std::string t = header_line();
  for (size_t w = 0; w < workloads; ++w) {
    SynthRow r;
    r.workload = "w" + std::to_string(w);
    r.kernel = "k";
    r.features = {"1", "4", ""};
    t += grid_rows(r, [](int c, int g) { return 1 + c + g; });
  }
  return t;
}

// The PoCL dataset without its code features (the columns between kernel and the launch block), as a sweep
// without --features writes it.
std::string pocl_dataset_without_features() {
  std::istringstream in(dop::test::read_file(pocl_dataset()));
  std::string line, out;
  size_t first = 0, last = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::string cur;
    for (char ch : line) {
      if (ch == ',') {
        f.push_back(cur);
        cur.clear();
      } else {
        cur += ch;
      }
    }
    f.push_back(cur);
    if (out.empty()) {
      first = size_t(std::find(f.begin(), f.end(), "kernel") - f.begin()) + 1;
      last = size_t(std::find(f.begin(), f.end(), "global_size") - f.begin()) - 1;  // the launch work_dim
    }
    std::string joined;
    for (size_t i = 0; i < f.size(); ++i)
      if (i < first || i >= last) joined += (joined.empty() ? "" : ",") + f[i];
    out += joined + "\n";
  }
  const std::string path = tmp("pocl_without_features.csv");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << out;
  return path;
}

std::string replace_line(const std::string& text, size_t line, const std::string& from, const std::string& to) {
  std::istringstream in(text);
  std::string l, out;
  for (size_t n = 1; std::getline(in, l); ++n) {
    if (n == line) {
      const auto p = l.rfind(from);
      REQUIRE(p != std::string::npos);
      l.replace(p, from.size(), to);
    }
    out += l + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("the PoCL sweep dataset loads", "[trainer]") {
  const auto d = train::load_dataset(pocl_dataset());
  CHECK(d.platform_id == "pocl-test");
  CHECK(d.workloads.size() == 30);
  CHECK(d.configs.size() == 44);
  CHECK(d.cpu_levels == std::vector<double>{0, 0.25, 0.5, 0.75, 1});
  CHECK(d.gpu_levels.size() == 9);
  CHECK(d.rows == 1320);
  CHECK(d.invalid_rows == 0);
  // Swept before the malleable forms: every row of a GPU level strictly between 0 and 1 ran the whole GPU, which the
  // loader says once (the rows are used as measured).
  REQUIRE(d.problems.size() == 1);
  CHECK_THAT(d.problems[0],
             Catch::Contains("pocl_real_small.csv:2: 1050 rows at GPU levels below 1 ran the whole GPU"));
  CHECK(d.cpu_units >= 1);
  // Code features from `dop features --csv` (Dopia Table 1 first), the expression column among them.
  REQUIRE(d.code_keys.size() >= 6);
  CHECK(d.code_keys[0] == "mem_constant");
  CHECK(d.code_keys[5] == "arith_float");
  CHECK(std::find(d.code_keys.begin(), d.code_keys.end(), "work_dim") != d.code_keys.end());
  CHECK(d.expr_keys == std::vector<std::string>{"global_bytes_per_item_expr"});
  for (const auto& w : d.workloads) {
    REQUIRE(w.time_ms.size() == 44);
    for (size_t c = 0; c < 44; ++c) CHECK(w.time_ms[w.best] <= w.time_ms[c]);
    CHECK(w.perf(w.best) == 1.0);
    CHECK(w.set == "real");
  }
}

TEST_CASE("malformed datasets are refused naming file, line and column", "[trainer]") {
  const std::string good = good_rows(2);
  CHECK(train::load_dataset(write_text("good.csv", good)).workloads.size() == 2);
  auto refuse = [&](const std::string& text, const std::string& expected) {
    const std::string path = write_text("bad.csv", text);
    CHECK_THROWS_WITH(train::load_dataset(path), Catch::Contains(path) && Catch::Contains(expected));
  };
  refuse(replace_line(good, 1, ",valid,", ",okay,"), "bad.csv:1: no column 'valid'");
  refuse(replace_line(good, 3, ",1,1024,64,", ",1,10x4,64,"),
         "bad.csv:3: column 9 (global_size): '10x4' is not a number");
  refuse(replace_line(good, 4, "w0,paper,k,1,", "w0,paper,k,abc,"), "bad.csv:4: column 5 (mem_continuous): 'abc'");
  refuse(replace_line(good, 5, "w0,", "w0,extra,"), "bad.csv:5: 36 fields, the header has 35");
  refuse(replace_line(good, 12, ",0.25,0.25,", ",0.25,1.5,"),
         "bad.csv:12: column 19 (gpu_util): '1.5' is not in [0, 1]");
  refuse(replace_line(good, 7, ",1,", ",2,"), "bad.csv:7: column 34 (valid): '2' is not 0 or 1");
  refuse(replace_line(good, 8, "w0,paper,k,1,4,,1,", "w0,paper,k,1,4,,2,"), "bad.csv:8: column 8 (work_dim)");
  refuse(replace_line(good, 9, "w0,paper,k,1,4,,1,1024", "w0,paper,k,1,4,,1,4096"),
         "bad.csv:9: column 9 (global_size): differs from global_x*global_y*global_z");
  refuse(replace_line(good, 10, "w0,paper,k", "w0,real,k"), "bad.csv:10: column 3 (set): differs");
  refuse(replace_line(good, 11, "w0,paper,k,1", "w0,paper,k,2"),
         "bad.csv:11: column 5 (mem_continuous): code feature differs from the workload's first row (line 2)");
  // The same configuration twice.
  std::istringstream in(good);
  std::string l1, l2;
  std::getline(in, l1);
  std::getline(in, l2);
  refuse(good + l2 + "\n", "workload 'w0' (data on host) at configuration (0, 0.125) again (first at line 2)");
  refuse(replace_line(good, 12, "synth,", "other,"), "rows of several platforms (synth, other)");
  refuse("", "empty (no header line)");
  CHECK_THROWS_WITH(train::load_dataset(tmp("nope.csv")), Catch::Contains("nope.csv: cannot be read"));
  // Several platforms are fine when one is chosen.
  train::LoadOptions o;
  o.platform_id = "synth";
  CHECK(train::load_dataset(write_text("two.csv", replace_line(good, 12, "synth,", "other,")), o).rows == 87);
}

TEST_CASE("invalid rows are reported and not used", "[trainer]") {
  std::string text = good_rows(3);
  text = replace_line(text, 2 + 44 + 5, ",1,", ",0,wrong output");  // w1, one configuration invalid
  text = replace_line(text, 2 + 88 + 7, ",1,", ",0,");              // w2 too
  text += "synth,w3,paper,k,1,4,,1,1024,64,16,1024";                // torn last line (killed writer)
  const auto d = train::load_dataset(write_text("invalid.csv", text));
  CHECK(d.invalid_rows == 2);
  CHECK(d.excluded_workloads == 2);
  REQUIRE(d.workloads.size() == 1);
  CHECK(d.workloads[0].name == "w0");
  std::string all;
  for (const auto& p : d.problems) all += p + "\n";
  CHECK_THAT(all, Catch::Contains("invalid.csv:51: invalid row (valid = 0: wrong output), not used"));
  CHECK_THAT(all, Catch::Contains("invalid.csv:97: invalid row (valid = 0), not used"));
  CHECK_THAT(
      all, Catch::Contains("workload 'w1' (data on host) excluded: 0 configurations without a row, 1 invalid, of 44"));
  CHECK_THAT(all, Catch::Contains("torn last line"));
  // A zero time in a valid row is an invalid measurement too.
  const auto z = train::load_dataset(write_text("zero.csv", replace_line(good_rows(1), 3, ",1,3,3,3,", ",1,0,0,0,")));
  CHECK(z.invalid_rows == 1);
  CHECK(z.workloads.empty());
}

TEST_CASE("the predictor's outputs equal XGBoost's for every tree model type", "[trainer]") {
  const auto synth = train::load_dataset(synthetic_dataset("xgb.csv", 40, 3, 1.0));
  REQUIRE(synth.code_keys == std::vector<std::string>{"mem_continuous", "global_bytes_per_item"});
  for (const auto* data : {&synth}) {
    for (const char* type : {"dt", "rf", "gbt", "rank"}) {
      DYNAMIC_SECTION(type) {
        train::TrainOptions o;
        o.type = type;
        o.gpu_units = 3;
        if (std::string(type) == "rf") o.params["num_parallel_tree"] = "20";
        // Rows: every workload's feature vectors, plus perturbed copies with missing and shifted values.
        const auto feats = train::default_features(*data, true);
        const pred::Platform plat{data->platform_id, data->cpu_units, 3};
        std::vector<float> rows;
        std::vector<size_t> original;  // row index of (workload, configuration), in order
        std::mt19937_64 rng(11);
        for (const auto& w : data->workloads) {
          const auto code = pred::code_vector(feats, w.code_features(data->code_keys), w.launch);
          for (const auto& c : data->configs) {
            std::vector<float> x(feats.size());
            pred::feature_vector(feats, plat, code.data(), w.launch, c, x.data());
            original.push_back(rows.size() / feats.size());
            rows.insert(rows.end(), x.begin(), x.end());
            if (rng() % 8 == 0) {
              x[rng() % x.size()] = std::nanf("");
              x[rng() % x.size()] *= 1.5f;
              rows.insert(rows.end(), x.begin(), x.end());
            }
          }
        }
        const auto r = train::train_and_predict_with_xgboost(*data, train::all_workloads(*data), o, rows);
        REQUIRE(r.model.features.size() == feats.size());
        REQUIRE(r.xgboost_predictions.size() == rows.size() / feats.size());
        const pred::Predictor p(r.model);
        size_t exact = 0;
        for (size_t i = 0; i < r.xgboost_predictions.size(); ++i) {
          const double mine = p.predict_row(&rows[i * feats.size()]);
          const double theirs = r.xgboost_predictions[i];
          REQUIRE(std::abs(mine - theirs) <= 1e-5 * std::max(1.0, std::abs(theirs)));
          exact += mine == theirs;
        }
        // Summed in the same order in float: bit-identical.
        CHECK(exact == r.xgboost_predictions.size());
        // The decision path (all configurations of a launch at once) gives XGBoost's outputs too.
        std::vector<double> s(44);
        size_t k = 0;
        for (const auto& w : data->workloads) {
          const auto code = pred::code_vector(r.model.features, w.code_features(data->code_keys), w.launch);
          p.scores(code.data(), w.launch, s.data());
          for (size_t c = 0; c < 44; ++c) CHECK(s[c] == double(r.xgboost_predictions[original[k++]]));
        }
      }
    }
  }
}

TEST_CASE("the ridge baseline fits better than the mean and predicts through the predictor", "[trainer]") {
  const auto d = train::load_dataset(synthetic_dataset("ridge.csv", 30, 5, 1.0));
  train::TrainOptions o;
  o.type = "linear";
  const auto m = train::train(d, train::all_workloads(d), o);
  REQUIRE_FALSE(m.terms.empty());
  CHECK(m.trees.empty());
  const pred::Predictor p(m);
  double sse = 0, sst = 0, mean = 0;
  size_t n = 0;
  for (const auto& w : d.workloads)
    for (size_t c = 0; c < 44; ++c) {
      mean += w.perf(c);
      ++n;
    }
  mean /= double(n);
  std::vector<double> s(44);
  for (const auto& w : d.workloads) {
    const auto code = pred::code_vector(m.features, w.code_features(d.code_keys), w.launch);
    p.scores(code.data(), w.launch, s.data());
    for (size_t c = 0; c < 44; ++c) {
      sse += (s[c] - w.perf(c)) * (s[c] - w.perf(c));
      sst += (mean - w.perf(c)) * (mean - w.perf(c));
    }
  }
  // The mean is a feasible ridge solution with no penalty, so the fit can only be better; the configuration
  // preference per kernel is learnable, so clearly better.
  CHECK(sse < 0.9 * sst);
}

TEST_CASE("cross-validation is grouped by workload: no leakage", "[trainer]") {
  // Pure noise: every workload's best configuration is random, each workload has its own global size.
  const auto d = train::load_dataset(synthetic_dataset("noise.csv", 60, 9, 0.0));
  train::TrainOptions o;
  o.type = "dt";
  o.params = {{"max_depth", "20"}, {"min_child_weight", "0"}};
  o.mixed_margin = 0;  // decided by the highest output: what the tree memorised, mixed configurations included
  // In-sample, the deep tree memorises every workload's best configuration...
  const auto in_sample = train::evaluate_model(train::train(d, train::all_workloads(d), o), d);
  CHECK(in_sample.strategies[0].correct_share > 0.9);
  // ... held-out workloads are new to it: about 1 in 44 correct by chance.
  const auto cv = train::cross_validate(d, o, 10);
  CHECK(cv.folds == 10);
  CHECK(cv.strategies[0].correct_share < 0.2);
  std::set<size_t> seen;
  std::map<int, size_t> per_fold;
  for (const auto& x : cv.outcomes) {
    CHECK(seen.insert(x.workload).second);  // every workload predicted exactly once
    ++per_fold[x.fold];
  }
  CHECK(seen.size() == 60);
  for (const auto& [f, k] : per_fold) CHECK(k == 6);
}

TEST_CASE("cross-validation learns structure, clamps folds and computes the baselines from measurements", "[trainer]") {
  const auto d = train::load_dataset(synthetic_dataset("structure.csv", 28, 4, 1.0));
  train::TrainOptions o;
  o.type = "gbt";
  o.params["rounds"] = "40";
  const auto cv = train::cross_validate(d, o, 64);
  CHECK(cv.folds == 28);
  CHECK_THAT(cv.note, Catch::Contains("64 folds requested, clamped to the 28 workloads"));
  REQUIRE(cv.strategies.size() == 5);
  CHECK(cv.strategies[0].name == "model (gbt)");
  CHECK(cv.strategies[1].name == "CPU only");
  CHECK(cv.strategies[2].name == "GPU only");
  CHECK(cv.strategies[3].name == "ALL");
  CHECK(cv.strategies[4].name == "best constant");
  // Baselines recomputed from the dataset.
  const size_t cpu_only = 35, gpu_only = 7, all = 43;  // (1, 0), (0, 1), (1, 1) in grid order
  REQUIRE(d.configs[cpu_only].cpu == 1);
  REQUIRE(d.configs[cpu_only].gpu == 0);
  REQUIRE(d.configs[gpu_only].gpu == 1);
  REQUIRE(d.configs[all].gpu == 1);
  double cpu_mean = 0, gpu_mean = 0, all_mean = 0;
  size_t cpu_best = 0;
  for (const auto& w : d.workloads) {
    cpu_mean += w.perf(cpu_only) / double(d.workloads.size());
    gpu_mean += w.perf(gpu_only) / double(d.workloads.size());
    all_mean += w.perf(all) / double(d.workloads.size());
    cpu_best += w.best == cpu_only;
  }
  CHECK(cv.strategies[1].perf_mean == Approx(cpu_mean).epsilon(1e-12));
  CHECK(cv.strategies[2].perf_mean == Approx(gpu_mean).epsilon(1e-12));
  CHECK(cv.strategies[3].perf_mean == Approx(all_mean).epsilon(1e-12));
  CHECK(cv.strategies[1].correct == cpu_best);
  CHECK(cv.strategies[1].dist_mean >= 0);
  // The kernels' preference (CPU-friendly vs GPU-friendly) is learnable: the model beats every fixed choice.
  for (size_t s = 1; s < 5; ++s) CHECK(cv.strategies[0].perf_mean > cv.strategies[s].perf_mean);
  // Perfect choices have distance 0 and performance 1.
  for (const auto& x : cv.outcomes)
    if (x.perf == 1.0) CHECK(x.distance == 0.0);
}

TEST_CASE("leave-one-kernel-out holds out each real kernel", "[trainer]") {
  const auto d = train::load_dataset(synthetic_dataset("loko.csv", 28, 4, 1.0));
  train::TrainOptions o;
  o.type = "dt";
  const auto e = train::leave_one_kernel_out(d, o);
  std::set<std::string> real_kernels;
  size_t real = 0;
  for (const auto& w : d.workloads)
    if (w.set == "real") {
      real_kernels.insert(w.kernel);
      ++real;
    }
  CHECK(e.folds == real_kernels.size());
  CHECK(e.outcomes.size() == real);
  REQUIRE(e.per_kernel.size() == real_kernels.size());
  for (const auto& x : e.outcomes) CHECK(d.workloads[x.workload].set == "real");
  for (const auto& x : e.outcomes) CHECK(d.workloads[x.workload].kernel == e.per_kernel[size_t(x.fold)].kernel);
  // Without real workloads there is nothing to hold out.
  const auto none = train::leave_one_kernel_out(train::load_dataset(write_text("noreal.csv", good_rows(3))), o);
  CHECK(none.outcomes.empty());
  CHECK_THAT(none.note, Catch::Contains("needs complete workloads of set 'real'"));
}

TEST_CASE("leave-one-kernel-out leaves out, and names, a real kernel whose workloads are all partial", "[trainer]") {
  // The real workloads of kernel k0 (w0, w21) miss their (1, 1) row: partial, no oracle to score them.
  std::istringstream in(dop::test::read_file(synthetic_dataset("loko_partial_full.csv", 28, 4, 1.0)));
  std::string line, text;
  while (std::getline(in, line)) {
    const bool k0_real = line.find(",real,k0,") != std::string::npos;
    if (!(k0_real && line.find(",1,1,8,8,") != std::string::npos)) text += line + "\n";
  }
  const auto d = train::load_dataset(write_text("loko_partial.csv", text));
  std::set<std::string> complete_real;
  size_t k0_partial = 0;
  for (const auto& w : d.workloads) {
    if (w.set == "real" && w.complete) complete_real.insert(w.kernel);
    k0_partial += w.set == "real" && w.kernel == "k0" && !w.complete;
  }
  REQUIRE(k0_partial == 2);
  REQUIRE(!complete_real.count("k0"));
  train::TrainOptions o;
  o.type = "dt";
  const auto e = train::leave_one_kernel_out(d, o);
  CHECK(e.folds == complete_real.size());  // no empty fold for k0
  REQUIRE(e.per_kernel.size() == complete_real.size());
  for (const auto& k : e.per_kernel) CHECK(k.kernel != "k0");
  for (const auto& x : e.outcomes) CHECK(d.workloads[x.workload].kernel == e.per_kernel[size_t(x.fold)].kernel);
  CHECK_THAT(e.note,
             Catch::Contains("1 kernel(s) left out") && Catch::Contains("all partial") && Catch::EndsWith(": k0"));
}

TEST_CASE("a model is evaluated only on a matching dataset", "[trainer]") {
  const auto d = train::load_dataset(synthetic_dataset("match.csv", 10, 2, 1.0));
  train::TrainOptions o;
  o.type = "dt";
  pred::Model m = train::train(d, train::all_workloads(d), o);
  const auto e = train::evaluate_model(m, d);
  CHECK(e.strategies[0].workloads == 10);
  CHECK_THAT(e.note, Catch::Contains("the model's, from its training data"));
  pred::Model other = m;
  other.platform.id = "elsewhere";
  CHECK_THROWS_WITH(train::evaluate_model(other, d), Catch::Contains("trained for platform 'elsewhere'"));
  other = m;
  other.gpu_levels = {0, 0.5, 1};
  CHECK_THROWS_WITH(train::evaluate_model(other, d), Catch::Contains("grid"));
  const auto no_features = train::load_dataset(pocl_dataset_without_features());
  other = m;
  other.platform.id = no_features.platform_id;
  other.cpu_levels = no_features.cpu_levels;
  other.gpu_levels = no_features.gpu_levels;
  CHECK_THROWS_WITH(train::evaluate_model(other, no_features),
                    Catch::Contains("lacks code features the model needs: mem_continuous, global_bytes_per_item"));
  // Round trip through the file: the same decisions.
  m.save(tmp("match_model.json"));
  const auto back = train::evaluate_model(pred::Model::load(tmp("match_model.json")), d);
  REQUIRE(back.outcomes.size() == e.outcomes.size());
  for (size_t i = 0; i < e.outcomes.size(); ++i) CHECK(back.outcomes[i].predicted == e.outcomes[i].predicted);
}

TEST_CASE("unknown model types and parameters are refused", "[trainer]") {
  const auto d = train::load_dataset(synthetic_dataset("params.csv", 4, 2, 1.0));
  train::TrainOptions o;
  o.type = "svm";
  CHECK_THROWS_WITH(train::train(d, train::all_workloads(d), o), Catch::Contains("model type 'svm'"));
  o.type = "gbt";
  o.params = {{"objective", "rank:pairwise"}};
  CHECK_THROWS_WITH(train::train(d, train::all_workloads(d), o), Catch::Contains("use --model rank"));
  o.type = "rank";
  o.params = {{"objective", "reg:squarederror"}};
  CHECK_THROWS_WITH(train::train(d, train::all_workloads(d), o), Catch::Contains("needs a ranking objective"));
  o.type = "gbt";
  o.params = {{"max_depth", "-3"}};
  CHECK_THROWS_WITH(train::train(d, train::all_workloads(d), o), Catch::Contains("XGBoost"));
  o.type = "linear";
  o.params = {{"alpha", "1"}};
  CHECK_THROWS_WITH(train::train(d, train::all_workloads(d), o), Catch::Contains("unknown parameter 'alpha'"));
}

TEST_CASE("expressions of code features are kept only when training could evaluate them", "[trainer]") {
  train::TrainOptions o;
  o.type = "dt";
  auto feature = [](const pred::Model& m, const std::string& name) {
    for (const auto& f : m.features)
      if (f.name == name) return f;
    FAIL("no feature " << name);
    return pred::Feature{};
  };
  // Launch symbols only: evaluated in training (global_size_0 / 256 for the workloads without a value), kept.
  const auto launch = train::load_dataset(synthetic_dataset("expr_launch.csv", 10, 2, 1.0));
  const auto m1 = train::train(launch, train::all_workloads(launch), o);
  CHECK(feature(m1, "global_bytes_per_item").expr_key == "global_bytes_per_item_expr");
  // A kernel argument the dataset does not have: missing in training, so the predictor must not compute it from
  // --arg values either.
  const auto args = train::load_dataset(synthetic_dataset("expr_args.csv", 10, 2, 1.0, "N * 4"));
  const auto m2 = train::train(args, train::all_workloads(args), o);
  CHECK(feature(m2, "global_bytes_per_item").expr_key.empty());
  const pred::Predictor p(m2);
  pred::CodeFeatures c{{{"mem_continuous", 1}, {"global_bytes_per_item", std::nan("")}},
                       {{"global_bytes_per_item_expr", "N * 4"}}};
  const auto l = pred::LaunchShape::parse("4096", "64");
  CHECK(p.scores(c, l, {{"N", 100}}) == p.scores(c, l));
}

namespace {

// `text` (a dataset of header_line()'s columns) with the args column after local_z: `args(workload)` per row.
std::string with_args(const std::string& text, const std::function<std::string(const std::string&)>& args) {
  std::istringstream in(text);
  std::string line, out;
  long pos = -1;
  while (std::getline(in, line)) {
    auto f = dop::csv_split(line);
    const bool header = pos < 0;
    if (header) pos = long(std::find(f.begin(), f.end(), "local_z") - f.begin()) + 1;
    f.insert(f.begin() + pos, header ? std::string("args") : args(f[1]));
    out += dop::csv_line(f);
  }
  return out;
}

}  // namespace

TEST_CASE("with the dataset's args, training evaluates argument expressions as the predictor does at launch",
          "[trainer]") {
  // 12 workloads alike but for the argument N (every global_bytes_per_item given by the expression N * 4): the CPU
  // is best for small N, the GPU for large. Only the expression's value tells them apart.
  std::string text = header_line();
  for (size_t w = 0; w < 12; ++w) {
    SynthRow r;
    r.workload = "w" + std::to_string(w);
    r.kernel = "k";
    r.gx = 4096;
    r.features = {"1", "", "N * 4"};
    const bool gpu_wins = w >= 6;
    for (int c = 0; c <= 4; ++c)
      for (int g = 0; g <= 8; ++g) {
        if (!c && !g) continue;
        r.cpu = c / 4.0;
        r.gpu = g / 8.0;
        r.time = gpu_wins ? 3 + r.cpu - r.gpu : 3 - r.cpu + r.gpu;
        text += row_line(r);
      }
  }
  auto n_of = [](const std::string& workload) { return 100 * (std::stoll(workload.substr(1)) + 1); };
  const auto with = train::load_dataset(write_text(
      "expr_with_args.csv", with_args(text, [&](const std::string& w) { return "N=" + std::to_string(n_of(w)); })));
  const auto without = train::load_dataset(write_text("expr_without_args.csv", text));
  CHECK(with.has_args);
  CHECK_FALSE(without.has_args);
  train::TrainOptions o;
  o.type = "dt";
  const auto m = train::train(with, train::all_workloads(with), o);
  const auto m0 = train::train(without, train::all_workloads(without), o);
  const auto at = size_t(std::find_if(m.features.begin(), m.features.end(),
                                      [](const pred::Feature& f) { return f.name == "global_bytes_per_item"; }) -
                         m.features.begin());
  REQUIRE(at < m.features.size());
  CHECK(m.features[at].expr_key == "global_bytes_per_item_expr");  // evaluated in training: kept
  CHECK(m0.features[at].expr_key.empty());                         // never evaluated: dropped, as before
  const pred::Predictor p(m), p0(m0);
  size_t right = 0, right0 = 0;
  for (size_t i = 0; i < with.workloads.size(); ++i) {
    const train::Workload& w = with.workloads[i];
    CHECK(w.args == pred::ArgValues{{"N", n_of(w.name)}});
    CHECK(without.workloads[i].args.empty());
    // The value training saw is the expression's at the workload's arguments, the one the predictor computes.
    const auto code = w.code_vector(m.features, with.code_keys);
    CHECK(code[at] == double(4 * n_of(w.name)));
    CHECK(std::isnan(without.workloads[i].code_vector(m.features, without.code_keys)[at]));
    const pred::CodeFeatures launch_code{{{"mem_continuous", 1}, {"global_bytes_per_item", std::nan("")}},
                                         {{"global_bytes_per_item_expr", "N * 4"}}};
    const auto d = p.decide(launch_code, w.launch, w.args);
    right += d.index == w.best;
    right0 += p0.decide(launch_code, w.launch, w.args).index == w.best;
  }
  CHECK(right == 12);  // the argument decides, as measured
  CHECK(right0 == 6);  // without it every workload looks alike: one answer for all
}

TEST_CASE("code features are joined by kernel name into a dataset swept without them", "[trainer]") {
  const std::vector<std::string> kernels = {"atax1", "atax2",   "bicg1", "bicg2", "conv2d",   "fdtd1", "fdtd2", "fdtd3",
                                            "gemm",  "gesummv", "mvt1",  "mvt2",  "pagerank", "spmv",  "syr2k"};
  const std::string header = "file,kernel,mem_continuous,global_bytes_per_item,global_bytes_per_item_expr\n";
  std::string text = header;
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (i == 8) text += header;  // outputs of several `dop features` runs, concatenated
    text += "k.cl," + kernels[i] + "," + std::to_string(i) + "," + (i % 2 ? "" : std::to_string(4 * i)) +
            ",global_size_0 * 8\n";
  }
  train::LoadOptions o;
  o.features = write_text("features.csv", text);
  const std::string plain = pocl_dataset_without_features();
  CHECK(train::load_dataset(plain).code_keys.empty());
  const auto d = train::load_dataset(plain, o);
  CHECK(d.code_keys == std::vector<std::string>{"mem_continuous", "global_bytes_per_item"});
  CHECK(d.expr_keys == std::vector<std::string>{"global_bytes_per_item_expr"});
  for (const auto& w : d.workloads) {
    const size_t i = size_t(std::find(kernels.begin(), kernels.end(), w.kernel) - kernels.begin());
    REQUIRE(i < kernels.size());
    CHECK(w.code[0] == double(i));
    CHECK((i % 2 ? std::isnan(w.code[1]) : w.code[1] == double(4 * i)));
    CHECK(w.exprs.at("global_bytes_per_item_expr") == "global_size_0 * 8");
  }
  // Missing kernels, conflicting rows, a dataset that has features already.
  const auto missing = text.substr(0, text.find("gemm") - 5);  // up to fdtd3
  o.features = write_text("features_missing.csv", missing.substr(0, missing.rfind('\n') + 1));
  CHECK_THROWS_WITH(train::load_dataset(plain, o),
                    Catch::Contains("is not in") && Catch::Contains("features_missing.csv"));
  o.features = write_text("features_conflict.csv", text + "other.cl,atax1,99,,\n");
  CHECK_THROWS_WITH(
      train::load_dataset(plain, o),
      Catch::Contains("features_conflict.csv:18: kernel 'atax1' again with other features (first at line 2)"));
  o.features = write_text("features_ok.csv", text);
  CHECK_THROWS_WITH(train::load_dataset(pocl_dataset(), o), Catch::Contains("already has code features"));
  // A value that is not a number, or that overflows a double, names the kernel, the feature and the text.
  for (const std::string bad : {"12abc", "1e999"}) {
    std::string t = text;
    t.replace(t.find(",atax1,0,"), 9, ",atax1," + bad + ",");
    o.features = write_text("features_bad.csv", t);
    CHECK_THROWS_WITH(train::load_dataset(plain, o),
                      Catch::Contains("kernel 'atax1': mem_continuous '" + bad + "' is not a number"));
  }
}

namespace {

// `text` (a dataset of header_line()'s columns) with the data block after local_z: data_on and the bytes.
std::string with_data_block(const std::string& text, const std::string& data_on, bool header) {
  std::istringstream in(text);
  std::string line, out;
  bool first = true;
  long pos = 0;
  while (std::getline(in, line)) {
    auto f = dop::csv_split(line);
    if (first) pos = long(std::find(f.begin(), f.end(), "local_z") - f.begin()) + 1;
    if (first && !header) {
      first = false;
      continue;
    }
    const std::vector<std::string> block = first ? std::vector<std::string>{"data_on", "in_bytes", "out_bytes"}
                                                 : std::vector<std::string>{data_on, "1000000", "4000"};
    f.insert(f.begin() + pos, block.begin(), block.end());
    first = false;
    out += dop::csv_line(f);
  }
  return out;
}

// Row (w, c, g) of a grid dataset: workload w of kernel k<w % kernels> (every fourth one real), at CPU level c / 4 and
// GPU level g / 8.
SynthRow grid_row(size_t w, int c, int g, size_t kernels) {
  SynthRow r;
  r.workload = "w" + std::to_string(w);
  r.kernel = "k" + std::to_string(w % kernels);
  r.set = w % 4 == 0 ? "real" : "paper";
  r.gx = 1024 * (w + 1);
  r.features = {"1", "4", ""};
  r.cpu = c / 4.0;
  r.gpu = g / 8.0;
  return r;
}

// n workloads, each with its data on the host (the GPU's configurations pay a copy: the CPU wins) and on the GPU
// (the GPU wins), every configuration or, when `keep` is given, only the configurations it keeps.
std::string two_situations(size_t n, uint64_t seed,
                           const std::function<bool(size_t w, double c, double g)>& keep = nullptr) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(1.0, 1.05);
  std::string host = header_line(), gpu;
  for (size_t w = 0; w < n; ++w)
    for (int c = 0; c <= 4; ++c)
      for (int g = 0; g <= 8; ++g) {
        if (!c && !g) continue;
        SynthRow r = grid_row(w, c, g, 5);
        if (keep && !keep(w, r.cpu, r.gpu)) continue;
        r.time = u(rng) * (2 - r.cpu + 3 * r.gpu);  // data on the host: (1, 0) is best
        host += row_line(r);
        r.time = u(rng) * (2 + r.cpu - r.gpu);  // data on the GPU: (0, 1) is best
        gpu += row_line(r);
      }
  return with_data_block(host, "host", true) + with_data_block(header_line() + gpu, "gpu", false);
}

}  // namespace

TEST_CASE("a workload with its data on the host and on the GPU is two decisions, kept in one fold", "[trainer]") {
  const auto d = train::load_dataset(write_text("situations.csv", two_situations(24, 3)));
  CHECK(d.has_data);
  REQUIRE(d.workloads.size() == 48);
  std::map<std::string, std::set<bool>> situations;
  for (const auto& w : d.workloads) {
    situations[w.name].insert(w.launch.data_on_gpu);
    CHECK(w.launch.in_bytes == 1000000);
    CHECK(w.launch.out_bytes == 4000);
  }
  for (const auto& [name, s] : situations) CHECK(s.size() == 2);
  // The model's inputs say where the data is; a dataset without the data block trains the features it had.
  std::set<std::string> names;
  for (const auto& f : train::default_features(d)) names.insert(f.name);
  for (const char* f : {"data_on_gpu", "in_bytes", "out_bytes", "gpu_recv_bytes"}) CHECK(names.count(f));
  const auto old = train::load_dataset(synthetic_dataset("no_data_block.csv", 4, 1));
  CHECK_FALSE(old.has_data);
  for (const auto& w : old.workloads) CHECK_FALSE(w.launch.data_on_gpu);  // a missing data_on reads as host
  for (const auto& f : train::default_features(old)) {
    CHECK(f.name != "data_on_gpu");
    CHECK(f.name != "gpu_recv_bytes");
  }

  train::TrainOptions o;
  o.type = "gbt";
  o.params["rounds"] = "30";
  const auto cv = train::cross_validate(d, o, 6);
  CHECK(cv.folds == 6);
  REQUIRE(cv.outcomes.size() == 48);
  std::map<std::string, std::set<int>> folds;
  for (const auto& x : cv.outcomes) folds[d.workloads[x.workload].name].insert(x.fold);
  for (const auto& [name, f] : folds) CHECK(f.size() == 1);  // both situations of a name in one fold
  // Where the data is decides: held-out workloads go to the CPU with host data and to the GPU with GPU data.
  for (const auto& x : cv.outcomes) {
    const train::Workload& w = d.workloads[x.workload];
    INFO(w.name << (w.launch.data_on_gpu ? " gpu" : " host"));
    CHECK(d.configs[x.predicted].gpu == (w.launch.data_on_gpu ? 1.0 : 0.0));
  }
  CHECK(cv.strategies[0].perf_mean > 0.95);
  CHECK(cv.strategies[0].perf_mean > cv.strategies[4].perf_mean + 0.2);  // no constant serves both
}

TEST_CASE("partial workloads are trained on, never evaluated, and training can sample the grid", "[trainer]") {
  // Workloads of set paper keep 8 configurations (as dop sweep --configs 8 picks them); real ones the whole grid.
  std::vector<double> cpu, gpu;
  for (int c = 0; c <= 4; ++c)
    for (int g = 0; g <= 8; ++g)
      if (c || g) {
        cpu.push_back(c / 4.0);
        gpu.push_back(g / 8.0);
      }
  auto keep = [&](size_t w, double c, double g) {
    if (w % 4 == 0) return true;
    for (size_t i : dop::sample_configurations(cpu, gpu, "w" + std::to_string(w), 8))
      if (cpu[i] == c && gpu[i] == g) return true;
    return false;
  };
  const auto d = train::load_dataset(write_text("partial.csv", two_situations(20, 5, keep)));
  REQUIRE(d.workloads.size() == 40);
  CHECK(d.partial_workloads == 30);
  CHECK(d.excluded_workloads == 0);
  CHECK(train::complete_workloads(d).size() == 10);
  train::TrainOptions o;
  o.type = "dt";
  const auto m = train::train(d, train::all_workloads(d), o);
  const auto t = nlohmann::json::parse(m.training);
  CHECK(t["workloads"] == 40);
  CHECK(t["partial_workloads"] == 30);
  CHECK(t["rows"] == 30 * 8 + 10 * 44);  // the measured configurations only
  // Evaluations decide complete workloads only (they need the oracle); the partial ones train every fold.
  const auto cv = train::cross_validate(d, o, 5);
  CHECK(cv.outcomes.size() == 10);
  for (const auto& x : cv.outcomes) CHECK(d.workloads[x.workload].complete);
  // Scoring the partial workloads too (the training sets' criterion): each decided among its measured
  // configurations, against the best of them; the best constant is one of them as well.
  o.score_partial = true;
  const auto scored = train::cross_validate(d, o, 5);
  CHECK(scored.outcomes.size() == 40);
  size_t partial = 0;
  for (const auto& x : scored.outcomes) {
    const auto& w = d.workloads[x.workload];
    partial += !w.complete;
    CHECK(!std::isnan(w.time_ms[x.predicted]));
    CHECK(x.perf > 0);
    CHECK(x.perf <= 1);
  }
  CHECK(partial == 30);
  for (const auto& st : scored.strategies) CHECK(std::isfinite(st.perf_mean));
  // A real workload without its (1, 1) row (an invalid corner): decided by leave-one-kernel-out, left out of the
  // ALL baseline's row and of its kernel's ALL mean, which its other real workload gives (k4: w4 and w24).
  const auto no_all = train::load_dataset(
      write_text("partial_no_all.csv",
                 two_situations(40, 5, [](size_t w, double c, double g) { return !(w == 4 && c == 1 && g == 1); })));
  const auto loko = train::leave_one_kernel_out(no_all, o);
  CHECK(loko.outcomes.size() == 20);  // the 10 real names, both situations
  REQUIRE(loko.strategies.size() == 5);
  CHECK(loko.strategies[3].name == "ALL");
  CHECK(loko.strategies[3].workloads == 18);  // w4 lacks it in both situations
  CHECK(std::isfinite(loko.strategies[3].perf_mean));
  REQUIRE(loko.per_kernel.size() == 5);
  for (const auto& k : loko.per_kernel) {
    INFO(k.kernel);
    CHECK(std::isfinite(k.model));
    CHECK(std::isfinite(k.all));
  }
  o.score_partial = false;
  // Sampling a full dataset's grid for training: 8 rows per workload.
  const auto full = train::load_dataset(write_text("full.csv", two_situations(8, 5)));
  o.sample_configs = 8;
  CHECK(nlohmann::json::parse(train::train(full, train::all_workloads(full), o).training)["rows"] == 16 * 8);
}

TEST_CASE("Dopia's protocol: trained on the other sets, every workload of the test set decided", "[trainer]") {
  const auto d = train::load_dataset(write_text("testset.csv", two_situations(16, 7)));
  train::TrainOptions o;
  o.type = "gbt";
  o.params["rounds"] = "30";
  const auto e = train::evaluate_test_set(d, o, "real");
  size_t real = 0;
  for (const auto& w : d.workloads) real += w.set == "real";
  REQUIRE(real == 8);  // 4 names, both situations
  CHECK(e.train_workloads == d.workloads.size() - real);
  CHECK(e.outcomes.size() == real);
  for (const auto& x : e.outcomes) CHECK(d.workloads[x.workload].set == "real");
  REQUIRE(e.strategies.size() == 5);
  CHECK(e.strategies[0].perf_mean > 0.95);
  std::set<std::string> rows;
  for (const auto& k : e.per_kernel) rows.insert(k.kernel);
  CHECK(rows.count("k0 [data on gpu]"));
  CHECK(rows.count("k0 [data on host]"));
  // Each decision in the JSON form: the workload, where its data was, the chosen and the best configuration with
  // their measured times, and the normalised performance they give.
  const auto j = nlohmann::json::parse(train::evaluation_json(e, &d));
  REQUIRE(j["decisions"].size() == real);
  std::set<std::string> located;
  for (const auto& x : j["decisions"]) {
    CHECK(x["set"] == "real");
    located.insert(x["workload"].get<std::string>() + " " + x["data_on"].get<std::string>());
    CHECK(x["best"]["ms"].get<double>() <= x["chosen"]["ms"].get<double>());
    CHECK(x["perf"].get<double>() == Approx(x["best"]["ms"].get<double>() / x["chosen"]["ms"].get<double>()));
  }
  CHECK(located.size() == real);  // both data locations of each name
  CHECK_FALSE(nlohmann::json::parse(train::evaluation_json(e)).contains("decisions"));
  const auto none = train::evaluate_test_set(d, o, "nope");
  CHECK(none.outcomes.empty());
  CHECK_THAT(none.note, Catch::Contains("no complete workload of set 'nope'"));
}

TEST_CASE("an evaluation over several seeds: each seed's run as alone, and the spread of the model's metrics",
          "[trainer]") {
  const auto d = train::load_dataset(write_text("seeds.csv", two_situations(16, 7)));
  train::TrainOptions o;
  o.type = "gbt";
  o.params["rounds"] = "20";
  o.params["subsample"] = "0.5";  // the seed matters
  o.seed = 5;
  const auto run = [&](const train::TrainOptions& x) { return train::cross_validate(d, x, 4); };
  const train::SeedSpread s = train::over_seeds(run, o, 3);
  REQUIRE(s.evaluations.size() == 3);
  CHECK(s.first_seed == 5);
  std::vector<double> perf;
  for (size_t k = 0; k < 3; ++k) {
    train::TrainOptions alone = o;
    alone.seed = 5 + k;
    const auto e = run(alone);  // the same folds and trees as the spread's k-th run
    REQUIRE(e.outcomes.size() == s.evaluations[k].outcomes.size());
    for (size_t i = 0; i < e.outcomes.size(); ++i) {
      CHECK(e.outcomes[i].workload == s.evaluations[k].outcomes[i].workload);
      CHECK(e.outcomes[i].predicted == s.evaluations[k].outcomes[i].predicted);
    }
    perf.push_back(e.strategies[0].perf_mean);
  }
  CHECK(s.perf_mean.min == *std::min_element(perf.begin(), perf.end()));
  CHECK(s.perf_mean.max == *std::max_element(perf.begin(), perf.end()));
  CHECK(s.perf_mean.mean == Approx((perf[0] + perf[1] + perf[2]) / 3));
  CHECK(s.perf_min.min <= s.perf_min.mean);
  CHECK(s.perf_min.mean <= s.perf_min.max);
  // Another seed deals the workloads into other folds.
  std::set<std::vector<int>> fold_maps;
  for (const auto& e : s.evaluations) {
    std::vector<int> folds(d.workloads.size(), -1);
    for (const auto& x : e.outcomes) folds[x.workload] = x.fold;
    fold_maps.insert(folds);
  }
  CHECK(fold_maps.size() > 1);
  const auto j = nlohmann::json::parse(train::seed_spread_json(s));
  CHECK(j["seeds"] == 3);
  CHECK(j["perf_mean"]["values"].size() == 3);
  CHECK(j["perf_mean"]["values"][1].get<double>() == perf[1]);
  CHECK_THAT(train::format_seed_spread(s), Catch::Contains("over 3 seeds (5..7)"));
  CHECK_THROWS_AS(train::over_seeds(run, o, 0), std::invalid_argument);
}

TEST_CASE("set weights pull the trees toward the weighted set's rows", "[trainer]") {
  // Two workloads with the same kernel and launch: the paper one is fastest on the CPU alone, the real one on the
  // GPU alone. One regression tree's leaves are the rows' weighted means, so the heavier set decides.
  std::string text = header_line();
  for (const char* set : {"paper", "real"}) {
    SynthRow r;
    r.set = set;
    r.workload = std::string("w_") + set;
    r.kernel = "k";
    r.features = {"1", "4", ""};
    const bool paper = r.set == "paper";
    text += grid_rows(r, [paper](int c, int g) { return (paper ? c == 4 && g == 0 : c == 0 && g == 8) ? 1 : 2; });
  }
  const auto d = train::load_dataset(write_text("weights.csv", text));
  REQUIRE(d.workloads.size() == 2);
  const auto feats = train::default_features(d, true);
  const pred::Platform plat{d.platform_id, d.cpu_units, 1};
  const auto code = pred::code_vector(feats, d.workloads[0].code_features(d.code_keys), d.workloads[0].launch);
  std::vector<float> rows(2 * feats.size());  // (1, 0) and (0, 1)
  pred::feature_vector(feats, plat, code.data(), d.workloads[0].launch, {1, 0}, rows.data());
  pred::feature_vector(feats, plat, code.data(), d.workloads[0].launch, {0, 1}, rows.data() + feats.size());
  train::TrainOptions o;
  o.type = "dt";
  auto corners = [&](const std::map<std::string, double>& weights) {
    o.set_weights = weights;
    const auto r = train::train_and_predict_with_xgboost(d, train::all_workloads(d), o, rows);
    REQUIRE(r.xgboost_predictions.size() == 2);
    return std::make_pair(r.xgboost_predictions[0], r.xgboost_predictions[1]);
  };
  const auto even = corners({});
  CHECK(even.first == Approx(even.second));  // each corner: one row of 1 and one of 0.5
  const auto real = corners({{"real", 9}});
  CHECK(real.first == Approx(0.55));  // (9 x 0.5 + 1) / 10
  CHECK(real.second == Approx(0.95));
  const auto paper = corners({{"paper", 9}});
  CHECK(paper.first == Approx(0.95));
  CHECK(paper.second == Approx(0.55));
  const auto m = nlohmann::json::parse(train::train(d, train::all_workloads(d), o).training);
  CHECK(m.at("set_weights").at("paper") == 9);

  o.set_weights = {{"real", 0}};
  CHECK_THROWS_WITH(train::train(d, train::all_workloads(d), o), Catch::Contains("must be a positive number"));
  o.set_weights = {{"real", 2}};
  o.type = "linear";
  CHECK_THROWS_WITH(train::train(d, train::all_workloads(d), o), Catch::Contains("not linear"));
}

// The fast evaluation (bit vectors for the boosted trees, the walk for the decision tree, the estimate per
// configuration) on each platform's committed models and the real workloads they decide: every output equals the
// reference walk's, one full feature vector per configuration, and the models do decide by the estimate. The H200
// host's are the H100's retargeted (dop retarget): the same trees, that host's record's figures.
TEST_CASE("the shipped models score their platform's real workloads exactly as the reference walk", "[trainer]") {
  const std::string models = std::string(DOP_SOURCE_DIR) + "/models/";
  const std::string platform = GENERATE(std::string("h100-xeon16"), std::string("h200-host"));
  INFO(platform);
  const std::string dir = models + platform + "/";
  train::LoadOptions lo;
  lo.features = models + "h100-xeon16/features.csv";  // the real kernels' code features, whatever the host
  const auto d = train::load_dataset(dir + "real.csv.gz", lo);
  REQUIRE(d.workloads.size() >= 120);
  REQUIRE(d.platform_id == platform);
  const auto record = pred::PlatformFigures::from_record(test::read_file(dir + "platform.json"), dir + "platform.json");
  for (const char* file : {"gbt.json", "dt.json"}) {
    INFO(file);
    const auto p = pred::Predictor::load(dir + file, {});
    REQUIRE(p.model().platform.figures);  // trained with --estimate
    CHECK(p.model().platform.id == platform);
    CHECK(p.model().platform.figures->gpu_gather_gbs == record.gpu_gather_gbs);  // its own host's figures
    CHECK(p.model().platform.figures->cpu_triad_gbs.back().gbs == record.cpu_triad_gbs.back().gbs);
    std::vector<double> fast(p.num_configs()), ref(p.num_configs());
    std::set<size_t> chosen;
    for (const auto& w : d.workloads) {
      INFO(w.name);
      const auto code = w.code_vector(p.model().features, d.code_keys);
      p.scores(code.data(), w.launch, fast.data());
      p.scores_reference(code.data(), w.launch, ref.data());
      REQUIRE(fast == ref);
      chosen.insert(p.decide(code.data(), w.launch).index);
    }
    CHECK(chosen.size() > 2);  // not one constant answer
  }
}

TEST_CASE("the decision's mixing margin: both devices only where the model expects them to gain more", "[trainer]") {
  // Both devices at full share are 10 % faster than the CPU alone in every workload, the GPU alone far slower.
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(1.0, 1.01);
  std::string text = header_line();
  for (size_t w = 0; w < 24; ++w)
    for (int c = 0; c <= 4; ++c)
      for (int g = 0; g <= 8; ++g) {
        if (!c && !g) continue;
        SynthRow r = grid_row(w, c, g, 6);
        r.time = u(rng) * (c ? 2 - r.cpu - 0.2 * r.gpu : 4);
        text += row_line(r);
      }
  const auto d = train::load_dataset(write_text("margin.csv", text));
  train::TrainOptions o;
  o.type = "gbt";
  o.params["rounds"] = "40";
  // The default: kDefaultMixedMargin for models of normalised performance, none for rankings; --mixed-margin's.
  const std::vector<size_t> all = [&] {
    std::vector<size_t> v(d.workloads.size());
    std::iota(v.begin(), v.end(), 0);
    return v;
  }();
  CHECK(train::train(d, all, o).mixed_margin == train::kDefaultMixedMargin);
  o.type = "rank";
  CHECK(train::train(d, all, o).mixed_margin == 0);
  o.mixed_margin = 0.1;
  CHECK_THROWS_WITH(train::train(d, all, o), Catch::Contains("mixed_margin needs a model whose output is normalised"));
  o.type = "gbt";
  CHECK(train::train(d, all, o).mixed_margin == 0.1);
  // Evaluations decide as the predictor does: (1, 1) gains 10 %, more than a margin of 0.05, less than one of 0.3.
  auto mixed_decisions = [&](double margin) {
    o.mixed_margin = margin;
    const auto e = train::evaluate_test_set(d, o, "real");
    REQUIRE(e.outcomes.size() == 6);
    size_t mixed = 0;
    for (const auto& x : e.outcomes) mixed += d.configs[x.predicted].cpu > 0 && d.configs[x.predicted].gpu > 0;
    return mixed;
  };
  CHECK(mixed_decisions(0) == 6);
  CHECK(mixed_decisions(0.05) == 6);
  CHECK(mixed_decisions(0.3) == 0);
}
