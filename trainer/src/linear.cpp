// The linear baseline: ridge regression with Eigen on standardised features. Linear in the features alone, the
// argmax over configurations would not depend on the kernel (every kernel would get the same configuration), so
// the design also has the configuration's quadratic terms and its interactions with every other feature.
#include <Eigen/Dense>
#include <cmath>
#include <cstdlib>

#include "internal.hpp"

namespace dop::train::detail {

void train_linear(const Matrix& m, const std::map<std::string, std::string>& params, pred::Model& model) {
  double lambda = 10.0;
  for (const auto& [k, v] : params) {
    if (k == "lambda") {
      char* end = nullptr;
      lambda = std::strtod(v.c_str(), &end);
      if (!end || *end || !(lambda >= 0)) throw std::invalid_argument("lambda '" + v + "' must be a number >= 0");
    } else {
      throw std::invalid_argument("linear model: unknown parameter '" + k + "' (lambda)");
    }
  }
  const size_t n = m.rows, F = m.cols;
  if (n < 2) throw std::invalid_argument("linear model: fewer than 2 training rows");
  // Standardisation of each feature (log1p for non-negative non-configuration features), from the training rows.
  std::vector<pred::LinearFactor> base(F);
  std::vector<bool> usable(F, false), is_config(F, false);
  int c_util = -1, g_util = -1;
  for (size_t f = 0; f < F; ++f) {
    const pred::Feature& feat = model.features[f];
    is_config[f] = feat.source != pred::Source::code && pred::depends_on_config(feat.name);
    if (feat.name == "cpu_util") c_util = int(f);
    if (feat.name == "gpu_util") g_util = int(f);
    bool nonneg = true;
    for (size_t r = 0; r < n; ++r) {
      const float v = m.x[r * F + f];
      if (!std::isnan(v) && v < 0) nonneg = false;
    }
    pred::LinearFactor lf;
    lf.feature = int32_t(f);
    lf.log1p = nonneg && feat.name != "cpu_util" && feat.name != "gpu_util";
    double s = 0, s2 = 0;
    size_t k = 0;
    for (size_t r = 0; r < n; ++r) {
      const double v = double(m.x[r * F + f]);
      if (std::isnan(v)) continue;
      const double t = lf.log1p ? std::log1p(std::max(v, 0.0)) : v;
      s += t;
      s2 += t * t;
      ++k;
    }
    if (k < 2) continue;
    lf.mean = s / double(k);
    const double var = std::max(0.0, s2 / double(k) - lf.mean * lf.mean);
    if (!(var > 1e-18)) continue;
    lf.scale = std::sqrt(var);
    base[f] = lf;
    usable[f] = true;
  }
  // Terms: main effects; configuration quadratic terms; configuration x feature interactions.
  std::vector<pred::LinearTerm> terms;
  auto term = [&](std::initializer_list<int> fs) {
    pred::LinearTerm t;
    for (int f : fs) t.factors.push_back(base[size_t(f)]);
    terms.push_back(t);
  };
  for (size_t f = 0; f < F; ++f)
    if (usable[f]) term({int(f)});
  const bool have_c = c_util >= 0 && usable[size_t(c_util)], have_g = g_util >= 0 && usable[size_t(g_util)];
  if (have_c) term({c_util, c_util});
  if (have_g) term({g_util, g_util});
  if (have_c && have_g) term({c_util, g_util});
  for (size_t f = 0; f < F; ++f) {
    if (!usable[f] || is_config[f]) continue;
    if (have_c) term({int(f), c_util});
    if (have_g) term({int(f), g_util});
  }
  // Design matrix with an intercept column (not penalised); the same factor arithmetic as the predictor.
  const size_t p = terms.size() + 1;
  Eigen::MatrixXd X(n, p);
  Eigen::VectorXd y(n);
  for (size_t r = 0; r < n; ++r) {
    X(Eigen::Index(r), 0) = 1.0;
    y(Eigen::Index(r)) = double(m.y[r]);
    for (size_t t = 0; t < terms.size(); ++t) {
      double prod = 1.0;
      for (const auto& f : terms[t].factors) {
        const double v = double(m.x[r * F + size_t(f.feature)]);
        prod *= std::isnan(v) ? 0.0 : ((f.log1p ? std::log1p(std::max(v, 0.0)) : v) - f.mean) / f.scale;
      }
      X(Eigen::Index(r), Eigen::Index(t + 1)) = prod;
    }
  }
  Eigen::MatrixXd A = X.transpose() * X;
  for (size_t j = 1; j < p; ++j) A(Eigen::Index(j), Eigen::Index(j)) += lambda;
  const Eigen::VectorXd beta = A.ldlt().solve(X.transpose() * y);
  if (!beta.allFinite()) throw std::runtime_error("linear model: the ridge system has no finite solution");
  model.objective = "ridge";
  model.intercept = beta(0);
  for (size_t t = 0; t < terms.size(); ++t) terms[t].weight = beta(Eigen::Index(t + 1));
  model.terms = std::move(terms);
}

}  // namespace dop::train::detail
