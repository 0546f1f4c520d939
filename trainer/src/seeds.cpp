// One evaluation over several training seeds: the spread of the model's metrics that the seed alone causes.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "dop/trainer.hpp"

namespace dop::train {

namespace {

SeedSpread::Stat stat_of(const std::vector<double>& v) {
  SeedSpread::Stat s;
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / double(v.size());
  return s;
}

// The model's summary of an evaluation (its first strategy), or nothing when the evaluation decided nothing.
const Summary* model_summary(const Evaluation& e) { return e.strategies.empty() ? nullptr : &e.strategies[0]; }

template <typename F>
std::vector<double> values(const SeedSpread& s, F metric) {
  std::vector<double> v;
  for (const auto& e : s.evaluations)
    if (const Summary* m = model_summary(e)) v.push_back(metric(*m));
  return v;
}

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
  if (!model_summary(s.evaluations[0])) return s;  // nothing decided (the note of the evaluation says why)
  s.perf_mean = stat_of(values(s, [](const Summary& m) { return m.perf_mean; }));
  s.perf_geomean = stat_of(values(s, [](const Summary& m) { return m.perf_geomean; }));
  s.perf_min = stat_of(values(s, [](const Summary& m) { return m.perf_min; }));
  s.correct_share = stat_of(values(s, [](const Summary& m) { return m.correct_share; }));
  return s;
}

std::string format_seed_spread(const SeedSpread& s) {
  if (s.evaluations.empty() || !model_summary(s.evaluations[0])) return {};
  const uint64_t last = s.first_seed + s.evaluations.size() - 1;
  std::string o;
  char b[256];
  std::snprintf(b, sizeof b, "over %zu seeds (%llu..%llu), the model's mean [least .. greatest]:\n",
                s.evaluations.size(), static_cast<unsigned long long>(s.first_seed),
                static_cast<unsigned long long>(last));
  o += b;
  const auto line = [&](const char* what, const SeedSpread::Stat& x) {
    std::snprintf(b, sizeof b, "  %-10s %6.1f%%  [%5.1f%% .. %5.1f%%]\n", what, 100 * x.mean, 100 * x.min, 100 * x.max);
    o += b;
  };
  line("perf", s.perf_mean);
  line("geo", s.perf_geomean);
  line("min", s.perf_min);
  line("best", s.correct_share);
  return o;
}

std::string seed_spread_json(const SeedSpread& s) {
  using nlohmann::json;
  json j = {{"seeds", s.evaluations.size()}, {"first_seed", s.first_seed}};
  if (s.evaluations.empty() || !model_summary(s.evaluations[0])) return j.dump();
  const auto stat = [&](const SeedSpread::Stat& x, std::vector<double> v) {
    return json{{"mean", x.mean}, {"min", x.min}, {"max", x.max}, {"values", v}};
  };
  j["perf_mean"] = stat(s.perf_mean, values(s, [](const Summary& m) { return m.perf_mean; }));
  j["perf_geomean"] = stat(s.perf_geomean, values(s, [](const Summary& m) { return m.perf_geomean; }));
  j["perf_min"] = stat(s.perf_min, values(s, [](const Summary& m) { return m.perf_min; }));
  j["correct_share"] = stat(s.correct_share, values(s, [](const Summary& m) { return m.correct_share; }));
  return j.dump();
}

}  // namespace dop::train
