// train(): the training matrix, the model types' parameters, and the model file's training metadata.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <nlohmann/json.hpp>

#include "internal.hpp"

namespace dop::train {

namespace detail {

pred::Platform platform_of(const Dataset& data, const TrainOptions& o) {
  pred::Platform p;
  p.id = data.platform_id;
  p.cpu_units = std::max(1, data.cpu_units);
  p.gpu_units = std::max(1, o.gpu_units);
  p.devices = o.platform_devices;
  p.figures = o.estimate;
  return p;
}

std::vector<size_t> training_configs(const Dataset& data, const Workload& w, size_t sample) {
  std::vector<size_t> out;
  if (sample == 0) {
    for (size_t c = 0; c < data.configs.size(); ++c)
      if (!std::isnan(w.time_ms[c])) out.push_back(c);
    return out;
  }
  std::vector<double> cpu, gpu;
  for (const auto& c : data.configs) {
    cpu.push_back(c.cpu);
    gpu.push_back(c.gpu);
  }
  for (size_t c : sample_configurations(cpu, gpu, w.name, sample))
    if (!std::isnan(w.time_ms[c])) out.push_back(c);
  return out;
}

Matrix build_matrix(const Dataset& data, const std::vector<size_t>& workloads, const std::vector<pred::Feature>& f,
                    const pred::Platform& platform, size_t sample, const std::map<std::string, double>& set_weights) {
  Matrix m;
  m.cols = f.size();
  m.group_ptr.push_back(0);
  std::vector<pred::Config> configs;
  for (size_t wi : workloads) {
    const Workload& w = data.workloads.at(wi);
    const auto code = w.code_vector(f, data.code_keys);
    // The configurations measured (or sampled), normalised by the best of them: where the oracle was not measured,
    // the best measured one is 1 (the target is then optimistic for that workload).
    const std::vector<size_t> cs = training_configs(data, w, sample);
    double best = std::numeric_limits<double>::infinity();
    for (size_t c : cs) best = std::min(best, w.time_ms[c]);
    configs.clear();
    for (size_t c : cs) {
      configs.push_back(data.configs[c]);
      m.y.push_back(float(best / w.time_ms[c]));
      ++m.rows;
    }
    if (!set_weights.empty()) {
      const auto it = set_weights.find(w.set);
      m.weight.resize(m.rows, it == set_weights.end() ? 1.0f : float(it->second));
    }
    m.x.resize(m.x.size() + configs.size() * m.cols);
    pred::feature_vectors(f, platform, code.data(), w.launch, configs,
                          m.x.data() + m.x.size() - configs.size() * m.cols);
    m.group_ptr.push_back(unsigned(m.rows));
  }
  return m;
}

std::vector<double> mean_perf(const Dataset& data, const std::vector<size_t>& ws) {
  std::vector<double> mean(data.configs.size(), 0);
  size_t n = 0;
  for (size_t w : ws) {
    if (!data.workloads[w].complete) continue;
    ++n;
    for (size_t c = 0; c < mean.size(); ++c) mean[c] += data.workloads[w].perf(c);
  }
  for (double& m : mean) m /= double(std::max<size_t>(1, n));
  return mean;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const double pos = p / 100.0 * double(v.size() - 1);
  const size_t lo = size_t(std::floor(pos)), hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

}  // namespace detail

std::map<std::string, std::string> effective_params(const TrainOptions& o) {
  std::map<std::string, std::string> p;
  if (o.type == "dt") {  // one CART-like tree: no shrinkage, no L2 on leaves (leaf = mean of its rows)
    p = {{"booster", "gbtree"},
         {"tree_method", "exact"},
         {"objective", "reg:squarederror"},
         {"eta", "1"},
         {"lambda", "0"},
         {"alpha", "0"},
         {"gamma", "0"},
         {"max_depth", "10"},
         {"min_child_weight", "2"},
         {"num_parallel_tree", "1"},
         {"subsample", "1"},
         {"rounds", "1"}};
  } else if (o.type == "rf") {  // XGBoost's random forest: parallel trees on row and feature samples, one round
    p = {{"booster", "gbtree"},
         {"tree_method", "hist"},
         {"objective", "reg:squarederror"},
         {"eta", "1"},
         {"lambda", "0"},
         {"max_depth", "12"},
         {"min_child_weight", "2"},
         {"num_parallel_tree", "100"},
         {"subsample", "0.632"},
         {"colsample_bynode", "0.6"},
         {"rounds", "1"}};
  } else if (o.type == "gbt" || o.type == "rank") {
    p = {{"booster", "gbtree"}, {"tree_method", "hist"}, {"objective", "reg:squarederror"},
         {"eta", "0.1"},        {"max_depth", "6"},      {"min_child_weight", "1"},
         {"lambda", "1"},       {"subsample", "0.8"},    {"colsample_bytree", "0.8"},
         {"rounds", "200"}};
    if (o.type == "rank") p["objective"] = "rank:pairwise";
  } else if (o.type == "linear") {
    p = {{"lambda", "10"}};
  } else {
    throw std::invalid_argument("model type '" + o.type + "' is not dt, rf, gbt, rank or linear");
  }
  for (const auto& [k, v] : o.params) p[k] = v;
  if (!o.set_weights.empty() && (o.type == "rank" || o.type == "linear"))
    throw std::invalid_argument("set weights are for dt, rf and gbt, not " + o.type);
  for (const auto& [set, w] : o.set_weights)
    if (!(w > 0) || !std::isfinite(w))
      throw std::invalid_argument("the weight of set '" + set + "' must be a positive number");
  if (o.type == "rank" && p["objective"].rfind("rank:", 0) != 0)
    throw std::invalid_argument("a rank model needs a ranking objective (rank:pairwise, rank:ndcg), not '" +
                                p["objective"] + "'");
  if (o.type != "rank" && o.type != "linear" && p["objective"] != "reg:squarederror")
    throw std::invalid_argument("model type '" + o.type +
                                "' regresses normalised performance: objective must be "
                                "reg:squarederror (use --model rank for ranking objectives)");
  return p;
}

namespace {

pred::Model shell(const Dataset& data, const TrainOptions& o) {
  pred::Model m;
  m.type = o.type;
  m.output = o.type == "rank" ? "score" : "normalised_performance";
  m.mixed_margin = o.mixed_margin >= 0 ? o.mixed_margin : o.type == "rank" ? 0 : kDefaultMixedMargin;
  m.platform = detail::platform_of(data, o);
  m.cpu_levels = data.cpu_levels;
  m.gpu_levels = data.gpu_levels;
  m.features = default_features(data, o.derived);
  if (o.estimate)
    for (const char* name : {"est_rel", "est_best_ms"}) m.features.push_back(pred::builtin_feature(name));
  return m;
}

std::string now_iso() {
  const std::time_t t = std::time(nullptr);
  char b[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

pred::Model train_impl(const Dataset& data, const std::vector<size_t>& ws, const TrainOptions& o,
                       const std::vector<float>* check_rows, std::vector<float>* check_out) {
  if (ws.empty()) throw std::invalid_argument("no workloads to train on");
  const auto t0 = std::chrono::steady_clock::now();
  const auto params = effective_params(o);
  pred::Model m = shell(data, o);
  // An expression that never gave a value in training (it needs kernel arguments the dataset does not have: one
  // without the args column) must not give one at prediction either: the model learnt the feature as missing for
  // those kernels. Evaluated as the predictor does at launch, with each workload's launch and arguments.
  for (auto& f : m.features) {
    if (f.expr_key.empty()) continue;
    const auto k = size_t(std::find(data.code_keys.begin(), data.code_keys.end(), f.key) - data.code_keys.begin());
    const std::vector<pred::Feature> one = {f};
    bool used = false;
    for (size_t w : ws) {
      const Workload& x = data.workloads[w];
      if (k >= x.code.size() || !std::isnan(x.code[k])) continue;  // a value of its own: the expression is not used
      used = !std::isnan(x.code_vector(one, data.code_keys)[0]);
      if (used) break;
    }
    if (!used) f.expr_key.clear();
  }
  const detail::Matrix mx = detail::build_matrix(data, ws, m.features, m.platform, o.sample_configs, o.set_weights);
  if (o.type == "linear") {
    detail::train_linear(mx, params, m);
  } else {
    detail::train_xgboost(mx, o, params, m, check_rows, check_out);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // The best constant configuration on the training workloads (for `dop eval`'s baseline).
  const std::vector<double> mean = detail::mean_perf(data, ws);
  const size_t bc = size_t(std::max_element(mean.begin(), mean.end()) - mean.begin());
  nlohmann::ordered_json t;
  t["dataset"] = data.path;
  t["platform_id"] = data.platform_id;
  t["workloads"] = ws.size();
  t["rows"] = mx.rows;
  t["invalid_rows_skipped"] = data.invalid_rows;
  t["workloads_excluded"] = data.excluded_workloads;
  t["target"] = o.type == "rank" ? "rank of best_time / time within each workload (groups = workloads)"
                                 : "best_time / time per workload (normalised performance)";
  t["params"] = params;
  t["seed"] = o.seed;
  t["derived_features"] = o.derived;
  t["partial_workloads"] =
      size_t(std::count_if(ws.begin(), ws.end(), [&](size_t w) { return !data.workloads[w].complete; }));
  if (o.sample_configs) t["sample_configs"] = o.sample_configs;
  if (!o.set_weights.empty()) t["set_weights"] = o.set_weights;
  t["cpu_units_from"] = "largest cpu_cores in the dataset";
  t["gpu_units_from"] = o.gpu_units > 1 ? "platform record / --gpu-units" : "unknown (1)";
  t["estimate"] = o.estimate ? (o.estimate->defaults.empty() ? "platform record"
                                                             : "platform record; defaults for the figures in "
                                                               "estimate.defaults")
                             : "off";
  t["best_constant"] = {{"cpu", data.configs[bc].cpu}, {"gpu", data.configs[bc].gpu}, {"mean_perf", mean[bc]}};
  t["train_seconds"] = secs;
  t["created"] = now_iso();
  m.training = t.dump();
  m.validate("trained model");
  return m;
}

}  // namespace

pred::Model train(const Dataset& data, const std::vector<size_t>& ws, const TrainOptions& o) {
  return train_impl(data, ws, o, nullptr, nullptr);
}

XgbCheck train_and_predict_with_xgboost(const Dataset& data, const std::vector<size_t>& ws, const TrainOptions& o,
                                        const std::vector<float>& rows) {
  if (o.type == "linear") throw std::invalid_argument("train_and_predict_with_xgboost: linear is not XGBoost");
  XgbCheck r;
  r.model = train_impl(data, ws, o, &rows, &r.xgboost_predictions);
  return r;
}

}  // namespace dop::train
