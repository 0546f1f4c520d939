// Evaluation without leakage: grouped k-fold cross-validation, leave-one-kernel-out, a trained model on a dataset;
// Dopia's metrics (Table 5: correct choices; Fig. 11a: normalised distance; Fig. 11b / Table 6: performance share).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <set>

#include "internal.hpp"

namespace dop::train {

namespace {

using detail::percentile;

struct Fixed {
  std::string name;
  Config config;
  long index = -1;  // -1: not in the grid
};

long config_index(const Dataset& d, double cpu, double gpu) {
  for (size_t c = 0; c < d.configs.size(); ++c)
    if (d.configs[c].cpu == cpu && d.configs[c].gpu == gpu) return long(c);
  return -1;
}

double distance(const Config& a, const Config& b) { return std::hypot(a.cpu - b.cpu, a.gpu - b.gpu) / std::sqrt(2.0); }

// Metrics of a strategy that chose `chosen[i]` for workload `ws[i]`.
Summary summarize(const Dataset& d, const std::string& name, const std::string& config, const std::vector<size_t>& ws,
                  const std::vector<size_t>& chosen) {
  Summary s;
  s.name = name;
  s.config = config;
  s.workloads = ws.size();
  if (ws.empty()) return s;
  std::vector<double> perf, dist;
  double logsum = 0;
  for (size_t i = 0; i < ws.size(); ++i) {
    const Workload& w = d.workloads[ws[i]];
    const double p = w.perf(chosen[i]);
    perf.push_back(p);
    logsum += std::log(p);
    dist.push_back(distance(d.configs[chosen[i]], d.configs[w.best]));
    if (w.time_ms[chosen[i]] == w.time_ms[w.best]) ++s.correct;
  }
  const double n = double(ws.size());
  s.correct_share = double(s.correct) / n;
  s.dist_mean = std::accumulate(dist.begin(), dist.end(), 0.0) / n;
  s.dist_p50 = percentile(dist, 50);
  s.dist_p75 = percentile(dist, 75);
  s.dist_p90 = percentile(dist, 90);
  s.perf_mean = std::accumulate(perf.begin(), perf.end(), 0.0) / n;
  s.perf_geomean = std::exp(logsum / n);
  s.perf_min = *std::min_element(perf.begin(), perf.end());
  s.perf_p5 = percentile(perf, 5);
  s.perf_p10 = percentile(perf, 10);
  s.perf_p25 = percentile(perf, 25);
  s.perf_p50 = percentile(perf, 50);
  s.perf_p75 = percentile(perf, 75);
  s.share_ge_90 = double(std::count_if(perf.begin(), perf.end(), [](double p) { return p >= 0.9; })) / n;
  s.share_ge_95 = double(std::count_if(perf.begin(), perf.end(), [](double p) { return p >= 0.95; })) / n;
  return s;
}

size_t best_constant(const Dataset& d, const std::vector<size_t>& ws) {
  const std::vector<double> mean = detail::mean_perf(d, ws);
  return size_t(std::max_element(mean.begin(), mean.end()) - mean.begin());
}

std::vector<Fixed> fixed_baselines(const Dataset& d) {
  const double cmax = d.cpu_levels.back(), gmax = d.gpu_levels.back();
  std::vector<Fixed> f = {{"CPU only", {cmax, 0}, -1}, {"GPU only", {0, gmax}, -1}, {"ALL", {cmax, gmax}, -1}};
  for (auto& x : f) x.index = config_index(d, x.config.cpu, x.config.gpu);
  return f;
}

// Collects the per-workload choices of the model, the fixed baselines and the best constant, and summarises them.
struct Collector {
  const Dataset& d;
  std::vector<size_t> ws, model, bestc;
  std::vector<int> fold;
  void add(size_t w, size_t predicted, size_t best_const, int f) {
    ws.push_back(w);
    model.push_back(predicted);
    bestc.push_back(best_const);
    fold.push_back(f);
  }
  void finish(Evaluation& e, const std::string& model_name) const {
    for (size_t i = 0; i < ws.size(); ++i) {
      Outcome o;
      o.workload = ws[i];
      o.predicted = model[i];
      o.perf = d.workloads[ws[i]].perf(model[i]);
      o.distance = distance(d.configs[model[i]], d.configs[d.workloads[ws[i]].best]);
      o.fold = fold[i];
      e.outcomes.push_back(o);
    }
    e.strategies.push_back(summarize(d, model_name, "", ws, model));
    for (const Fixed& f : fixed_baselines(d)) {
      if (f.index < 0) continue;
      std::vector<size_t> measured;  // a partial workload (score_partial) whose row of it is missing or invalid
      for (size_t w : ws)
        if (!std::isnan(d.workloads[w].time_ms[size_t(f.index)])) measured.push_back(w);
      e.strategies.push_back(
          summarize(d, f.name, to_string(f.config), measured, std::vector<size_t>(measured.size(), size_t(f.index))));
    }
    std::set<size_t> distinct(bestc.begin(), bestc.end());
    std::string cfg = distinct.size() == 1 ? to_string(d.configs[*distinct.begin()])
                                           : "per fold (" + std::to_string(distinct.size()) + ")";
    e.strategies.push_back(summarize(d, "best constant", cfg, ws, bestc));
  }
};

size_t argmax(const std::vector<double>& v) {
  size_t b = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[b]) b = i;
  return b;
}

// The measured configuration of highest score (every configuration of a complete workload).
size_t best_measured(const Workload& w, std::vector<double> score) {
  for (size_t c = 0; c < score.size(); ++c)
    if (std::isnan(w.time_ms[c])) score[c] = -std::numeric_limits<double>::infinity();
  return argmax(score);
}

size_t predict_best(const pred::Predictor& p, const pred::Model& m, const Dataset& d, const Workload& w) {
  const auto code = w.code_vector(m.features, d.code_keys);
  std::vector<double> s(p.num_configs());
  p.scores(code.data(), w.launch, s.data());
  // As the predictor decides (pred::pick_config), among the configurations measured.
  for (size_t c = 0; c < s.size(); ++c)
    if (std::isnan(w.time_ms[c])) s[c] = -std::numeric_limits<double>::infinity();
  return pred::pick_config(m.configs(), s.data(), m.mixed_margin);
}

bool decided(const Workload& w, const TrainOptions& o) { return w.complete || o.score_partial; }

// Trains on `train_ws` and predicts `test_ws`; returns the seconds spent training.
double fold_run(const Dataset& d, const TrainOptions& o, const std::vector<size_t>& train_ws,
                const std::vector<size_t>& test_ws, int fold, Collector& col) {
  const auto t0 = std::chrono::steady_clock::now();
  pred::Model m = train(d, train_ws, o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  pred::PredictorOptions po;
  po.cache_capacity = 0;
  const pred::Predictor p(m, po);
  const std::vector<double> mean = detail::mean_perf(d, train_ws);  // the best constant: the best measured of them
  for (size_t w : test_ws)
    if (decided(d.workloads[w], o))
      col.add(w, predict_best(p, m, d, d.workloads[w]), best_measured(d.workloads[w], mean), fold);
  return secs;
}

// Mean normalised performance per label (a kernel, ...) of the collected outcomes: the model's, the fixed
// baselines', the best constant's; labels in sorted order.
std::vector<Evaluation::KernelRow> kernel_rows(const Dataset& d, const Collector& col,
                                               const std::vector<std::string>& labels) {
  const auto fixed = fixed_baselines(d);
  // Per label: the sums and counts of model, CPU, GPU, ALL, best constant. A configuration a partial workload lacks
  // (score_partial: a corner whose row is invalid) is left out of that column's mean.
  struct Sums {
    double sum[5] = {0, 0, 0, 0, 0};
    size_t n[5] = {0, 0, 0, 0, 0};
    size_t workloads = 0;
  };
  std::map<std::string, Sums> rows;
  for (size_t i = 0; i < col.ws.size(); ++i) {
    const Workload& w = d.workloads[col.ws[i]];
    Sums& r = rows[labels[i]];
    ++r.workloads;
    const long chosen[5] = {long(col.model[i]), fixed[0].index, fixed[1].index, fixed[2].index, long(col.bestc[i])};
    for (int k = 0; k < 5; ++k) {
      const double p = chosen[k] < 0 ? std::nan("") : w.perf(size_t(chosen[k]));
      if (std::isnan(p)) continue;
      r.sum[k] += p;
      ++r.n[k];
    }
  }
  std::vector<Evaluation::KernelRow> out;
  for (const auto& [label, r] : rows) {
    auto mean = [&](int k) { return r.n[k] ? r.sum[k] / double(r.n[k]) : std::nan(""); };
    Evaluation::KernelRow row;
    row.kernel = label;
    row.workloads = r.workloads;
    row.model = mean(0);
    row.cpu = mean(1);
    row.gpu = mean(2);
    row.all = mean(3);
    row.best_const = mean(4);
    out.push_back(row);
  }
  return out;
}

std::string pct(double v) {
  char b[16];
  std::snprintf(b, sizeof b, "%.1f%%", 100 * v);
  return b;
}

}  // namespace

Evaluation cross_validate(const Dataset& d, const TrainOptions& o, size_t folds) {
  // Folds group workloads by name: a workload measured with its data on the host and on the GPU is in one fold, so
  // that no model decides a workload whose other situation it was trained on.
  std::vector<std::string> names;
  for (const Workload& w : d.workloads)
    if (decided(w, o)) names.push_back(w.name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  const size_t W = names.size();
  if (W < 2)
    throw std::invalid_argument(d.path + ": cross-validation needs at least 2 complete workloads, found " +
                                std::to_string(W));
  if (folds < 2) throw std::invalid_argument("cross-validation needs at least 2 folds");
  Evaluation e;
  e.method = "grouped k-fold cross-validation";
  e.model_type = o.type;
  e.folds_requested = folds;
  e.folds = std::min(folds, W);
  if (e.folds < folds)
    e.note = std::to_string(folds) + " folds requested, clamped to the " + std::to_string(W) +
             " workloads (leave-one-workload-out)";
  std::mt19937_64 rng(o.seed);
  std::shuffle(names.begin(), names.end(), rng);
  std::map<std::string, int> fold_of_name;
  for (size_t i = 0; i < W; ++i) fold_of_name[names[i]] = int(i % e.folds);
  // A partial workload of a name no complete workload has is trained on in every fold.
  auto fold_of = [&](size_t w) {
    const auto it = fold_of_name.find(d.workloads[w].name);
    return it == fold_of_name.end() ? -1 : it->second;
  };
  Collector col{d, {}, {}, {}, {}};
  for (size_t f = 0; f < e.folds; ++f) {
    std::vector<size_t> tr, te;
    for (size_t w = 0; w < d.workloads.size(); ++w) (fold_of(w) == int(f) ? te : tr).push_back(w);
    e.train_seconds += fold_run(d, o, tr, te, int(f), col);
  }
  col.finish(e, "model (" + o.type + ")");
  return e;
}

Evaluation leave_one_kernel_out(const Dataset& d, const TrainOptions& o) {
  Evaluation e;
  e.method = "leave-one-kernel-out";
  e.model_type = o.type;
  // The folds are the kernels with a real workload to decide (complete, or any with score_partial); a kernel whose
  // real workloads are all partial would otherwise make an empty fold: it is left out, and the note says so.
  std::set<std::string> kernel_set, partial_only;
  for (const auto& w : d.workloads)
    if (w.set == "real") (decided(w, o) ? kernel_set : partial_only).insert(w.kernel);
  for (const auto& k : kernel_set) partial_only.erase(k);
  const std::vector<std::string> kernels(kernel_set.begin(), kernel_set.end());
  e.folds = kernels.size();
  if (!partial_only.empty()) {
    std::string names;
    for (const auto& k : partial_only) names += (names.empty() ? "" : ", ") + k;
    e.note = std::to_string(partial_only.size()) + " kernel(s) left out, their real workloads all partial (no oracle " +
             "to score): " + names;
  }
  if (kernels.size() < 2) {
    e.note = "needs complete workloads of set 'real' from at least 2 kernels, found " + std::to_string(kernels.size()) +
             (e.note.empty() ? "" : "; " + e.note);
    return e;
  }
  Collector col{d, {}, {}, {}, {}};
  for (size_t k = 0; k < kernels.size(); ++k) {
    std::vector<size_t> tr, te;
    for (size_t w = 0; w < d.workloads.size(); ++w) {
      const Workload& x = d.workloads[w];
      if (x.kernel != kernels[k])
        tr.push_back(w);
      else if (x.set == "real" && decided(x, o))
        te.push_back(w);
    }
    e.train_seconds += fold_run(d, o, tr, te, int(k), col);
  }
  col.finish(e, "model (" + o.type + ")");
  std::vector<std::string> labels;
  for (size_t i = 0; i < col.ws.size(); ++i) labels.push_back(kernels[size_t(col.fold[i])]);
  e.per_kernel = kernel_rows(d, col, labels);
  return e;
}

Evaluation evaluate_test_set(const Dataset& d, const TrainOptions& o, const std::string& set) {
  Evaluation e;
  e.method = "test set '" + set + "' (trained on the other sets)";
  e.model_type = o.type;
  std::vector<size_t> tr, te;
  std::set<std::string> places;  // where the test set's data is: host, gpu, pinned
  for (size_t w = 0; w < d.workloads.size(); ++w) {
    const Workload& x = d.workloads[w];
    if (x.set != set) {
      tr.push_back(w);
    } else if (x.complete) {
      te.push_back(w);
      places.insert(data_on_name(x.launch.data_on_gpu, x.launch.data_pinned));
    }
  }
  if (te.empty() || tr.empty()) {
    e.note = te.empty() ? "no complete workload of set '" + set + "'" : "no workload outside set '" + set + "'";
    return e;
  }
  e.folds = 1;
  e.train_workloads = tr.size();
  e.note = "trained on " + std::to_string(tr.size()) + " workloads of other sets; best constant from them";
  Collector col{d, {}, {}, {}, {}};
  e.train_seconds = fold_run(d, o, tr, te, 0, col);
  col.finish(e, "model (" + o.type + ")");
  std::vector<std::string> labels;  // per kernel, and per data location when the test set has several
  for (size_t w : col.ws) {
    const Workload& x = d.workloads[w];
    labels.push_back(x.kernel + (places.size() > 1 ? std::string(" [data on ") +
                                                         data_on_name(x.launch.data_on_gpu, x.launch.data_pinned) + "]"
                                                   : std::string()));
  }
  e.per_kernel = kernel_rows(d, col, labels);
  return e;
}

Evaluation evaluate_model(const pred::Model& m, const Dataset& d, bool other_platform) {
  if (m.platform.id != d.platform_id && !other_platform)
    throw pred::ModelError("the model was trained for platform '" + m.platform.id + "', the dataset " + d.path +
                           " was measured on '" + d.platform_id + "'");
  if (m.cpu_levels != d.cpu_levels || m.gpu_levels != d.gpu_levels)
    throw pred::ModelError("the model's grid (" + std::to_string(m.cpu_levels.size()) + " CPU x " +
                           std::to_string(m.gpu_levels.size()) + " GPU levels) differs from the dataset's (" +
                           std::to_string(d.cpu_levels.size()) + " x " + std::to_string(d.gpu_levels.size()) + ")");
  std::string missing;
  for (const auto& k : m.code_keys())
    if (std::find(d.code_keys.begin(), d.code_keys.end(), k) == d.code_keys.end())
      missing += (missing.empty() ? "" : ", ") + k;
  if (!missing.empty())
    throw pred::ModelError("the dataset " + d.path + " lacks code features the model needs: " + missing +
                           " (sweep with --features)");
  Evaluation e;
  e.method = "evaluation of a trained model";
  e.model_type = m.type;
  pred::PredictorOptions po;
  po.cache_capacity = 0;
  const pred::Predictor p(m, po);
  size_t bc = best_constant(d, complete_workloads(d));
  const auto t = nlohmann::json::parse(m.training, nullptr, false);
  if (t.is_object() && t.contains("best_constant")) {
    const long i = config_index(d, t["best_constant"].value("cpu", -1.0), t["best_constant"].value("gpu", -1.0));
    if (i >= 0) bc = size_t(i);
    e.note = "best constant: the model's, from its training data";
  } else {
    e.note = "best constant: chosen on this dataset (in-sample)";
  }
  Collector col{d, {}, {}, {}, {}};
  for (size_t w : complete_workloads(d)) col.add(w, predict_best(p, m, d, d.workloads[w]), bc, 0);
  col.finish(e, "model (" + m.type + ")");
  return e;
}

std::string format_evaluation(const Evaluation& e) {
  std::string o;
  char b[512];
  std::snprintf(
      b, sizeof b, "%s of %s: %zu workloads%s%s\n", e.method.c_str(), e.model_type.c_str(),
      e.strategies.empty() ? size_t(0) : e.strategies[0].workloads,
      e.folds ? (", " + std::to_string(e.folds) + " folds").c_str() : "",
      e.train_seconds > 0 ? (", training " + std::to_string(e.train_seconds).substr(0, 6) + " s").c_str() : "");
  o += b;
  if (!e.note.empty()) o += "note: " + e.note + "\n";
  if (e.strategies.empty()) return o;
  std::snprintf(b, sizeof b, "%-16s %-12s %7s %7s | %6s %6s %6s | %6s %6s %6s %6s %6s %6s | %5s %5s\n", "strategy",
                "config", "best", "share", "dist", "d-p50", "d-p75", "perf", "geo", "min", "p5", "p25", "median",
                ">=90%", ">=95%");
  o += b;
  for (const Summary& s : e.strategies) {
    const std::string best = std::to_string(s.correct) + "/" + std::to_string(s.workloads);
    std::snprintf(b, sizeof b, "%-16s %-12s %7s %7s | %6s %6s %6s | %6s %6s %6s %6s %6s %6s | %5s %5s\n",
                  s.name.c_str(), s.config.empty() ? "-" : s.config.c_str(), best.c_str(), pct(s.correct_share).c_str(),
                  pct(s.dist_mean).c_str(), pct(s.dist_p50).c_str(), pct(s.dist_p75).c_str(), pct(s.perf_mean).c_str(),
                  pct(s.perf_geomean).c_str(), pct(s.perf_min).c_str(), pct(s.perf_p5).c_str(), pct(s.perf_p25).c_str(),
                  pct(s.perf_p50).c_str(), pct(s.share_ge_90).c_str(), pct(s.share_ge_95).c_str());
    o += b;
  }
  if (!e.per_kernel.empty()) {
    o += e.method == "leave-one-kernel-out" ? "per held-out kernel (mean normalised performance):\n"
                                            : "per kernel (mean normalised performance):\n";
    std::snprintf(b, sizeof b, "  %-28s %4s %7s %7s %7s %7s %7s\n", "kernel", "n", "model", "CPU", "GPU", "ALL",
                  "const");
    o += b;
    for (const auto& k : e.per_kernel) {
      std::snprintf(b, sizeof b, "  %-28s %4zu %7s %7s %7s %7s %7s\n", k.kernel.c_str(), k.workloads,
                    pct(k.model).c_str(), pct(k.cpu).c_str(), pct(k.gpu).c_str(), pct(k.all).c_str(),
                    pct(k.best_const).c_str());
      o += b;
    }
  }
  return o;
}

std::string evaluation_json(const Evaluation& e, const Dataset* data) {
  using nlohmann::json;
  json j;
  j["method"] = e.method;
  j["model_type"] = e.model_type;
  j["folds"] = e.folds;
  if (e.folds_requested) j["folds_requested"] = e.folds_requested;
  j["note"] = e.note;
  j["train_seconds"] = e.train_seconds;
  if (e.train_workloads) j["train_workloads"] = e.train_workloads;
  json st = json::array();
  for (const Summary& s : e.strategies)
    st.push_back({{"name", s.name},
                  {"config", s.config},
                  {"workloads", s.workloads},
                  {"correct", s.correct},
                  {"correct_share", s.correct_share},
                  {"distance", {{"mean", s.dist_mean}, {"p50", s.dist_p50}, {"p75", s.dist_p75}, {"p90", s.dist_p90}}},
                  {"perf",
                   {{"mean", s.perf_mean},
                    {"geomean", s.perf_geomean},
                    {"min", s.perf_min},
                    {"p5", s.perf_p5},
                    {"p10", s.perf_p10},
                    {"p25", s.perf_p25},
                    {"p50", s.perf_p50},
                    {"p75", s.perf_p75},
                    {"share_ge_90", s.share_ge_90},
                    {"share_ge_95", s.share_ge_95}}}});
  j["strategies"] = st;
  if (!e.per_kernel.empty()) {
    json pk = json::array();
    for (const auto& k : e.per_kernel)
      pk.push_back({{"kernel", k.kernel},
                    {"workloads", k.workloads},
                    {"model", k.model},
                    {"cpu", k.cpu},
                    {"gpu", k.gpu},
                    {"all", k.all},
                    {"best_constant", k.best_const}});
    j["per_kernel"] = pk;
  }
  if (data) {
    json decisions = json::array();
    const auto config = [&](const Workload& w, size_t c) {
      return json{{"cpu", data->configs[c].cpu}, {"gpu", data->configs[c].gpu}, {"ms", w.time_ms[c]}};
    };
    for (const Outcome& o : e.outcomes) {
      const Workload& w = data->workloads[o.workload];
      decisions.push_back({{"workload", w.name},
                           {"kernel", w.kernel},
                           {"set", w.set},
                           {"data_on", data_on_name(w.launch.data_on_gpu, w.launch.data_pinned)},
                           {"fold", o.fold},
                           {"chosen", config(w, o.predicted)},
                           {"best", config(w, w.best)},
                           {"perf", o.perf}});
    }
    j["decisions"] = decisions;
  }
  return j.dump();
}

}  // namespace dop::train
