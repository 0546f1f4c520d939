// Internals of the trainer (not installed).
#pragma once

#include <string>
#include <vector>

#include "dop/trainer.hpp"

namespace dop::train::detail {

/// A training matrix: one row per (workload, configuration), workloads contiguous (ranking groups).
struct Matrix {
  size_t rows = 0, cols = 0;
  std::vector<float> x;             ///< row-major, NaN = missing
  std::vector<float> y;             ///< normalised performance
  std::vector<float> weight;        ///< per row (TrainOptions::set_weights); empty: every row weighs 1
  std::vector<unsigned> group_ptr;  ///< row offsets of the workloads: 0, 44, 88, ...
};

/// The platform record a model of this dataset gets.
pred::Platform platform_of(const Dataset& data, const TrainOptions& options);

/// The rows of the workloads' measured configurations (of the `sample` that sample_configurations picks, when not
/// 0), each workload's target normalised by the best of its rows.
Matrix build_matrix(const Dataset& data, const std::vector<size_t>& workloads, const std::vector<pred::Feature>& f,
                    const pred::Platform& platform, size_t sample,
                    const std::map<std::string, double>& set_weights = {});

/// Mean normalised performance per configuration over the complete workloads among `ws` (the best constant's
/// criterion: it needs the oracle).
std::vector<double> mean_perf(const Dataset& data, const std::vector<size_t>& ws);

/// XGBoost models (dt, rf, gbt, rank): fills model.trees, base_score, objective. When `check_rows` is not null,
/// also returns XGBoost's predictions for those rows.
void train_xgboost(const Matrix& m, const TrainOptions& options, const std::map<std::string, std::string>& params,
                   pred::Model& model, const std::vector<float>* check_rows, std::vector<float>* check_out);

/// Ridge regression on standardised (log1p for counts) features, with the configuration's quadratic terms and its
/// interactions with every other feature; fills model.intercept and model.terms.
void train_linear(const Matrix& m, const std::map<std::string, std::string>& params, pred::Model& model);

double percentile(std::vector<double> v, double p);  ///< linear interpolation between closest ranks (numpy's)

}  // namespace dop::train::detail
