// Collects the workloads of a sweep: named sets (synthetic generator, real-world kernels) and spec files.
#pragma once

#include <string>
#include <vector>

#include "dop/sweep.hpp"

namespace dop::cli {

/// set: "" | paper | extended | span | real | all; specs: extra spec files; size: the real-world kernels' size tag;
/// scale: the synthetic size scale. Throws std::invalid_argument for an unknown set.
std::vector<Workload> collect_workloads(const std::string& set, const std::vector<std::string>& specs,
                                        const std::string& size, double scale);

}  // namespace dop::cli
