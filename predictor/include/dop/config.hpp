// dop configurations: the one type for a degree-of-parallelism choice (shares of the CPU's cores and of the GPU)
// and the platform's grid of them. Used by the predictor (what it decides), the runtime (what it runs), the sweep
// and the trainer (what datasets record). C++17 only.
#pragma once

#include <string>
#include <vector>

namespace dop {

/// A degree-of-parallelism configuration: the share of CPU cores and of each GPU work-group that is active.
struct Config {
  double cpu = 0;  ///< cpu_util in [0, 1]; the core count is round(cpu * cores), at least 1 when cpu > 0
  double gpu = 0;  ///< gpu_util in [0, 1], in steps of 1/8 (dop_gpu_alloc / dop_gpu_mod with dop_gpu_mod = 8)
  bool operator==(const Config& o) const { return cpu == o.cpu && gpu == o.gpu; }
  bool operator!=(const Config& o) const { return !(*this == o); }
};
/// Parses "CPU,GPU" with utilisations in [0,1] ("1,0.25"); throws std::invalid_argument naming the problem.
Config parse_config(const std::string& text);
std::string to_string(const Config& c);

/// The platform's grid of configurations: CPU levels x GPU levels, without (0, 0). Default 5 x 9 - 1 = 44.
struct Grid {
  std::vector<double> cpu_levels{0, 0.25, 0.5, 0.75, 1};
  std::vector<double> gpu_levels{0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1};
  /// Every configuration in grid order: CPU level major, GPU level minor, without (0, 0).
  std::vector<Config> configs() const;
};

}  // namespace dop
