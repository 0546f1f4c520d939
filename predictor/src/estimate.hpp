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
  bool data_pinned = false;  ///< host inputs in page-locked memory: the GPU's DMA reads them in place, unstaged

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
/// The share of the GPU's bandwidth that fraction `gpu` of its compute units draws.
inline double gpu_bandwidth_share(double gpu) { return std::sqrt(gpu); }

/// One device at one level of the grid, from the platform figures alone: what a work-item's traffic and operations
/// are divided by, and the launch overhead. The predictor computes it once per level of a model.
struct DeviceLevel {
  bool used = false;          ///< false: no CPU core, or the GPU at 0 (the device sits out)
  double stream_bytes_s = 0;  ///< streaming bandwidth (bytes/s)
  double gather_bytes_s = 0;  ///< random-access bandwidth (bytes/s); 0: not measured
  double ops_scale = 0;       ///< cores (the CPU) or the fraction of the compute units (the GPU), times 1e9
  double launch_s = 0;        ///< launch latency
};
/// The CPU with `cores` cores (0: unused).
DeviceLevel cpu_level(const PlatformFigures& f, double cores);
/// The GPU at fraction `gpu` of its compute units (0: unused).
DeviceLevel gpu_level(const PlatformFigures& f, double gpu);

/// What one launch asks of a device, whatever its level: the work-item's traffic (split into its streaming and its
/// random share), its operations, and the copies (the GPU, inputs in host memory). The predictor computes it once
/// per device and decision.
struct DeviceDemand {
  double traffic = 0;                             ///< bytes per work-item (EstimateInputs::traffic_per_item)
  double stream_traffic = 0, random_traffic = 0;  ///< traffic * (1 - random_share), traffic * random_share
  bool random = false;                            ///< random_share > 0
  double op_time = 0;   ///< float_ops / gops_float + int_ops / gops_int: over ops_scale, seconds per work-item
  bool copies = false;  ///< the inputs come in over the copy link (and the outputs go back)
  double copy_s = 0;    ///< seconds per work-item of the copies
  double copy_latency_s = 0;
  /// Host memory traffic per work-item: the CPU's own traffic; the GPU's staging of its copies (staging_passes
  /// times the bytes copied; 0 without copies or where the staging is not modelled).
  double host_bytes = 0;
};
DeviceDemand cpu_demand(const PlatformFigures& f, const EstimateInputs& in);
DeviceDemand gpu_demand(const PlatformFigures& f, const EstimateInputs& in);

/// A device's cost at one level for one launch: the slower of its memory and compute roofs per work-item (at least
/// a femtosecond), plus the copies. Inline: the predictor calls it for every level of every decision.
inline DeviceCost device_cost(const DeviceLevel& level, const DeviceDemand& d) {
  constexpr double kMinItemSeconds = 1e-15;  // a work-item that moves and computes nothing: keeps rates finite
  DeviceCost c;
  if (!level.used) return c;
  const double memory = d.random && level.gather_bytes_s > 0
                            ? d.stream_traffic / level.stream_bytes_s + d.random_traffic / level.gather_bytes_s
                            : d.traffic / level.stream_bytes_s;
  const double compute = d.op_time / level.ops_scale;
  c.per_item_s = std::max({memory, compute, kMinItemSeconds});
  c.overhead_s = level.launch_s;
  c.host_bytes_per_item = d.host_bytes;
  if (d.copies) {
    c.per_item_s += d.copy_s;
    c.overhead_s += d.copy_latency_s;
  }
  c.rate = 1 / c.per_item_s;
  return c;
}
/// The CPU's cost with `cores` cores (0: unused): device_cost(cpu_level(f, cores), cpu_demand(f, in)).
DeviceCost cpu_cost(const PlatformFigures& f, const EstimateInputs& in, double cores);
/// The GPU's cost at fraction `gpu` of its compute units (0: unused): device_cost(gpu_level(f, gpu),
/// gpu_demand(f, in)).
DeviceCost gpu_cost(const PlatformFigures& f, const EstimateInputs& in, double gpu);

/// The host memory bandwidth (GB/s) that the CPU's traffic and the GPU's staging share: the CPU's best triad
/// bandwidth where the figures model the staging (staging_passes > 0), else 0 (not modelled: the devices' rates are
/// independent, as in model files written before 2026-11-27).
double host_bandwidth_gbs(const PlatformFigures& f);

/// A device cost's terms in combined_ms for a launch of `items` work-items (the predictor computes them once per
/// level and decision), with the host memory bandwidth `host_bps` (bytes/s; 0: not modelled).
struct DeviceShare {
  bool used = false;
  double alone_s = INFINITY;  ///< the time of the device alone (+inf: unused): its work, and its host traffic
  double rate = 0, overhead_s = 0;
  double overhead_items = 0;     ///< rate * overhead_s
  double per_item_s = INFINITY;  ///< 1 / rate, kept: the host bound's crossings need it
  double host_s = 0;             ///< seconds of host memory traffic per work-item (0: not modelled)
};
inline DeviceShare device_share(const DeviceCost& c, double items, double host_bps = 0) {
  DeviceShare s;
  s.used = c.used();
  if (s.used) s.alone_s = items * c.per_item_s + c.overhead_s;
  s.rate = c.rate;
  s.overhead_s = c.overhead_s;
  s.overhead_items = c.rate * c.overhead_s;
  s.per_item_s = c.per_item_s;
  if (host_bps > 0) {
    s.host_s = c.host_bytes_per_item / host_bps;
    if (s.used) s.alone_s = std::max(s.alone_s, items * s.host_s);
  }
  return s;
}

namespace detail {
/// The least over the CPU's share n in (0, items) of max(CPU finish, GPU finish, host traffic / host bandwidth), +inf
/// where no share beats a device alone. The first two are the balanced shares' lines; where the host's line is above
/// them there, it falls (the GPU's items cost the host more) or rises with n, so the least is where it crosses the
/// CPU's line to the right or the GPU's to the left.
inline double shared_host_seconds(const DeviceShare& cpu, const DeviceShare& gpu, double items) {
  const double pc = cpu.per_item_s, pg = gpu.per_item_s, d = cpu.host_s - gpu.host_s;
  const double n = (gpu.overhead_s + items * pg - cpu.overhead_s) / (pc + pg);  // CPU = GPU
  if (!(n > 0 && n < items)) return INFINITY;
  const double balanced = cpu.overhead_s + n * pc, host = items * gpu.host_s + n * d;
  if (host <= balanced) return balanced;
  if (d < 0) {  // CPU = host, further right
    const double m = (items * gpu.host_s - cpu.overhead_s) / (pc - d);
    return m < items ? cpu.overhead_s + m * pc : INFINITY;
  }
  if (d > 0) {  // GPU = host, further left
    const double m = (gpu.overhead_s + items * (pg - gpu.host_s)) / (pg + d);
    return m > 0 ? gpu.overhead_s + (items - m) * pg : INFINITY;
  }
  return host;  // the host's time, whatever the shares
}
}  // namespace detail

/// The time (ms) of `items` work-items shared by the two devices so that they finish together; a device whose share
/// would be empty sits out (as the runtime's dynamic distribution does). Where the host bandwidth is modelled
/// (device_share's host_bps > 0) the host memory traffic of both shares bounds the time too, and the shares are the
/// ones that minimise it; a bound that cannot bind (one device moves nothing through host memory, the other less
/// than its own rate allows: resident data) is skipped. Inline: the predictor calls it for every configuration of a
/// decision.
inline double combined_ms(const DeviceShare& cpu, const DeviceShare& gpu, double items) {
  double t = std::min(cpu.alone_s, gpu.alone_s);
  if (cpu.used && gpu.used) {
    const bool host_binds = (cpu.host_s > 0 || gpu.host_s > 0) && !(gpu.host_s == 0 && cpu.host_s <= cpu.per_item_s) &&
                            !(cpu.host_s == 0 && gpu.host_s <= gpu.per_item_s);
    if (host_binds) return std::min(t, detail::shared_host_seconds(cpu, gpu, items)) * 1e3;
    // Shares n_c + n_g = items that finish together: n_d = rate_d * (T - overhead_d).
    const double both = (items + cpu.overhead_items + gpu.overhead_items) / (cpu.rate + gpu.rate);
    if (both >= std::max(cpu.overhead_s, gpu.overhead_s)) t = std::min(t, both);
  }
  return t * 1e3;
}
/// combined_ms of two costs, with the host memory bandwidth `host_gbs` (0: not modelled).
inline double combined_ms(const DeviceCost& cpu, const DeviceCost& gpu, double items, double host_gbs = 0) {
  return combined_ms(device_share(cpu, items, host_gbs * 1e9), device_share(gpu, items, host_gbs * 1e9), items);
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
