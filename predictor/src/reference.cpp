// The reference backend (scorer.hpp): one full feature vector and one tree walk (or one sum of linear terms) per
// configuration, with no shortcut. It evaluates the models no fast backend can (a feature of both levels), and the
// tests check the fast backends against it.
#include "scorer.hpp"

namespace dop::pred {

double row_output(const Model& model, const float* x) {
  if (!model.trees.empty()) {
    float sum = model.base_score;
    for (const Tree& t : model.trees) {
      int32_t n = 0;
      while (t.left[size_t(n)] >= 0) {
        const float v = x[t.feature[size_t(n)]];
        const bool go_left = std::isnan(v) ? t.default_left[size_t(n)] != 0 : v < t.threshold[size_t(n)];
        n = go_left ? t.left[size_t(n)] : t.right[size_t(n)];
      }
      sum += t.value[size_t(n)];
    }
    return double(sum);
  }
  double sum = model.intercept;
  for (const LinearTerm& term : model.terms) {
    double prod = term.weight;
    for (const LinearFactor& f : term.factors) prod *= factor_value(x[f.feature], f.log1p, f.mean, f.scale);
    sum += prod;
  }
  return sum;
}

void reference_scores(const Model& model, const std::vector<Config>& configs, const double* code,
                      const LaunchShape& launch, double* out) {
  const size_t F = model.features.size();
  std::vector<float> rows(configs.size() * F);
  feature_vectors(model.features, model.platform, code, launch, configs, rows.data());
  for (size_t c = 0; c < configs.size(); ++c) out[c] = row_output(model, rows.data() + c * F);
}

namespace {

class ReferenceScorer final : public Scorer {
 public:
  explicit ReferenceScorer(const Model& model) : model_(model), configs_(model.configs()) {}
  void scores(const double* code, const LaunchShape& launch, double* out) const override {
    reference_scores(model_, configs_, code, launch, out);
  }

 private:
  const Model& model_;
  std::vector<Config> configs_;
};

}  // namespace

std::unique_ptr<Scorer> make_reference_scorer(const Model& model) { return std::make_unique<ReferenceScorer>(model); }

}  // namespace dop::pred
