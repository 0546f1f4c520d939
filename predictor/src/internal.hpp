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
  kBuiltinCount
};

/// How a builtin feature varies over the configurations of one launch decision.
enum class BuiltinKind {
  constant,     ///< the same for every configuration (launch only)
  config_only,  ///< a function of the configuration and the platform only: fixed per grid position
  mixed         ///< depends on the configuration and the launch
};

int builtin_id(const std::string& name);  ///< -1 if unknown
BuiltinKind builtin_kind(int id);
double builtin_value(int id, const LaunchShape& launch, const Platform& platform, const Config& config);
double cpu_cores_of(double cpu_util, int cpu_units);

}  // namespace dop::pred
