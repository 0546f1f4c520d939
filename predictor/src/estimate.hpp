// The analytic time estimate (not installed): a roofline-style model of one configuration's time from the platform
// figures (PlatformFigures), the kernel's static bytes and operations per work-item, and the launch size. The trees
// get it as the derived features est_ms and est_rel and learn what it misses (docs/models.md, "Estimate").
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dop/predictor.hpp"

namespace dop::pred {

/// What the estimate knows of one launch. NaN marks what is unknown.
struct EstimateInputs {
  double items = 0;  ///< work-items (global size)
  /// Global bytes a work-item moves, from the analysis (global_bytes_per_item, loops included).
  double bytes_per_item = std::numeric_limits<double>::quiet_NaN();
  /// Global memory operations of a work-item as written in the source (the Table 1 classes): the traffic's last
  /// resort, at 4 bytes each.
  double mem_ops_per_item = std::numeric_limits<double>::quiet_NaN();
  double float_ops_per_item = 0, int_ops_per_item = 0;  ///< arithmetic operations a work-item executes
  /// The share of the memory operations at data-dependent (random) addresses (mem_random over all of them; 0 when
  /// unknown): that share of the traffic moves at the gather bandwidths where the platform has them.
  double random_share = 0;
  /// Bytes the launch's buffers hold for reading and writing (what a GPU receives and sends back when the data is
  /// in host memory). Unknown (NaN): the traffic items * bytes_per_item stands for both together.
  double in_bytes = std::numeric_limits<double>::quiet_NaN();
  double out_bytes = std::numeric_limits<double>::quiet_NaN();
  bool data_on_gpu = false;  ///< the inputs are resident on the GPU: no copies

  /// Bytes a work-item moves for the memory roof: the analysis' count; else the buffers' bytes (in + out) spread
  /// over the work-items; else 4 bytes per memory operation. NaN when none is known.
  double traffic_per_item() const {
    if (std::isfinite(bytes_per_item)) return bytes_per_item;
    if (std::isfinite(in_bytes) && std::isfinite(out_bytes) && items > 0) return (in_bytes + out_bytes) / items;
    return 4 * mem_ops_per_item;
  }
  bool known() const { return items > 0 && std::isfinite(traffic_per_item()); }
};

/// One device's part of a configuration: seconds per work-item and fixed overhead (seconds). An unused device has
/// no rate (per_item = +inf).
struct DeviceCost {
  double per_item_s = std::numeric_limits<double>::infinity();
  double rate = 0;  ///< work-items per second: 1 / per_item_s
  double overhead_s = 0;
  /// Bytes of host memory traffic a work-item of this device's share causes: the CPU's own traffic; with host data,
  /// the GPU's staging (each copied byte crosses host memory PlatformFigures::staging_passes times). Read only where
  /// the host bandwidth is modelled (host_gbs > 0).
  double host_bytes_per_item = 0;
  bool used() const { return std::isfinite(per_item_s); }
};

/// CPU triad bandwidth at `cores` (GB/s): linear between the measured core counts, the last beyond them, never
/// decreasing with cores (a running maximum), 0 for no core.
double cpu_bandwidth_gbs(const PlatformFigures& f, double cores);
/// The CPU's cost with `cores` cores (0: unused): cpu_cost_at(f, in, cores, cpu_bandwidth_gbs(f, cores)).
DeviceCost cpu_cost(const PlatformFigures& f, const EstimateInputs& in, double cores);
/// cpu_cost with the bandwidth at `cores` given (the predictor computes it once per CPU level of a model).
DeviceCost cpu_cost_at(const PlatformFigures& f, const EstimateInputs& in, double cores, double bandwidth_gbs);
/// The GPU's cost at fraction `gpu` of its compute units (0: unused): gpu_cost_at(f, in, gpu,
/// gpu_bandwidth_share(gpu)).
DeviceCost gpu_cost(const PlatformFigures& f, const EstimateInputs& in, double gpu);
/// The share of the GPU's bandwidth that fraction `gpu` of its compute units draws.
inline double gpu_bandwidth_share(double gpu) { return std::sqrt(gpu); }
/// gpu_cost with gpu_bandwidth_share(gpu) given (the predictor computes it once per GPU level of a model).
DeviceCost gpu_cost_at(const PlatformFigures& f, const EstimateInputs& in, double gpu, double bandwidth_share);
/// The host memory bandwidth (GB/s) that the CPU's traffic and the GPU's staging share: the CPU's best triad
/// bandwidth where the figures model the staging (staging_passes > 0), else 0 (not modelled: the devices' rates are
/// independent, as in model files written before 2026-11-27).
double host_bandwidth_gbs(const PlatformFigures& f);

namespace detail {
/// The least over the CPU's share n in (0, items) of max(CPU finish, GPU finish, host traffic / host bandwidth):
/// the three are linear in n, so the least is where two of them cross (host_bps: bytes per second, > 0).
inline double shared_host_seconds(const DeviceCost& cpu, const DeviceCost& gpu, double items, double host_bps) {
  const double pc = cpu.per_item_s, pg = gpu.per_item_s, hc = cpu.host_bytes_per_item / host_bps,
               hg = gpu.host_bytes_per_item / host_bps;
  auto at = [&](double n) -> double {
    if (!(n > 0 && n < items)) return INFINITY;
    return std::max({cpu.overhead_s + n * pc, gpu.overhead_s + (items - n) * pg, n * hc + (items - n) * hg});
  };
  auto cross = [](double num, double den) -> double { return den != 0 ? num / den : NAN; };
  return std::min({at(cross(gpu.overhead_s + items * pg - cpu.overhead_s, pc + pg)),     // CPU = GPU
                   at(cross(items * hg - cpu.overhead_s, pc - hc + hg)),                 // CPU = host
                   at(cross(gpu.overhead_s + items * pg - items * hg, pg + hc - hg))});  // GPU = host
}
}  // namespace detail

/// The time (ms) of `items` work-items shared by the two devices so that they finish together; a device whose share
/// would be empty sits out (as the runtime's dynamic distribution does). With a host bandwidth (host_gbs > 0) the
/// host memory traffic of both shares (DeviceCost::host_bytes_per_item) bounds the time too, and the shares are the
/// ones that minimise it. Inline: the predictor calls it for every configuration of a decision.
inline double combined_ms(const DeviceCost& cpu, const DeviceCost& gpu, double items, double host_gbs = 0) {
  const double host_bps = host_gbs * 1e9;
  auto alone = [&](const DeviceCost& d) -> double {
    if (!d.used()) return INFINITY;
    const double t = items * d.per_item_s + d.overhead_s;
    return host_bps > 0 ? std::max(t, items * d.host_bytes_per_item / host_bps) : t;
  };
  double t = std::min(alone(cpu), alone(gpu));
  if (cpu.used() && gpu.used()) {
    if (host_bps > 0) return std::min(t, detail::shared_host_seconds(cpu, gpu, items, host_bps)) * 1e3;
    // Shares n_c + n_g = items that finish together: n_d = rate_d * (T - overhead_d).
    const double both = (items + cpu.rate * cpu.overhead_s + gpu.rate * gpu.overhead_s) / (cpu.rate + gpu.rate);
    if (both >= std::max(cpu.overhead_s, gpu.overhead_s)) t = std::min(t, both);
  }
  return t * 1e3;
}

/// The estimate of one configuration's time in ms: combined_ms(cpu_cost(cores), gpu_cost(config.gpu)), with
/// cores = cpu_cores_of(config.cpu, cpu_units). NaN when the inputs are not known().
double estimate_ms(const PlatformFigures& f, const EstimateInputs& in, const Config& config, int cpu_units);
/// The best estimate of the platform: the least of (1, 0), (0, 1) and (1, 1). The estimate never grows with either
/// level, so this is the least estimate of any grid whose top levels are 1 (est_rel's denominator).
double best_estimate_ms(const PlatformFigures& f, const EstimateInputs& in, int cpu_units);

/// Positions, in the code vector of a feature list, of the code features the estimate reads (-1: absent).
struct EstimateKeys {
  int bytes_per_item = -1, arith_float = -1, arith_int = -1, arith_special = -1;
  int mem_ops[4] = {-1, -1, -1, -1};  ///< the Table 1 classes (constant, continuous, stride, random)
};
EstimateKeys estimate_keys(const std::vector<Feature>& features);
/// The estimate's inputs of a launch from the model's code vector (docs/models.md says how each is derived).
EstimateInputs estimate_inputs(const EstimateKeys& keys, const double* code, const LaunchShape& launch);

/// The figures as the model file's "estimate" section, and back: figures_from_json throws ModelError naming the
/// field ("<origin>: <path>.<field>: <problem>") for a missing, mistyped or out-of-range figure.
nlohmann::ordered_json figures_to_json(const PlatformFigures& f);
PlatformFigures figures_from_json(const nlohmann::json& section, const std::string& path, const std::string& origin);
/// Throws ModelError("<where>: <prefix><field>: <problem>") for the first figure that is not finite and positive
/// (latencies may be 0) or a bandwidth table that is empty or not in increasing core order.
void validate_figures(const PlatformFigures& f, const std::string& where, const std::string& prefix);

}  // namespace dop::pred
