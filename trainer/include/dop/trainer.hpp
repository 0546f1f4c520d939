// dop trainer: loads sweep datasets (docs/dataset.md), trains degree-of-parallelism models (decision tree, random
// forest, gradient-boosted trees and learning-to-rank through XGBoost's C API; a ridge baseline with Eigen),
// evaluates them without leakage (k-fold cross-validation grouped by workload, leave-one-kernel-out) with the
// metrics of Dopia (PPoPP'22) Section 9, and exports dop-model/1 files for the predictor. Analysis tier.
//
//   auto data = dop::train::load_dataset("sweep.csv");
//   dop::train::TrainOptions o;  o.type = "gbt";
//   auto cv = dop::train::cross_validate(data, o, 64);       // metrics, printed with format_evaluation(cv)
//   dop::pred::Model m = dop::train::train(data, dop::train::all_workloads(data), o);
//   m.save("model.json");
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "dop/dataset.hpp"
#include "dop/predictor.hpp"

namespace dop::train {

/// A dataset that cannot be used; the message names the file, line and column where there is one. The dataset
/// module's error (dop/dataset.hpp), which its readers throw.
using DatasetError = dop::DatasetError;

/// One workload of a dataset: its kernel, launch, code features and its time at every configuration.
struct Workload {
  std::string name, set, kernel;
  std::vector<double> code;                  ///< Dataset::code_keys order; NaN = missing
  std::map<std::string, std::string> exprs;  ///< Dataset::expr_keys -> expression text (may be empty)
  pred::LaunchShape launch;  ///< with its data: in_bytes, out_bytes, data_on_gpu (the dataset's data block)
  /// The kernel's integer scalar arguments (the dataset's args column; none without it): the symbols its code
  /// features' expressions are evaluated with, as the predictor does at launch (code_vector).
  pred::ArgValues args;
  std::vector<double> time_ms;  ///< median time per configuration, Dataset::configs order; NaN: not measured
  size_t best = 0;              ///< the fastest measured configuration (the first of equal times)
  size_t line = 0;              ///< line of its first row in the file
  /// Every configuration measured (the oracle is known): only complete workloads are evaluated; partial ones (a
  /// sampled sweep, dop sweep --configs) are trained on, and decided by cross-validation and leave-one-kernel-out
  /// only with TrainOptions::score_partial.
  bool complete = true;
  /// Normalised performance of configuration c: best measured time / time (1 for the best; NaN if not measured).
  double perf(size_t c) const { return time_ms[best] / time_ms[c]; }
  pred::CodeFeatures code_features(const std::vector<std::string>& code_keys) const;
  /// The model's code features of this workload (pred::code_vector with its launch and arguments).
  std::vector<double> code_vector(const std::vector<pred::Feature>& features,
                                  const std::vector<std::string>& code_keys) const;
};

struct Dataset {
  std::string path;
  std::string platform_id;
  std::vector<std::string> code_keys;  ///< numeric code-feature columns, in file order
  std::vector<std::string> expr_keys;  ///< expression columns among the code features (names ending in _expr)
  std::vector<double> cpu_levels, gpu_levels;
  std::vector<Config> configs;  ///< the grid in model order (CPU major), without (0, 0)
  int cpu_units = 1;            ///< the largest cpu_cores of any row (cores at cpu_util = 1)
  /// Workloads by (name, data_on): a workload swept with its data on the host and on the GPU is two, of one name.
  /// Complete ones (a valid row for every configuration) and partial ones (some never measured; trained on only).
  std::vector<Workload> workloads;
  bool has_data = false;              ///< the data block (data_on, in_bytes, out_bytes) is in the file
  bool has_pinned = false;            ///< a row has data_on = pinned (host data in page-locked memory)
  bool has_args = false;              ///< the args column is in the file (the workloads' argument values)
  size_t rows = 0;                    ///< data rows read
  size_t invalid_rows = 0;            ///< rows with valid = 0 or an unusable time (reported, not used)
  size_t excluded_workloads = 0;      ///< workloads with an invalid row, or fewer than 2 configurations measured
  size_t partial_workloads = 0;       ///< workloads with configurations never measured (in `workloads`)
  std::vector<std::string> problems;  ///< one line per invalid row and excluded workload, with file:line
};

struct LoadOptions {
  /// Use only rows of this platform; required when the file holds several.
  std::string platform_id;
  /// Code features to join by kernel name, for a dataset swept without them: `dop features --csv` output (several
  /// files' outputs may be concatenated; repeated headers are skipped). The dataset must have no code features; a
  /// kernel listed twice with other values is refused (DatasetError naming file:line).
  std::string features;
};

/// Reads a sweep dataset. Malformed input (missing columns, wrong field counts, a non-number in a numeric column,
/// duplicate rows, inconsistent launch or features within a workload, a grid that is not a full product) throws
/// DatasetError naming file:line:column. Rows with valid = 0 or non-positive times are counted and reported in
/// `problems`, never used; a workload with an invalid row or fewer than 2 configurations measured is excluded and
/// reported; one with configurations never measured (a sampled sweep) is kept as partial (Workload::complete).
Dataset load_dataset(const std::string& path, const LoadOptions& options = {});

/// Indices of all workloads (complete and partial: what a model is trained on).
std::vector<size_t> all_workloads(const Dataset& data);
/// Indices of the complete workloads (what evaluations decide).
std::vector<size_t> complete_workloads(const Dataset& data);

/// The model inputs for a dataset: its numeric code features (with their expression columns), work_dim,
/// global_size, local_size, num_groups, the per-dimension sizes, the derived launch features (when `derived`), the
/// data features data_on_gpu, in_bytes, out_bytes, gpu_recv_bytes (when the dataset has the data block), data_pinned
/// (when a row has its host data in page-locked memory), and cpu_util, gpu_util.
std::vector<pred::Feature> default_features(const Dataset& data, bool derived = true);

struct TrainOptions {
  std::string type = "gbt";  ///< dt, rf, gbt, rank, linear
  /// Overrides of the type's defaults: XGBoost parameters (max_depth=8, eta=0.05, objective=rank:ndcg, ...),
  /// "rounds" (boosting rounds), and for linear "lambda" (ridge penalty).
  std::map<std::string, std::string> params;
  int threads = 0;               ///< XGBoost threads (0: 1 below 50,000 training rows, else all cores)
  uint64_t seed = 1;             ///< sampling (rf, gbt) and fold assignment
  bool derived = true;           ///< include the derived launch features
  int gpu_units = 1;             ///< GPU compute units of the platform (for the derived GPU features; 1 when unknown)
  std::string platform_devices;  ///< the platform record's devices, into the model (pred::Platform::devices)
  /// Train on only this many configurations per workload, chosen by sample_configurations (dop/dataset.hpp), the
  /// rule of dop sweep --configs, and normalised by the best of them: what a sampled training sweep would give.
  /// Evaluations still decide the full grid. 0: every measured configuration.
  size_t sample_configs = 0;
  /// The platform figures of the analytic estimate (PlatformFigures::from_record): with them the model gets the
  /// features est_ms and est_rel and carries the figures in its file (docs/models.md, "Estimate").
  std::optional<pred::PlatformFigures> estimate;
  /// Cross-validation and leave-one-kernel-out also decide partial workloads (a sampled sweep's), each among its
  /// measured configurations, scored against the best of them (the baselines too: the corners are always measured;
  /// the best constant is the training folds' best among them). The training sets' own criterion for modelling
  /// choices (docs/models.md). Off: only complete workloads are decided.
  bool score_partial = false;
  /// Sample weight of the rows of each named workload set (dt, rf, gbt); other sets' rows weigh 1. A sampled set
  /// of few workloads (the span set's 12 configurations each) is otherwise outweighed by a large full-grid one.
  std::map<std::string, double> set_weights;
  /// The model's decision margin for mixing the devices (pred::Model::mixed_margin; normalised performance): a
  /// configuration of both devices is picked only where its output beats every other by more. Negative: the
  /// default, kDefaultMixedMargin for the models whose output is normalised performance, 0 for rank.
  double mixed_margin = -1;
};

/// The mixing margin a model gets unless --mixed-margin says otherwise (docs/models.md, "The decision").
constexpr double kDefaultMixedMargin = 0.05;

/// The effective parameters of a model type after overrides (what train() uses), as strings.
std::map<std::string, std::string> effective_params(const TrainOptions& options);

/// Trains a model on the given workloads (all their configurations). The result carries the feature schema, the
/// grid, the platform and training metadata; its outputs are what the predictor computes.
pred::Model train(const Dataset& data, const std::vector<size_t>& workloads, const TrainOptions& options);

/// The XGBoost booster of train() for the given rows, used by tests to compare predictions: trains like train()
/// and returns XGBoost's own predictions for `rows` (row-major, Model::features order) next to the model.
struct XgbCheck {
  pred::Model model;
  std::vector<float> xgboost_predictions;
};
XgbCheck train_and_predict_with_xgboost(const Dataset& data, const std::vector<size_t>& workloads,
                                        const TrainOptions& options, const std::vector<float>& rows);

/// Metrics of one strategy over a set of workloads (Dopia Table 5, Fig. 11a/b, Table 6).
struct Summary {
  std::string name;    ///< "model (gbt)", "CPU only", "GPU only", "ALL", "best constant"
  std::string config;  ///< the fixed configuration, "" for the model
  size_t workloads = 0;
  size_t correct = 0;  ///< predicted configuration is a measured best (time equal to the best)
  double correct_share = 0;
  double dist_mean = 0, dist_p50 = 0, dist_p75 = 0, dist_p90 = 0;  ///< normalised Euclidean distance to the best
  double perf_mean = 0, perf_geomean = 0, perf_min = 0;            ///< best time / time of the chosen config
  double perf_p5 = 0, perf_p10 = 0, perf_p25 = 0, perf_p50 = 0, perf_p75 = 0;
  double share_ge_90 = 0, share_ge_95 = 0;  ///< share of workloads at >= 90 % / >= 95 % of the best
};

/// Per-workload outcome of an evaluation.
struct Outcome {
  size_t workload = 0;   ///< index in Dataset::workloads
  size_t predicted = 0;  ///< configuration index
  double perf = 0;       ///< normalised performance of the predicted configuration
  double distance = 0;
  int fold = 0;
};

struct Evaluation {
  std::string method;  ///< "grouped k-fold cross-validation", "leave-one-kernel-out", "in-sample"
  std::string model_type;
  size_t folds_requested = 0, folds = 0;
  std::string note;  ///< e.g. folds clamped to the number of workloads
  std::vector<Outcome> outcomes;
  std::vector<Summary> strategies;  ///< the model first, then CPU only, GPU only, ALL, best constant
  /// Leave-one-kernel-out: one row per held-out kernel (kernel, workloads, model perf, CPU, GPU, ALL, best const).
  struct KernelRow {
    std::string kernel;
    size_t workloads = 0;
    double model = 0, cpu = 0, gpu = 0, all = 0, best_const = 0;
  };
  std::vector<KernelRow> per_kernel;
  double train_seconds = 0;    ///< total training time over folds
  size_t train_workloads = 0;  ///< a test-set evaluation: the workloads the model was trained on
};

/// k-fold cross-validation grouped by workload name (all configurations of a workload, and both its data locations,
/// in the same fold): each fold's complete workloads (and partial ones with TrainOptions::score_partial) are
/// predicted by a model trained on the others; the best constant
/// configuration is chosen on the training folds. `folds` larger than the number of workloads is clamped
/// (Evaluation::note says so).
Evaluation cross_validate(const Dataset& data, const TrainOptions& options, size_t folds = 64);

/// Leave-one-kernel-out over the workloads of set "real": for each kernel name, a model trained on every workload
/// of other kernels predicts that kernel's real workloads. Empty (note says why) when there are none.
Evaluation leave_one_kernel_out(const Dataset& data, const TrainOptions& options);

/// Dopia's protocol: a model trained on every workload not of set `set` (the synthetic sets; partial ones too)
/// decides every complete workload of `set`, at every size and data location present; the best constant is chosen
/// on the training workloads. per_kernel: one row per kernel (and data location, when the set has both). Empty (note
/// says why) when the set or the rest is empty.
Evaluation evaluate_test_set(const Dataset& data, const TrainOptions& options, const std::string& set);

/// A trained model on a dataset (no training): the model's decisions through the predictor. The dataset must
/// match the model (platform, grid, code features), otherwise pred::ModelError says what differs; with
/// `other_platform` a dataset of another platform is decided too (a model on another host's data: dop eval
/// --platform-id). `best_constant` is the model's (from its training data) when it recorded one, else the dataset's
/// own.
Evaluation evaluate_model(const pred::Model& model, const Dataset& data, bool other_platform = false);

/// One evaluation repeated with several training seeds (TrainOptions::seed, seed + 1, ...: XGBoost's row and column
/// sampling, the random forest's bootstrap, and cross-validation's fold assignment). Boosted trees trained on a few
/// thousand rows move by points with the seed alone (docs/models.md), more than many modelling choices do, so a
/// comparison between choices needs the spread. The model's metrics per seed and their mean, least and greatest.
struct SeedSpread {
  struct Stat {
    double mean = 0, min = 0, max = 0;
  };
  uint64_t first_seed = 0;
  std::vector<Evaluation> evaluations;  ///< one per seed, in seed order; [0] is the first seed's
  Stat perf_mean, perf_geomean, perf_min, correct_share;
};
/// Runs `evaluate` once per seed (`seeds` >= 1) with options.seed, options.seed + 1, ... Throws std::invalid_argument
/// for 0 seeds.
SeedSpread over_seeds(const std::function<Evaluation(const TrainOptions&)>& evaluate, TrainOptions options,
                      size_t seeds);
/// One line per metric: "over 8 seeds (1..8), model perf mean 87.4% [85.6% .. 88.1%], ...".
std::string format_seed_spread(const SeedSpread& s);
/// The spread as a JSON object text: {"seeds": N, "first_seed": S, "perf_mean": {"mean", "min", "max", "values"}, ...}.
std::string seed_spread_json(const SeedSpread& s);

/// Human-readable table (one line per strategy; per-kernel rows for leave-one-kernel-out).
std::string format_evaluation(const Evaluation& e);
/// Machine-readable form (a JSON object text). With the dataset evaluated, also each decision: "decisions", one
/// object per outcome with the workload, kernel, set, data_on, fold, the chosen and the best measured configuration
/// with their times (ms) and the normalised performance.
std::string evaluation_json(const Evaluation& e, const Dataset* data = nullptr);

}  // namespace dop::train
