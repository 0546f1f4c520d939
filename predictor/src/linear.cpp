// The linear backend (scorer.hpp): each factor of each term is computed once per decision (shared features) or once
// per level, and a configuration's output is the intercept plus its terms' products over those.
#include "scorer.hpp"

namespace dop::pred {

namespace {

class LinearScorer final : public Scorer {
 public:
  explicit LinearScorer(Layout layout);
  void scores(const double* code, const LaunchShape& l, double* out) const override;

 private:
  struct Factor {
    int feature;
    Axis axis;
    bool log1p;
    double mean, scale;
    size_t slot;  // shared: index into factors; per level: first of its levels
  };
  Layout layout_;
  std::vector<Factor> factors;
  std::vector<size_t> term_begin;  // factors of term t: [term_begin[t], term_begin[t + 1])
  size_t factor_slots = 0;
};

LinearScorer::LinearScorer(Layout layout) : layout_(std::move(layout)) {
  const Model& model = layout_.model;
  size_t slots = 0;
  for (const LinearTerm& t : model.terms) {
    term_begin.push_back(factors.size());
    for (const LinearFactor& f : t.factors) {
      const Axis a = layout_.axis[size_t(f.feature)];
      factors.push_back({f.feature, a, f.log1p, f.mean, f.scale, slots});
      slots += a == Axis::none ? 1 : layout_.levels(a);
    }
  }
  term_begin.push_back(factors.size());
  factor_slots = slots;
}

void LinearScorer::scores(const double* code, const LaunchShape& l, double* out) const {
  thread_local std::vector<double> factor_values;
  const Model& model = layout_.model;
  const double groups = double(l.num_groups());
  factor_values.resize(factor_slots);
  double* z = factor_values.data();
  // est_best_ms is the one estimate feature a linear model here can have (the others depend on both levels).
  const double best = layout_.uses_estimate ? layout_.best_estimate(code, l) : std::nan("");
  for (const Factor& f : factors) {
    if (f.axis == Axis::none) {
      z[f.slot] = factor_value(layout_.shared_value(f.feature, code, l, groups, best), f.log1p, f.mean, f.scale);
    } else {
      const int id = layout_.builtin[size_t(f.feature)];
      for (size_t lv = 0; lv < layout_.levels(f.axis); ++lv)
        z[f.slot + lv] =
            factor_value(static_cast<float>(layout_.level_value(id, l, groups, f.axis, lv)), f.log1p, f.mean, f.scale);
    }
  }
  const size_t T = term_begin.size() - 1;
  for (size_t c = 0; c < layout_.configs.size(); ++c) {
    double sum = model.intercept;
    for (size_t t = 0; t < T; ++t) {
      double prod = model.terms[t].weight;
      for (size_t k = term_begin[t]; k < term_begin[t + 1]; ++k) {
        const Factor& f = factors[k];
        prod *= z[f.slot + (f.axis == Axis::none  ? 0
                            : f.axis == Axis::cpu ? layout_.cpu_level[c]
                                                  : layout_.gpu_level[c])];
      }
      sum += prod;
    }
    out[c] = sum;
  }
}

}  // namespace

std::unique_ptr<Scorer> make_linear_scorer(Layout layout) { return std::make_unique<LinearScorer>(std::move(layout)); }

}  // namespace dop::pred
