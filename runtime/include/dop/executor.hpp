// dop executor: runs one kernel across a CPU and a GPU at a chosen degree of parallelism, with dynamic work
// distribution (Dopia Algorithm 1, adaptive chunks) and warm starts; its options and what a launch reports. Runtime
// tier: OpenCL only.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dop/cl.hpp"
#include "dop/config.hpp"
#include "dop/device_data.hpp"
#include "dop/footprint.hpp"
#include "dop/memory_mode.hpp"
#include "dop/predictor.hpp"
#include "dop/spec.hpp"

namespace dop {

/// What `auto` launches decide with: a trained model (dop train) and the kernel's code features.
struct AutoModel {
  std::shared_ptr<const pred::Predictor> predictor;
  pred::CodeFeatures code;  ///< from a bundle or `dop features --json` (dop/kernel_forms.hpp)
  std::string kernel_id;    ///< key of the predictor's memo; "" means "<kernel file>:<kernel name>"
};
struct ExecutorOptions {
  MemoryMode memory = MemoryMode::automatic;
  /// What the kernel touches (parse_footprint of its features); empty: every buffer is copied whole.
  Footprint footprint;
  /// Tests: in copy modes, fill the GPU's buffers with garbage before each launch, so that a byte the GPU needed
  /// but did not receive shows up as a wrong result instead of a stale right one.
  bool poison_gpu_buffers = false;
  /// Malleable GPU form (Dopia Figs. 5-6): the same kernel with two extra trailing int arguments dop_gpu_mod and
  /// dop_gpu_alloc. Empty: the GPU always runs unthrottled, and results say so when a fraction < 1 was asked for.
  std::string malleable_source;
  std::string malleable_origin;  ///< where malleable_source came from, for messages ("" : the kernel's file)
  std::string malleable_note;    ///< why there is no malleable form (barriers, local memory, ...), for results
  /// Run the malleable form at 8/8 too (every work-item active, the work-list loop of one item each): to measure
  /// what the form itself costs. Off: 8/8 runs the original kernel.
  bool malleable_at_full = false;
  double target_chunk_ms = 2.0;  ///< adaptive chunks aim at this much device time per chunk
  /// Warm starts. A dynamic launch that ran on both devices measures the CPU share at which both would have finished
  /// together (each device's units over its time, the GPU's read-back included; learn_cpu_share) and the devices'
  /// rates; the executor keeps an average of that share per configuration, launch shape and scalar arguments (the
  /// first warm launch's share replaces what cold launches measured, and so does one that disagrees with the
  /// average by more than 0.25). The next such launch starts from it: the GPU
  /// claims its share, less a tail of `warm_tail` of it, in one chunk, both devices know the other's rate from the
  /// start, and the tail is distributed dynamically. Balanced finish times are not always the fastest launch (the
  /// GPU's copies take memory bandwidth and a core from the CPU), so after a warm launch on both devices, a
  /// device whose share is under `warm_explore` is left out to time the other alone, and later launches run the
  /// fastest way measured, except that a way whose one run lost runs once more (a first run may pay for what later
  /// ones do not; the second replaces it); every `warm_recheck`-th warm launch runs both again. A warm launch does
  /// not give the GPU's inputs up on the CPU's rate (a cold one may). A device whose share rounds to
  /// nothing sits the launch out, unless it was timed alone faster than the other alone. A device that ran no chunk
  /// of the launches so far (the GPU gave its staging up on the CPU's early rate, or the CPU took every unit first)
  /// has no rate, so no launch can start warm: it runs the next launch alone, once, to be timed (`warm_explore` = 0
  /// switches the explorations off). LaunchResult::warm and start_cpu_share say what a launch started from.
  bool warm_start = true;
  double warm_tail = 0.1;
  double warm_explore = 0.5;
  int warm_recheck = 16;
  /// MemoryMode::svm: the CPU levels whose sub-devices share the one context of every device (an SVM allocation
  /// belongs to one context, so they are fixed when it is made). Other modes make the sub-device of a core count at
  /// its first use, whatever the levels.
  std::vector<double> cpu_levels = Grid{}.cpu_levels;
  /// For launch_auto: the model and the kernel's features. Its platform's grid should be this executor's.
  std::optional<AutoModel> model;
  /// Resident buffers (dop/device_data.hpp): launches keep the GPU's copies of their buffers in `data` (shared with
  /// other executors of the same GPU), move only what a device lacks and leave results where they were written
  /// (DeviceData::sync reads them). Memory modes copy and auto only.
  std::shared_ptr<DeviceData> data;
};

struct DeviceStats {
  std::string device;      ///< device id ("pocl:0"), "" when unused
  int units = 0;           ///< cores (CPU) or active work-items out of dop_gpu_mod (GPU)
  size_t work_groups = 0;  ///< work-groups this device ran, in the geometry it ran them (see work_items)
  /// Work-items this device ran. The CPU runs a kernel that cannot observe its work-groups (no barriers, local
  /// memory, local or group ids) in finer work-groups when the spec's are few, so work_items is the exact share.
  size_t work_items = 0;
  size_t chunks = 0;     ///< kernel enqueues
  double busy_ms = 0;    ///< sum of kernel execution times (profiling events)
  double finish_ms = 0;  ///< wall time from launch start until this device's last chunk completed
};

struct LaunchResult {
  Config config;
  int cpu_cores = 0;  ///< actual CPU cores used
  int gpu_mod = 8, gpu_alloc = 0;
  bool gpu_throttled = false;                 ///< the malleable form ran (gpu_alloc < gpu_mod, or malleable_at_full)
  MemoryMode memory = MemoryMode::automatic;  ///< the mode actually used
  std::string note;                           ///< e.g. why the GPU ran unthrottled
  DeviceStats cpu, gpu;
  double total_ms = 0;     ///< end to end: host-resident inputs to host-resident outputs
  bool automatic = false;  ///< launch_auto: the model chose `config`
  double predicted = 0;    ///< ... its output for it (normalised performance or a score)
  double decide_us = 0;    ///< ... time the decision took (not in total_ms)
  /// Copy mode, parts of total_ms (overlapped with the CPU's work): h2d = wall time of staging the GPU's inputs
  /// (into pinned memory, DMA enqueued; for whole buffers until every DMA completed); d2h = wall time of reading
  /// the outputs back and merging them (resident mode: after total_ms; resident buffers, ExecutorOptions::data: also
  /// host memory made current from the GPU's copies before and during the run); merge = the merging part of d2h.
  double h2d_ms = 0, d2h_ms = 0, merge_ms = 0;
  /// Copy modes: bytes sent to and read back from the GPU (slices only, where the footprint bounds a buffer). With
  /// resident buffers (ExecutorOptions::data): what the launch moved between host memory and the GPU's copies.
  size_t h2d_bytes = 0, d2h_bytes = 0;
  /// MemoryMode::pinned: of h2d_bytes, those the GPU's DMA read straight from the arguments' page-locked memory
  /// (read-only buffers made by Executor::make_args or place), without staging copies.
  size_t h2d_in_place_bytes = 0;
  /// Warm start (ExecutorOptions::warm_start): the launch started from `start_cpu_share`, the share learned from
  /// earlier launches at this configuration and shape; -1 for a cold launch.
  bool warm = false;
  double start_cpu_share = -1;
  /// Warm starts: this launch ran as it did to measure something for the later ones (a cold launch on both devices,
  /// a device timed alone, the first warm launch on both, a way's second run, the periodic recheck), not because
  /// it was the fastest way known. A sweep's warm-up goes on while launches learn (dop sweep --settle).
  bool learning = false;
  /// A launch that left a device out by choice (to time the other alone, because that way was the fastest measured,
  /// or because the device's share rounds to nothing; warm), or to time alone a device that has run no chunk yet
  /// (not warm): it teaches no balanced share. A launch on both devices in which one declined every chunk is not
  /// this: its balance (all to the other) is learned.
  bool left_out = false;
  /// A dynamic launch on both devices: the CPU share at which both would have finished together, from this launch's
  /// measurements (learn_cpu_share); -1 otherwise.
  double balanced_cpu_share = -1;
  /// Programs this launch built (a side's kernel at its first use: the CPU sub-device of its core count, the GPU's
  /// plain or malleable form), compiled from source or made from the program cache's binaries
  /// (dop/program_cache.hpp), and the wall time of those builds (before the timed region, not in total_ms).
  int programs_built = 0, programs_from_cache = 0;
  double build_ms = 0;
};

/// Called first on every thread an executor starts (the GPU's driver, host-side copy threads), in every executor of
/// the process; null (the default): nothing. The interposer marks those threads as dop's own, so that their OpenCL
/// calls on the application's buffers are not taken for the application's.
void set_engine_thread_hook(void (*hook)());

/// Runs one spec's kernel at any configuration. A launch builds only what its configuration runs (the CPU
/// sub-device of its core count, the GPU's plain or malleable form), at its first use, through the program cache;
/// sub-devices, queues and programs are kept for later launches. Launches from several threads are safe (they are
/// serialised per executor: one kernel owns the devices).
class Executor {
 public:
  Executor(const Spec& spec, const std::string& source, const cl::Selection& devices, ExecutorOptions options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  /// Runs the kernel over `args` (as made by make_args; outputs are updated in place) at `config`. In
  /// MemoryMode::svm the buffers must be in this executor's SVM (make_args or place below), else
  /// std::invalid_argument names the argument.
  LaunchResult launch(std::vector<ArgData>& args, const Config& config);
  /// The spec's arguments, initialised as dop::make_args does, with buffers where this executor runs them in place:
  /// its shared virtual memory in MemoryMode::svm (made at the first call), host memory otherwise. They stay valid
  /// after the executor is gone. A copy of an ArgData is allocated where the original is; assigning to one keeps
  /// its memory.
  std::vector<ArgData> make_args();
  /// A copy of `args` (of this executor's spec) in that memory: for inputs generated once and restored before
  /// every launch (reset_writable).
  std::vector<ArgData> place(const std::vector<ArgData>& args);
  /// A static split instead of dynamic distribution: the CPU runs the first `cpu_share` of the work (rounded to
  /// work-group slabs) in one chunk, the GPU the rest in one chunk (SKMD-style; used to compare with dynamic).
  LaunchResult launch_static(std::vector<ArgData>& args, const Config& config, double cpu_share);
  /// The model's configuration (ExecutorOptions::model) for a launch over `args`: the launch shape this executor
  /// runs (its own local size where the spec leaves it open) and the integer scalar arguments, for the model's size
  /// expressions. Throws std::logic_error without a model, pred::ModelError naming the kernel when the features do
  /// not fit the model.
  pred::Decision decide(const std::vector<ArgData>& args);
  /// Runs at the model's configuration; the result says it was chosen (automatic, predicted, decide_us).
  LaunchResult launch_auto(std::vector<ArgData>& args);
  /// The work-group size launches use: the spec's, or the one this executor chose when the spec leaves it open
  /// (open_local_size).
  std::vector<size_t> local_size() const;

  /// Makes this executor run another launch of the same kernel (same source, kernel name, build options and
  /// argument kinds; any sizes, work-group sizes, work dimension and arguments' sizes), so that ONE executor serves
  /// every shape of a kernel. Cost: the launch geometry is recomputed (microseconds); sub-devices, queues, built
  /// programs, the GPU's buffers and pinned memory (while large enough) and warm-start records (kept per shape) stay.
  /// A kernel of fewer than 3 dimensions is built once for every size; a 3D kernel's full size is a build
  /// constant, so its first launch at a size not seen before builds that size's programs (from the program cache
  /// where another process built them) and later shapes seen before build nothing. Throws std::invalid_argument
  /// for another kernel, build options or argument kinds.
  void rebind(const Spec& spec);

  /// Forgets what warm starts learned: the next dynamic launch of every configuration is cold.
  void forget_warm_starts();

  const Spec& spec() const;
  int cpu_cores_total() const;  ///< 0 without a CPU device

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// How a launch rounds a configuration (Executor::launch; LaunchResult::cpu_cores, gpu_alloc): the CPU share `share`
/// (> 0) of a `total`-core device runs on the nearest whole number of cores, at least 1; the GPU's share on the
/// nearest eighth (gpu_alloc of dop_gpu_mod = 8), at least 1.
int cpu_cores_at(double share, int total);
int gpu_alloc_at(double share);
/// `cfg` as a launch rounds it on a `cpu_total`-core CPU (0: the CPU share as given): whole cores and eighths. A
/// configuration that differs from it is off the machine's grid.
Config grid_config(const Config& cfg, int cpu_total);

/// The CPU share at which both devices would have finished together: units over time per device (the CPU ran
/// `cpu_units` in `cpu_ms`, the GPU `gpu_units` in `gpu_ms`), cpu rate / (cpu rate + gpu rate); 1 when the GPU ran
/// nothing, 0 when the CPU ran nothing. Warm starts average it over launches (learned = (learned + this) / 2).
double learn_cpu_share(double cpu_units, double cpu_ms, double gpu_units, double gpu_ms);

/// The work-group size an executor chooses for a launch of this global size that leaves it open: the largest size up
/// to 64 that divides the first dimension, 1 in the others (no device query: the same on every device).
std::vector<size_t> open_local_size(const std::vector<size_t>& global);

}  // namespace dop
