// dop runtime: runs one kernel across a CPU and a GPU at a chosen degree of parallelism, with dynamic work
// distribution (Dopia Algorithm 1, adaptive chunks). Runtime tier: OpenCL only.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dop/cl.hpp"
#include "dop/config.hpp"
#include "dop/predictor.hpp"
#include "dop/spec.hpp"

namespace dop {

/// How buffers reach the GPU.
enum class MemoryMode {
  automatic,  ///< zero-copy where the GPU shares host memory (CL_DEVICE_HOST_UNIFIED_MEMORY), copies otherwise
  zero_copy,  ///< CL_MEM_USE_HOST_PTR on both devices over the same host memory
  copy,       ///< GPU buffers of its own: inputs copied in, outputs copied back and merged (all timed)
  /// As copy, but the data is resident: every input is on the GPU before the timed region starts, and the GPU's
  /// outputs are read back and merged after it ends (d2h_ms says how long that took; total_ms leaves it out).
  resident,
  /// Shared virtual memory: the CPU's sub-devices and the GPU in one context, and the arguments' buffers in its
  /// fine-grain buffer SVM (Executor::make_args / place), which both devices and the host use at once, with no
  /// buffers, copies or maps. Where available (svm_unavailable says why not): both devices on one platform with
  /// fine-grain buffer SVM. Allocated with cross-device atomics where every device has them. CPU core counts are
  /// those of ExecutorOptions::cpu_levels (the context's devices are fixed when it is made).
  svm
};
/// Why MemoryMode::svm cannot run on `devices`, naming the device or platforms; "" when it can.
std::string svm_unavailable(const cl::Selection& devices);
MemoryMode parse_memory_mode(const std::string& s);
const char* memory_mode_name(MemoryMode m);

/// The bytes a kernel's work-items can touch through each buffer argument, as the static analysis proved them
/// (`dop features --json`, key "footprint"; docs/features.md gives the contract). In copy mode the GPU then receives
/// only the slices of such buffers that its chunks need, and sends back only what it may have written.
struct Footprint {
  struct Term {
    int64_t coef = 0;
    std::vector<size_t> atoms;  ///< indices into `atoms` (repeated for powers)
  };
  struct Access {
    bool write = false;
    int64_t bytes = 0;  ///< bytes accessed at the address (an element, a vector)
    std::vector<Term> terms;  ///< the byte offset from the argument's base: the sum of the terms
  };
  struct Arg {
    bool whole = true;  ///< not bounded: the whole buffer, always
    std::string why;
    std::vector<Access> accesses;
  };
  std::map<std::string, Arg> args;  ///< by argument name; an argument not listed is whole
  /// Atom names and their [lo, hi] range expressions (kernel scalar arguments, launch symbols, and the chunk's
  /// gid_lo_d, gid_hi_d, group_lo_d, group_hi_d).
  std::vector<std::string> atoms;
  std::vector<std::pair<std::string, std::string>> ranges;
  bool empty() const { return args.empty(); }
};
/// The footprint in a kernel's features JSON (a bundle's features_json or a kernel object of `dop features
/// --json`): an empty footprint when it has none. Throws std::runtime_error naming `origin` when it is malformed.
Footprint parse_footprint(const std::string& features_json, const std::string& origin);

/// A byte range [lo, hi) of a buffer; empty when lo >= hi.
struct ByteRange {
  int64_t lo = 0, hi = 0;
  bool empty() const { return lo >= hi; }
};
/// The byte ranges that work-items whose split-dimension global ids lie in [gid_begin, gid_end) can read and write
/// through each argument of `spec` (by argument index; std::nullopt: not bounded, the whole buffer), for the
/// launch `global`/`local` with the scalar argument values of `args`. Clamped to the buffer.
struct ArgRanges {
  std::optional<ByteRange> read, write;
};
std::vector<ArgRanges> footprint_ranges(const Footprint& fp, const Spec& spec, const std::vector<ArgData>& args,
                                        const std::vector<size_t>& local, size_t gid_begin, size_t gid_end);
/// footprint_ranges for the chunks of one launch: what does not depend on the chunk (scalars, launch symbols,
/// chunk-independent atoms) is evaluated once, and the split dimension's id ranges are taken without parsing. It
/// keeps references to `fp` and `spec`. Thread-compatible: calls are const.
class FootprintEvaluator {
 public:
  FootprintEvaluator(const Footprint& fp, const Spec& spec, const std::vector<ArgData>& args,
                     const std::vector<size_t>& local);
  ~FootprintEvaluator();
  std::vector<ArgRanges> operator()(size_t gid_begin, size_t gid_end) const;

 private:
  struct Atom;
  const Footprint& fp_;
  const Spec& spec_;
  std::map<std::string, int64_t> env_;
  size_t split_ = 0;
  int64_t split_local_ = 1;
  std::vector<Atom> atoms_;
  bool has_expr_ = false;
};

/// What `auto` launches decide with: a trained model (dop train) and the kernel's code features.
struct AutoModel {
  std::shared_ptr<const pred::Predictor> predictor;
  pred::CodeFeatures code;  ///< from a bundle or `dop features --json` (code_features_from_json)
  std::string kernel_id;    ///< key of the predictor's memo; "" means "<kernel file>:<kernel name>"
};
/// Code features for the predictor from JSON text: `dop features --json` output (choosing `kernel` among several),
/// one kernel's object (a bundle's features_json), or a flat object of key -> number | null | expression. Throws
/// std::runtime_error naming `origin`.
pred::CodeFeatures code_features_from_json(const std::string& text, const std::string& origin,
                                           const std::string& kernel);

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
  std::string malleable_note;  ///< why there is no malleable form (barriers, local memory, ...), for results
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
  /// device whose share is under `warm_explore` is left out once to time the other alone, and later launches run
  /// the fastest way measured; every `warm_recheck`-th warm launch runs both again. A device whose share rounds to
  /// nothing always sits the launch out. LaunchResult::warm and start_cpu_share say what a launch started from.
  bool warm_start = true;
  double warm_tail = 0.1;
  double warm_explore = 0.5;
  int warm_recheck = 16;
  /// CPU levels whose sub-devices are built together on first use (one context, one compilation).
  std::vector<double> cpu_levels = Grid{}.cpu_levels;
  /// For launch_auto: the model and the kernel's features. Its platform's grid should be this executor's.
  std::optional<AutoModel> model;
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
  bool gpu_throttled = false;  ///< the malleable form ran (gpu_alloc < gpu_mod, or malleable_at_full)
  MemoryMode memory = MemoryMode::automatic;  ///< the mode actually used
  std::string note;         ///< e.g. why the GPU ran unthrottled
  DeviceStats cpu, gpu;
  double total_ms = 0;      ///< end to end: host-resident inputs to host-resident outputs
  bool automatic = false;   ///< launch_auto: the model chose `config`
  double predicted = 0;     ///< ... its output for it (normalised performance or a score)
  double decide_us = 0;     ///< ... time the decision took (not in total_ms)
  /// Copy mode, parts of total_ms (overlapped with the CPU's work): h2d = wall time of staging the GPU's inputs
  /// (into pinned memory, DMA enqueued; for whole buffers until every DMA completed); d2h = wall time of reading
  /// the outputs back and merging them (resident mode: after total_ms); merge = the merging part of d2h.
  double h2d_ms = 0, d2h_ms = 0, merge_ms = 0;
  /// Copy modes: bytes sent to and read back from the GPU (slices only, where the footprint bounds a buffer).
  size_t h2d_bytes = 0, d2h_bytes = 0;
  /// Warm start (ExecutorOptions::warm_start): the launch started from `start_cpu_share`, the share learned from
  /// earlier launches at this configuration and shape; -1 for a cold launch.
  bool warm = false;
  double start_cpu_share = -1;
  /// A dynamic launch on both devices: the CPU share at which both would have finished together, from this launch's
  /// measurements (learn_cpu_share); -1 otherwise.
  double balanced_cpu_share = -1;
};

/// Runs one spec's kernel at any configuration. Programs, sub-devices and queues are built once and reused;
/// launches from several threads are safe (they are serialised per executor: one kernel owns the devices).
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
  /// The work-group size launches use: the spec's, or the one this executor chose when the spec leaves it open.
  std::vector<size_t> local_size() const;

  /// Makes this executor run another launch of the same kernel (same source, kernel name, build options and work
  /// dimension; other sizes, work-group sizes and arguments' sizes): contexts, sub-devices, programs and queues are
  /// kept, so a sweep over the sizes of a kernel builds it once. Throws std::invalid_argument when the build would
  /// differ (a 3D kernel of another size: its full size is a build constant).
  void rebind(const Spec& spec);

  /// Forgets what warm starts learned: the next dynamic launch of every configuration is cold.
  void forget_warm_starts();

  const Spec& spec() const;
  int cpu_cores_total() const;  ///< 0 without a CPU device

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The CPU share at which both devices would have finished together: units over time per device (the CPU ran
/// `cpu_units` in `cpu_ms`, the GPU `gpu_units` in `gpu_ms`), cpu rate / (cpu rate + gpu rate); 1 when the GPU ran
/// nothing, 0 when the CPU ran nothing. Warm starts average it over launches (learned = (learned + this) / 2).
double learn_cpu_share(double cpu_units, double cpu_ms, double gpu_units, double gpu_ms);

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
