// Small statistics shared by the subcommands that print measurements.
#pragma once

#include <algorithm>
#include <vector>

namespace dop::cli {

/// Median of a non-empty sample (mean of the two middle values for an even count).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// The q-quantile (0..1) by nearest rank; 0 for an empty sample.
inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5))];
}

}  // namespace dop::cli
