// The predictor's scoring backends (not installed): one interface, one file per backend, one factory.
//
// A backend computes the model's output for every configuration of the grid for one launch decision. The
// configurations of one decision share their code and launch features; the other features depend on the CPU level
// only (cpu_util, cpu_cores, cpu_waves, ...) or on the GPU level only (gpu_util, ...). The fast backends use that
// structure instead of walking every tree once per configuration:
//
//   bitvector.cpp  tree ensembles of trees with at most 64 leaves (or grids of more than 64 configurations): the
//                  QuickScorer bit vectors
//   walk.cpp       tree ensembles with larger trees: one walk of all configurations together
//   linear.cpp     linear models: each factor once per decision or once per level
//   reference.cpp  any model: one full feature vector and one tree walk per configuration (features of both levels,
//                  and the tests' check of the others)
//
// All of them give bit-identical outputs: tree leaves are summed in tree order in float, as XGBoost does.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "dop/predictor.hpp"
#include "estimate.hpp"
#include "internal.hpp"

namespace dop::pred {

/// Where each input of a model comes from and how it varies over the grid, computed once per model: what every
/// backend needs to compute a feature's value for a decision (shared by its configurations) or for one level.
struct Layout {
  explicit Layout(const Model& model);

  const Model& model;
  std::vector<Config> configs;               // Model::configs()
  std::vector<int> builtin;                  // per feature: builtin id, -1 for code features
  std::vector<int> code_index;               // per feature: index into the code vector, -1 for builtins
  std::vector<Axis> axis;                    // per feature
  std::vector<size_t> cpu_level, gpu_level;  // per configuration: its level indices
  std::vector<double> level_cores;           // CPU cores at each CPU level (cpu_cores_of, computed once)
  EstimateKeys estimate_keys;                // where the estimate's code features are (estimate.hpp)
  bool uses_estimate = false;                // a feature is est_ms, est_rel or est_best_ms
  // The estimate's devices at each CPU and GPU level, computed once (estimate.hpp: cpu_level, gpu_level).
  std::vector<DeviceLevel> cpu_device, gpu_device;
  double host_bps = 0;  // the host memory bandwidth the estimate's devices share (bytes/s; 0: not modelled)
  // The configurations (1, 0), (0, 1) and (1, 1) whose least estimate is est_best_ms (best_estimate_ms), -1 where
  // the grid lacks one (then best_estimate_ms computes it).
  long corner[3] = {-1, -1, -1};

  /// The estimate features of every configuration of one decision (configs order), as feature_vector computes
  /// them: est_ms, and est_rel = est_ms / the platform's best estimate, which it returns (est_best_ms; NaN when the
  /// estimate knows nothing of the launch). Each device's cost is computed once per level, the combination once per
  /// configuration, the best from the corners' combinations.
  double estimates(const double* code, const LaunchShape& l, std::vector<double>& est_ms,
                   std::vector<double>& est_rel) const;
  /// est_best_ms of one decision.
  double best_estimate(const double* code, const LaunchShape& l) const;

  /// The value of feature f, one that the configurations share (Axis::none); `best` is the decision's est_best_ms
  /// (from estimates() or best_estimate(); read only when f is est_best_ms).
  float shared_value(int f, const double* code, const LaunchShape& l, double groups, double best) const {
    const int id = builtin[size_t(f)];
    return id < 0             ? static_cast<float>(code[code_index[size_t(f)]])
           : id == kEstBestMs ? static_cast<float>(best)
                              : static_cast<float>(builtin_value(id, l, groups, model.platform, Config{}));
  }
  Config level_config(Axis a, size_t level) const {
    return a == Axis::cpu ? Config{model.cpu_levels[level], 0} : Config{0, model.gpu_levels[level]};
  }
  /// Levels of an axis; the "levels" of a feature of both axes (the estimate) are the configurations.
  size_t levels(Axis a) const {
    return a == Axis::cpu ? model.cpu_levels.size() : a == Axis::gpu ? model.gpu_levels.size() : configs.size();
  }
  /// builtin_value(id, l, groups, platform, level_config(a, level)) for the builtins of one level, without
  /// recomputing the configuration's core count (the same arithmetic, so the same values). Inline: the backends
  /// call it for every level of every level feature of a decision.
  double level_value(int id, const LaunchShape& l, double groups, Axis a, size_t level) const {
    switch (id) {
      case kGroupsPerCpuCore: {
        const double k = level_cores[level];
        return k > 0 ? groups / k : 0;
      }
      case kCpuWaves: {
        const double k = level_cores[level];
        return k > 0 ? std::ceil(groups / k) : 0;
      }
      case kGpuItemsPerUnit:
        return double(l.global_size()) * model.gpu_levels[level] / double(std::max(1, model.platform.gpu_units));
      default:
        return builtin_value(id, l, groups, model.platform, level_config(a, level));
    }
  }
};

/// One scoring backend, compiled from a model when the Predictor is made.
class Scorer {
 public:
  virtual ~Scorer() = default;
  /// out[c]: the model's output for configuration c (Model::configs() order); code in code-feature order.
  virtual void scores(const double* code, const LaunchShape& launch, double* out) const = 0;
};

/// The fastest backend that can evaluate `model` (which must outlive it).
std::unique_ptr<Scorer> make_scorer(const Model& model);

// The backends (the factory picks one).
std::unique_ptr<Scorer> make_bitvector_scorer(Layout layout);
std::unique_ptr<Scorer> make_walk_scorer(Layout layout);
std::unique_ptr<Scorer> make_linear_scorer(Layout layout);
std::unique_ptr<Scorer> make_reference_scorer(const Model& model);

/// The reference evaluation: one full feature vector (feature_vector) and one row_output per configuration.
void reference_scores(const Model& model, const std::vector<Config>& configs, const double* code,
                      const LaunchShape& launch, double* out);
/// The model's output for one explicit feature vector (Model::features order), as XGBoost would compute it.
double row_output(const Model& model, const float* x);

/// A linear model's standardised factor: (t(x) - mean) / scale, t = log1p or the identity; 0 for a missing x.
inline double factor_value(float x, bool log1p, double mean, double scale) {
  const double v = double(x);
  return std::isnan(v) ? 0.0 : ((log1p ? std::log1p(std::max(v, 0.0)) : v) - mean) / scale;
}

}  // namespace dop::pred
