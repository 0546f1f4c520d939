// The predictor: every configuration of the grid evaluated per launch decision by a scoring backend (scorer.hpp),
// decisions memoised (memo.hpp).
#include <limits>
#include <memory>

#include "dop/predictor.hpp"
#include "memo.hpp"
#include "scorer.hpp"

namespace dop::pred {

struct Predictor::Impl {
  Impl(Model m, PredictorOptions o)
      : model(std::move(m)),
        options(std::move(o)),
        configs(model.configs()),
        scorer(make_scorer(model)),
        memo(options.cache_capacity) {}
  Model model;
  PredictorOptions options;
  std::vector<Config> configs;
  std::unique_ptr<Scorer> scorer;  // reads model
  Memo memo;
};

Predictor::Predictor(Model model, PredictorOptions options) {
  model.validate("model");
  if (!options.platform_id.empty() && options.platform_id != model.platform.id)
    throw ModelError("the model was trained for platform '" + model.platform.id + "', not for '" + options.platform_id +
                     "': train one for this platform (dop sweep, dop train)");
  impl_ = std::make_unique<Impl>(std::move(model), std::move(options));
}

Predictor Predictor::load(const std::string& path, PredictorOptions options) {
  Model m = Model::load(path);
  if (!options.platform_id.empty() && options.platform_id != m.platform.id)
    throw ModelError(path + ": the model was trained for platform '" + m.platform.id + "', not for '" +
                     options.platform_id + "'");
  return Predictor(std::move(m), std::move(options));
}

Predictor::~Predictor() = default;
Predictor::Predictor(Predictor&&) noexcept = default;
Predictor& Predictor::operator=(Predictor&&) noexcept = default;

const Model& Predictor::model() const { return impl_->model; }
size_t Predictor::num_configs() const { return impl_->configs.size(); }

void Predictor::scores_reference(const double* code, const LaunchShape& launch, double* out) const {
  reference_scores(impl_->model, impl_->configs, code, launch, out);
}

void Predictor::scores(const double* code, const LaunchShape& launch, double* out) const {
  impl_->scorer->scores(code, launch, out);
}

std::vector<double> Predictor::scores(const CodeFeatures& code, const LaunchShape& launch,
                                      const ArgValues& args) const {
  const auto cv = code_vector(impl_->model.features, code, launch, args);
  std::vector<double> out(impl_->configs.size());
  scores(cv.data(), launch, out.data());
  return out;
}

double Predictor::predict_row(const float* x) const { return row_output(impl_->model, x); }

size_t pick_config(const std::vector<Config>& configs, const double* scores, double mixed_margin) {
  // The first of equal values: the best so far in a register, not reloaded per configuration. -inf starts it, so
  // that a NaN (which compares false) is never taken over a number.
  size_t best = 0;
  double best_value = -std::numeric_limits<double>::infinity();
  for (size_t c = 0; c < configs.size(); ++c) {
    const double v = configs[c].cpu > 0 && configs[c].gpu > 0 ? scores[c] - mixed_margin : scores[c];
    if (v > best_value) {
      best = c;
      best_value = v;
    }
  }
  return best;
}

Decision Predictor::decide(const double* code, const LaunchShape& launch) const {
  const size_t C = impl_->configs.size();
  thread_local std::vector<double> out;
  out.resize(C);
  scores(code, launch, out.data());
  const size_t best = pick_config(impl_->configs, out.data(), impl_->model.mixed_margin);
  Decision d;
  d.config = impl_->configs[best];
  d.index = best;
  d.predicted = out[best];
  return d;
}

Decision Predictor::decide(const CodeFeatures& code, const LaunchShape& launch, const ArgValues& args) const {
  const auto cv = code_vector(impl_->model.features, code, launch, args);
  return decide(cv.data(), launch);
}

std::optional<Decision> Predictor::cached(const std::string& kernel_id, const LaunchShape& launch,
                                          const ArgValues& args) const {
  const Memo& memo = impl_->memo;
  if (!memo.enabled()) return std::nullopt;
  return memo.find(Memo::key(kernel_id, launch, args));
}

Decision Predictor::decide(const std::string& kernel_id, const CodeFeatures& code, const LaunchShape& launch,
                           const ArgValues& args) const {
  Memo& memo = impl_->memo;
  if (!memo.enabled()) return decide(code, launch, args);
  const std::string key = Memo::key(kernel_id, launch, args);
  if (auto d = memo.find(key)) return *d;
  const Decision d = decide(code, launch, args);  // outside the lock: decisions of other launches go on
  memo.insert(key, d);
  return d;
}

size_t Predictor::cache_size() const { return impl_->memo.size(); }

void Predictor::clear_cache() const { impl_->memo.clear(); }

}  // namespace dop::pred
