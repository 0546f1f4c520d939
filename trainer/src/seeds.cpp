// One evaluation over several training seeds: the spread of the model's metrics that the seed alone causes.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "dop/trainer.hpp"

namespace dop::train {

namespace {

// The metrics a spread reports: where each is in the model's Summary and in SeedSpread, its JSON key and its label.
struct Metric {
  double Summary::*value;
  SeedSpread::Stat SeedSpread::*stat;
  const char* key;
  const char* label;
};
constexpr Metric kMetrics[] = {
    {&Summary::perf_mean, &SeedSpread::perf_mean, "perf_mean", "perf"},
    {&Summary::perf_geomean, &SeedSpread::perf_geomean, "perf_geomean", "geo"},
    {&Summary::perf_min, &SeedSpread::perf_min, "perf_min", "min"},
    {&Summary::correct_share, &SeedSpread::correct_share, "correct_share", "best"},
};

// The model's summary of an evaluation (its first strategy), or nothing when the evaluation decided nothing.
const Summary* model_summary(const Evaluation& e) { return e.strategies.empty() ? nullptr : &e.strategies[0]; }

// A metric of the model, per seed (the seeds whose evaluation decided something).
std::vector<double> values(const SeedSpread& s, const Metric& metric) {
  std::vector<double> v;
  for (const auto& e : s.evaluations)
    if (const Summary* m = model_summary(e)) v.push_back(m->*metric.value);
  return v;
}

bool decided(const SeedSpread& s) { return !s.evaluations.empty() && model_summary(s.evaluations[0]); }

}  // namespace

SeedSpread over_seeds(const std::function<Evaluation(const TrainOptions&)>& evaluate, TrainOptions options,
                      size_t seeds) {
  if (seeds == 0) throw std::invalid_argument("seeds: at least one seed is needed");
  SeedSpread s;
  s.first_seed = options.seed;
  for (size_t k = 0; k < seeds; ++k) {
    options.seed = s.first_seed + k;
    s.evaluations.push_back(evaluate(options));
  }
  if (!decided(s)) return s;  // nothing decided (the note of the evaluation says why)
  for (const Metric& m : kMetrics) {
    const std::vector<double> v = values(s, m);
    SeedSpread::Stat& st = s.*m.stat;
    st.min = *std::min_element(v.begin(), v.end());
    st.max = *std::max_element(v.begin(), v.end());
    double sum = 0;
    for (double x : v) sum += x;
    st.mean = sum / double(v.size());
  }
  return s;
}

std::string format_seed_spread(const SeedSpread& s) {
  if (!decided(s)) return {};
  const uint64_t last = s.first_seed + s.evaluations.size() - 1;
  std::string o;
  char b[256];
  std::snprintf(b, sizeof b, "over %zu seeds (%llu..%llu), the model's mean [least .. greatest]:\n",
                s.evaluations.size(), static_cast<unsigned long long>(s.first_seed),
                static_cast<unsigned long long>(last));
  o += b;
  for (const Metric& m : kMetrics) {
    const SeedSpread::Stat& x = s.*m.stat;
    std::snprintf(b, sizeof b, "  %-10s %6.1f%%  [%5.1f%% .. %5.1f%%]\n", m.label, 100 * x.mean, 100 * x.min,
                  100 * x.max);
    o += b;
  }
  return o;
}

std::string seed_spread_json(const SeedSpread& s) {
  using nlohmann::json;
  json j = {{"seeds", s.evaluations.size()}, {"first_seed", s.first_seed}};
  if (!decided(s)) return j.dump();
  for (const Metric& m : kMetrics) {
    const SeedSpread::Stat& x = s.*m.stat;
    j[m.key] = {{"mean", x.mean}, {"min", x.min}, {"max", x.max}, {"values", values(s, m)}};
  }
  return j.dump();
}

}  // namespace dop::train
