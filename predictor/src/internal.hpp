// Internals shared by the predictor's sources (not installed): builtin feature ids and their computation.
#pragma once

#include "dop/predictor.hpp"

namespace dop::pred {

/// Positions in builtin_features().
enum BuiltinId : int {
  kWorkDim,
  kGlobalSize,
  kLocalSize,
  kNumGroups,
  kGlobalX,
  kGlobalY,
  kGlobalZ,
  kLocalX,
  kLocalY,
  kLocalZ,
  kGroupsPerGpuUnit,
  kGpuWaves,
  kCpuCores,
  kGroupsPerCpuCore,
  kCpuWaves,
  kGpuItemsPerUnit,
  kCpuUtil,
  kGpuUtil,
  kDataOnGpu,
  kInBytes,
  kOutBytes,
  kGpuRecvBytes,
  kEstMs,  // the analytic estimate (estimate.hpp): reads code features, so builtin_value does not compute it
  kEstRel,
  kEstBestMs,
  kDataPinned,  // after the estimate's, so that the ids of the features before it stay what they were
  kBuiltinCount
};

/// How a builtin feature varies over the configurations of one launch decision.
enum class BuiltinKind {
  constant,     ///< the same for every configuration (launch only)
  config_only,  ///< a function of the configuration and the platform only: fixed per grid position
  mixed         ///< depends on the configuration and the launch
};

/// Which coordinate of the configuration a builtin depends on: none, the CPU level only, the GPU level only, both.
enum class Axis { none, cpu, gpu, both };

int builtin_id(const std::string& name);  ///< -1 if unknown
BuiltinKind builtin_kind(int id);
Axis builtin_axis(int id);
double builtin_value(int id, const LaunchShape& launch, const Platform& platform, const Config& config);
/// The same with the launch's work-group count computed by the caller (it costs three divisions).
double builtin_value(int id, const LaunchShape& launch, double num_groups, const Platform& platform,
                     const Config& config);
double cpu_cores_of(double cpu_util, int cpu_units);
/// The estimate features (est_ms, est_rel, est_best_ms): they read code features, so builtin_value does not
/// compute them.
inline bool is_estimate(int id) { return id == kEstMs || id == kEstRel || id == kEstBestMs; }

}  // namespace dop::pred
