// dop runtime: runs one kernel across a CPU and a GPU at a chosen degree of parallelism, with dynamic work
// distribution (Dopia Algorithm 1, adaptive chunks). Runtime tier: OpenCL only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dop/cl.hpp"
#include "dop/spec.hpp"

namespace dop {

/// A degree-of-parallelism configuration: the share of CPU cores and of each GPU work-group that is active.
struct Config {
  double cpu = 0;  ///< cpu_util in [0, 1]; the core count is round(cpu * cores), at least 1 when cpu > 0
  double gpu = 0;  ///< gpu_util in [0, 1], in steps of 1/8 (dop_gpu_alloc / dop_gpu_mod with dop_gpu_mod = 8)
  bool operator==(const Config& o) const { return cpu == o.cpu && gpu == o.gpu; }
};
/// Parses "CPU,GPU" with utilisations in [0,1] ("1,0.25"); throws std::invalid_argument naming the problem.
Config parse_config(const std::string& text);
std::string to_string(const Config& c);

/// The platform's grid of configurations: CPU levels x GPU levels, without (0, 0). Default 5 x 9 - 1 = 44.
struct Grid {
  std::vector<double> cpu_levels{0, 0.25, 0.5, 0.75, 1};
  std::vector<double> gpu_levels{0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1};
  std::vector<Config> configs() const;
};

/// How buffers reach the GPU.
enum class MemoryMode {
  automatic,  ///< zero-copy where the GPU shares host memory (CL_DEVICE_HOST_UNIFIED_MEMORY), copies otherwise
  zero_copy,  ///< CL_MEM_USE_HOST_PTR on both devices over the same host memory
  copy        ///< GPU buffers of its own: inputs copied in, outputs copied back and merged
};
MemoryMode parse_memory_mode(const std::string& s);
const char* memory_mode_name(MemoryMode m);

struct ExecutorOptions {
  MemoryMode memory = MemoryMode::automatic;
  /// Malleable GPU form (Dopia Figs. 5-6): the same kernel with two extra trailing int arguments dop_gpu_mod and
  /// dop_gpu_alloc. Empty: the GPU always runs unthrottled, and results say so when a fraction < 1 was asked for.
  std::string malleable_source;
  std::string malleable_note;  ///< why there is no malleable form (barriers, local memory, ...), for results
  double target_chunk_ms = 2.0;  ///< adaptive chunks aim at this much device time per chunk
  /// CPU levels whose sub-devices are built together on first use (one context, one compilation).
  std::vector<double> cpu_levels = Grid{}.cpu_levels;
};

struct DeviceStats {
  std::string device;       ///< device id ("pocl:0"), "" when unused
  int units = 0;            ///< cores (CPU) or active work-items out of dop_gpu_mod (GPU)
  size_t work_groups = 0;   ///< work-groups this device ran, in the geometry it ran them (see work_items)
  /// Work-items this device ran. The CPU runs a kernel that cannot observe its work-groups (no barriers, local
  /// memory, local or group ids) in finer work-groups when the spec's are few, so work_items is the exact share.
  size_t work_items = 0;
  size_t chunks = 0;        ///< kernel enqueues
  double busy_ms = 0;       ///< sum of kernel execution times (profiling events)
  double finish_ms = 0;     ///< wall time from launch start until this device's last chunk completed
};

struct LaunchResult {
  Config config;
  int cpu_cores = 0;        ///< actual CPU cores used
  int gpu_mod = 8, gpu_alloc = 0;
  bool gpu_throttled = false;  ///< the malleable form ran with gpu_alloc < gpu_mod
  MemoryMode memory = MemoryMode::automatic;  ///< the mode actually used
  std::string note;         ///< e.g. why the GPU ran unthrottled
  DeviceStats cpu, gpu;
  double total_ms = 0;      ///< end to end: host-resident inputs to host-resident outputs
  /// Copy mode, parts of total_ms: h2d = wall time until every input was on the GPU (staging into pinned memory and
  /// DMA, overlapped with the CPU's work); d2h = wall time of reading the outputs back and merging them; merge =
  /// the merging part of d2h.
  double h2d_ms = 0, d2h_ms = 0, merge_ms = 0;
};

/// Runs one spec's kernel at any configuration. Programs, sub-devices and queues are built once and reused;
/// launches from several threads are safe (they are serialised per executor: one kernel owns the devices).
class Executor {
 public:
  Executor(const Spec& spec, const std::string& source, const cl::Selection& devices, ExecutorOptions options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  /// Runs the kernel over `args` (as made by make_args; outputs are updated in place) at `config`.
  LaunchResult launch(std::vector<ArgData>& args, const Config& config);
  /// A static split instead of dynamic distribution: the CPU runs the first `cpu_share` of the work (rounded to
  /// work-group slabs) in one chunk, the GPU the rest in one chunk (SKMD-style; used to compare with dynamic).
  LaunchResult launch_static(std::vector<ArgData>& args, const Config& config, double cpu_share);

  /// Makes this executor run another launch of the same kernel (same source, kernel name, build options and work
  /// dimension; other sizes, work-group sizes and arguments' sizes): contexts, sub-devices, programs and queues are
  /// kept, so a sweep over the sizes of a kernel builds it once. Throws std::invalid_argument when the build would
  /// differ (a 3D kernel of another size: its full size is a build constant).
  void rebind(const Spec& spec);

  const Spec& spec() const;
  int cpu_cores_total() const;  ///< 0 without a CPU device

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The macro prelude that turns any kernel into its work-group-range form: launched over a sub-range of its split
/// dimension with a global offset, every work-item builtin returns what it would in the original full launch.
std::string range_form_prelude();
/// Build options of the range form for a full launch of `global`, split along `split_dim` (and an original global
/// offset). For kernels of fewer than 3 dimensions they do not depend on the sizes: the split dimension's full size
/// travels at launch time as the offset of an extra dimension (range_form_geometry), so one build (and the
/// implementations' kernel caches) serve every problem size of a kernel. `constant_size` passes the full size as a
/// constant instead, for launches without the extra dimension (whole launches of the range form).
std::string range_form_options(const std::vector<size_t>& global, size_t split_dim,
                               const std::vector<size_t>& offset = {}, bool constant_size = false);
/// Turns a chunk's launch geometry (global, local, offset over the kernel's own dimensions) into the range form's.
void range_form_geometry(const std::vector<size_t>& full_global, size_t split_dim, std::vector<size_t>& global,
                         std::vector<size_t>& local, std::vector<size_t>& offset);

}  // namespace dop
