// dop sweep: every workload at every configuration of a grid, rows appended to a CSV dataset (docs/dataset.md) as
// they finish through the dataset module (dop/dataset.hpp); resumable after a crash or kill -9, shardable, mergeable.
// Runtime tier.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "dop/dataset.hpp"
#include "dop/runtime.hpp"

namespace dop {

/// The `data_on` of rows swept in memory mode `m` (docs/dataset.md): gpu for resident data, pinned for page-locked
/// host data, host otherwise.
std::string data_on_of(MemoryMode m);

/// One workload of a sweep: a spec with its kernel source and the set it belongs to (paper, real, extended, ...).
struct Workload {
  Spec spec;
  std::string source;
  std::string set;
};

struct SweepOptions {
  std::string out;          ///< dataset CSV (appended to; created with its header if missing or empty)
  std::string platform_id;  ///< written into every row
  Grid grid;
  int warmup = 1;  ///< untimed runs per configuration
  /// More untimed runs, at most this many, while the last one was learning (LaunchResult::learning: the engine's
  /// warm starts still measuring ways to run, which later launches would not), so that the timed runs measure the
  /// configuration as a kernel launched again and again runs at it.
  int settle = 6;
  int repeat = 5;        ///< timed runs per configuration (median, min, max recorded)
  bool validate = true;  ///< check the first timed run of every configuration against the reference
  /// Configurations measured per workload: 0 = the whole grid; N = sample_configurations (dop/dataset.hpp) of it,
  /// the three corners and N - 3 spread over the rest, deterministic per workload name (training sets that must fit
  /// the device budget; evaluation sets keep the whole grid).
  size_t configs_per_workload = 0;
  ExecutorOptions executor;
  /// Static code features per kernel, joined into the rows by code_feature_key (from `dop features --csv`). Every
  /// workload must have an entry when the table has feature columns.
  CodeFeatureTable features;
  /// What a workload's kernel adds to `executor`: its malleable GPU form (malleable_source, or malleable_note saying
  /// why there is none; unset: none, the GPU runs unthrottled below 8/8 and the rows say so in gpu_throttled) and
  /// its memory footprint (copy mode then sends slices). An exception makes the workload's rows invalid with its
  /// message.
  std::function<void(const Workload&, ExecutorOptions&)> per_kernel;
  /// Workloads not to run, by name, with the reason (a worker that ran them crashed or timed out: dop sweep's
  /// isolation): their missing rows are written invalid with it.
  std::map<std::string, std::string> failed;
};

/// Progress after each configuration: done and total (configuration runs), the workload now running.
using SweepProgress = std::function<void(size_t done, size_t total, const std::string& workload)>;

struct SweepSummary {
  size_t rows_written = 0, rows_skipped = 0, invalid = 0;
  /// Where the wall time went, in seconds: setup per workload (executor, inputs, reference); the launches' own
  /// end-to-end times (total_ms); launch overhead outside them (lazy program builds, sub-devices, queues, buffer
  /// objects); restoring outputs between runs; validation; writing rows.
  double setup_s = 0, timed_s = 0, launch_overhead_s = 0, reset_s = 0, validate_s = 0, write_s = 0, wall_s = 0;
  /// Untimed runs added to the warm-up while the engine's warm starts were learning (SweepOptions::settle).
  size_t settle_runs = 0;
  /// The launches' notes (LaunchResult::note: a GPU run unthrottled, page-locked staging memory refused), each text
  /// once, prefixed with the first workload and configuration that gave it: the first kMaxNotes, then a count.
  static constexpr size_t kMaxNotes = 20;
  std::vector<std::string> notes;
  size_t notes_left_out = 0;
};

/// Runs the sweep, writing through a DatasetAppender (dop/dataset.hpp): rows already in opts.out (same columns) are
/// skipped; a torn last line from a killed run is truncated first. Throws if opts.out has other columns.
SweepSummary run_sweep(const std::vector<Workload>& workloads, const cl::Selection& devices, const SweepOptions& opts,
                       const SweepProgress& progress = {});

/// Why a sweep would not measure the configurations its rows name: with a GPU and no source of malleable forms (no
/// bundles, no analysis build: SweepOptions::per_kernel unset), the grid's GPU levels strictly between 0 and 1 would
/// run the whole GPU (gpu_throttled = 0) and copy mode would send whole buffers, not footprint slices. "" when the
/// rows would measure their configurations (no GPU, no such level, or `has_forms`).
std::string unthrottled_levels_problem(const Grid& grid, bool has_gpu, bool has_forms);

/// Shard I of N: the workloads whose index in name order is I mod N.
std::vector<Workload> shard(std::vector<Workload> workloads, size_t index, size_t count);

}  // namespace dop
