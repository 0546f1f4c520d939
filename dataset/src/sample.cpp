// sample_configurations: the configurations a training sweep measures of each workload when the full grid does not
// fit the device budget (dop sweep --configs N), and the trainer's rule to subsample a full dataset alike.
#include <algorithm>
#include <cstdint>

#include "dop/dataset.hpp"

namespace dop {

namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

std::vector<size_t> sample_configurations(const std::vector<double>& cpu, const std::vector<double>& gpu,
                                          const std::string& workload, size_t n) {
  const size_t count = std::min(cpu.size(), gpu.size());
  std::vector<size_t> all(count);
  for (size_t i = 0; i < count; ++i) all[i] = i;
  if (n == 0 || n >= count) return all;
  const double cmax = count ? *std::max_element(cpu.begin(), cpu.end()) : 0;
  const double gmax = count ? *std::max_element(gpu.begin(), gpu.end()) : 0;
  std::vector<size_t> chosen, rest;
  for (size_t i = 0; i < count; ++i) {
    const bool corner =
        (cpu[i] == cmax && gpu[i] == 0) || (cpu[i] == 0 && gpu[i] == gmax) || (cpu[i] == cmax && gpu[i] == gmax);
    (corner ? chosen : rest).push_back(i);
  }
  // The others in grid order (CPU level major) cut into equal strata, one configuration from each at an offset drawn
  // from the workload's name: every CPU level is covered, the GPU levels vary from workload to workload.
  const size_t k = n > chosen.size() ? n - chosen.size() : 0;
  uint64_t state = fnv1a(workload);
  for (size_t s = 0; s < k && !rest.empty(); ++s) {
    const size_t lo = s * rest.size() / k, hi = (s + 1) * rest.size() / k;
    chosen.push_back(rest[lo + size_t(splitmix(state) % std::max<size_t>(1, hi - lo))]);
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

}  // namespace dop
