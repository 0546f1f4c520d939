// dop predictor: evaluates a trained degree-of-parallelism model (`dop-model/1`, docs/models.md) for every
// configuration of the platform's grid and returns the best one (Dopia, PPoPP'22, Section 5.2). Runtime tier: C++17
// and nlohmann-json only (no XGBoost, Eigen or OpenCL), so that applications can embed it.
//
//   auto p = dop::pred::Predictor::load("model.json", {.platform_id = "h100-xeon16"});
//   dop::pred::CodeFeatures f{{{"mem_continuous", 3}, {"arith_float", 2}, ...}};
//   auto d = p.decide("gemm.cl:gemm", f, dop::pred::LaunchShape::parse("1024,1024", "16,16"));
//   // d.config.cpu, d.config.gpu, d.predicted
//
// The feature vector of a (kernel, launch, configuration) is computed by feature_vector(), which the trainer uses
// for its training matrix too: training and prediction cannot disagree on what a feature means.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "dop/config.hpp"

namespace dop::pred {

/// The model file format this predictor reads and writes.
inline constexpr const char* kModelFormat = "dop-model/1";

/// A model that cannot be used: unreadable, corrupt, of an unknown version, or not matching the caller (schema,
/// platform). The message names the file and the problem.
class ModelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A degree-of-parallelism configuration (dop/config.hpp): the predictor decides in the runtime's own type.
using Config = dop::Config;

/// An NDRange launch: dimensions, global and local sizes (1 for unused dimensions), and the data it moves: the bytes
/// of the buffers the kernel reads and writes (0 = unknown) and where the inputs' valid copy is: already on the GPU,
/// or in host memory, pageable (the default) or page-locked (the GPU's DMA reads it in place).
/// Models trained on datasets with data columns (docs/dataset.md) use the data inputs; older models ignore them.
struct LaunchShape {
  unsigned work_dim = 1;
  std::array<uint64_t, 3> global{1, 1, 1};
  std::array<uint64_t, 3> local{1, 1, 1};
  uint64_t in_bytes = 0;     ///< buffers read (read and read_write arguments): what a device must receive
  uint64_t out_bytes = 0;    ///< buffers written (write and read_write arguments): what must come back
  bool data_on_gpu = false;  ///< the GPU already holds the inputs (resident data), so it receives nothing
  bool data_pinned = false;  ///< host data in page-locked memory (MemoryMode::pinned); ignored with data_on_gpu
  uint64_t global_size() const { return global[0] * global[1] * global[2]; }
  uint64_t local_size() const { return local[0] * local[1] * local[2]; }
  /// Work-groups: the product over dimensions of ceil(global / local).
  uint64_t num_groups() const;
  /// Parses "X[,Y[,Z]]" for both sizes (the same number of dimensions, every size >= 1). Throws
  /// std::invalid_argument naming the problem.
  static LaunchShape parse(const std::string& global, const std::string& local);
  std::string str() const;  ///< "1024x1024/16x16"
  bool operator==(const LaunchShape& o) const {
    return work_dim == o.work_dim && global == o.global && local == o.local && in_bytes == o.in_bytes &&
           out_bytes == o.out_bytes && data_on_gpu == o.data_on_gpu && data_pinned == o.data_pinned;
  }
};

/// Where a model input comes from.
enum class Source {
  code,     ///< a static code feature (`dop features`), given by the caller
  launch,   ///< a property of the launch shape (work_dim, global_size, ...)
  derived,  ///< computed from the launch shape, the platform and possibly the configuration
  config    ///< the configuration being evaluated (cpu_util, gpu_util)
};
const char* source_name(Source s);

/// One input of a model, in the order of the model's feature vector.
struct Feature {
  std::string name;  ///< unique within a model
  Source source = Source::code;
  std::string key;         ///< code features: the key in `dop features` output (usually == name)
  std::string expr_key;    ///< code features: key of an integer expression used when the value is missing
  std::string definition;  ///< launch, derived, config: the formula, as in builtin_features()
};

/// The launch, derived and configuration features this predictor can compute, with their definitions. A model
/// that names another, or gives another definition for one of these, is refused.
const std::vector<Feature>& builtin_features();
/// The builtin feature of that name; std::invalid_argument naming it when there is none.
const Feature& builtin_feature(const std::string& name);
/// Names of the builtin features that depend on the configuration (besides cpu_util and gpu_util themselves).
bool depends_on_config(const std::string& builtin_name);

/// The platform figures of the analytic time estimate (features est_ms, est_rel; docs/models.md, "Estimate"):
/// from the platform record (`dop characterize`), with documented defaults for what the record lacks.
struct PlatformFigures {
  struct CoreBandwidth {
    int cores = 0;
    double gbs = 0;
  };
  std::vector<CoreBandwidth> cpu_triad_gbs;     ///< CPU triad bandwidth per core count, cores increasing
  double cpu_launch_us = 0;                     ///< CPU launch latency
  double cpu_gops_float = 0, cpu_gops_int = 0;  ///< peak operation rates per CPU core (Gop/s)
  double gpu_triad_gbs = 0;                     ///< GPU device-memory bandwidth
  double gpu_launch_us = 0;
  double gpu_gops_float = 0, gpu_gops_int = 0;  ///< peak operation rates of the whole GPU (Gop/s)
  double h2d_gbs = 0, d2h_gbs = 0;              ///< pinned host<->GPU copies (the runtime stages into pinned memory)
  double h2d_latency_us = 0, d2h_latency_us = 0;
  /// Random-access (gather) bandwidths: the CPU's at all cores and the GPU's; 0 when not measured (records and
  /// model files from before 2026-11-27): random accesses then cost what streaming ones do.
  double cpu_gather_gbs = 0, gpu_gather_gbs = 0;
  /// Times each byte the runtime copies between host data and the GPU crosses host memory (staging through pinned
  /// memory: 3), so that the GPU's copies and the CPU's own traffic share the host's bandwidth (the CPU's best
  /// triad) in the estimate. A figure of dop's runtime, set by from_record; 0 in model files from before 2026-11-27:
  /// the devices' rates are then independent.
  double staging_passes = 0;
  /// Names (as in the model file's estimate section) of the figures that are documented defaults, not measured.
  std::vector<std::string> defaults;

  /// The figures of a platform record's text (`dop-platform/1`); figures it lacks get the defaults (listed in
  /// `defaults`). Throws ModelError("<origin>: <field>: <problem>") for a malformed record.
  static PlatformFigures from_record(const std::string& json_text, const std::string& origin);
};

/// The platform a model was trained for: its id, and the compute units the derived features divide by.
struct Platform {
  std::string id;
  int cpu_units = 1;  ///< CPU cores at cpu_util = 1
  int gpu_units = 1;  ///< GPU compute units (1 when unknown: the derived GPU features are then plain counts)
  /// The devices of the platform's record (dop characterize) as dop names devices that nobody named as a platform,
  /// "<CPU device name> + <GPU device name>" (dop/platform.hpp): a model trained for platform `id` runs on these
  /// devices without a warning. Empty when the model was trained without a record.
  std::string devices{};
  /// The estimate's figures: present when the model uses the estimate features (the file's "estimate" section).
  /// Initialised, so that Platform{id, cpu_units, gpu_units} stays free of missing-initializer warnings.
  std::optional<PlatformFigures> figures{};
};

/// A regression tree in XGBoost's semantics: at an internal node, x[feature] < threshold (float comparison) goes
/// to `left`, otherwise to `right`; a missing value (NaN) goes to `left` if default_left, else to `right`. Node 0
/// is the root; node i is a leaf when left[i] < 0, and then value[i] is its output.
struct Tree {
  std::vector<int32_t> feature, left, right;
  std::vector<float> threshold, value;
  std::vector<uint8_t> default_left;
  size_t size() const { return left.size(); }
  int depth() const;  ///< edges on the longest root-to-leaf path
};

/// A term of a linear model: weight * product of standardised factors. A factor is
/// (t(x[feature]) - mean) / scale with t = log1p (when log1p is set) or the identity; a missing x gives 0.
struct LinearFactor {
  int32_t feature = 0;
  bool log1p = false;
  double mean = 0;
  double scale = 1;
};
struct LinearTerm {
  double weight = 0;
  std::vector<LinearFactor> factors;
};

/// A trained model: what it is, what it was trained for, its inputs, and its parameters.
struct Model {
  std::string type;       ///< dt, rf, gbt, rank, linear
  std::string objective;  ///< reg:squarederror, rank:pairwise, rank:ndcg, ridge
  std::string output;     ///< "normalised_performance" (best time / time) or "score" (ranking: higher is better)
  Platform platform;
  std::vector<double> cpu_levels, gpu_levels;  ///< the grid; configurations are all pairs but (0, 0)
  std::vector<Feature> features;               ///< the feature vector, in order
  // Tree ensembles (dt, rf, gbt, rank): output = base_score + sum of the trees' leaf values, summed in float in
  // tree order (as XGBoost does).
  float base_score = 0;
  std::vector<Tree> trees;
  // Linear models: output = intercept + sum of terms.
  double intercept = 0;
  std::vector<LinearTerm> terms;
  /// Training metadata (dataset, parameters, metrics, timings) as a JSON object text; not used for prediction.
  std::string training = "{}";
  /// The decision's margin for mixing the devices (normalised performance, models whose output is that): a
  /// configuration that uses both devices is picked only where its output beats every other by more than this, so
  /// both devices run only where the model expects them to gain more than its own error (pick_config). The file's
  /// "decision": {"mixed_margin": M}; 0 (files without it): the highest output, as before.
  double mixed_margin = 0;

  bool is_tree_model() const { return !trees.empty(); }
  /// The grid's configurations in grid order: CPU level major, GPU level minor, without (0, 0).
  std::vector<Config> configs() const;
  /// Keys of the code features, in feature-vector order.
  std::vector<std::string> code_keys() const;

  /// Throws ModelError("<origin>: <path>: <problem>") when the model is inconsistent (child or feature indices out
  /// of range, cycles, unknown builtin features or definitions, bad grid, ...).
  void validate(const std::string& origin) const;
  std::string to_json(int indent = 1) const;
  /// Parses a model file's text. Syntax errors name line and column; schema errors name the JSON path.
  static Model parse(const std::string& text, const std::string& origin);
  static Model load(const std::string& path);
  void save(const std::string& path) const;
};

/// The same trained model for another platform (`dop retarget`, docs/models.md "A model on another host"): the
/// platform's id and compute units from its record (dop characterize's JSON, `record_text`, named `origin` in
/// errors), `devices` as dop names that record's devices (dop/platform.hpp), and where the model has the estimate
/// features, the estimate's figures from the record. Trees, features, grid and decision stay; training gains a
/// "retargeted" entry with what the model was for before. A record of another grid, or not a record, throws
/// ModelError naming the field.
Model retarget(const Model& m, const std::string& record_text, const std::string& origin, const std::string& devices);

/// Code features of one kernel by key (as `dop features` writes them), and optional integer expressions
/// (dop::expr::evaluate, dop/expr.hpp) for values that depend on kernel arguments (global_bytes_per_item_expr, ...).
/// NaN means missing.
struct CodeFeatures {
  std::map<std::string, double> values;
  std::map<std::string, std::string> exprs;
};
/// Kernel scalar argument values by name, for the symbols of code-feature expressions.
using ArgValues = std::map<std::string, int64_t>;

/// The symbols a launch defines for expressions (dop/expr.hpp): global_size_0..2, local_size_0..2, num_groups_0..2,
/// global_offset_0..2 (0), work_dim.
std::map<std::string, int64_t> launch_symbols(const LaunchShape& launch);

/// The model's code features in order, from `code`: a missing value (absent or NaN) is computed from its
/// expression when there is one and every symbol is known (arguments, then launch symbols), otherwise it stays
/// NaN (missing; trees send it the default way). Throws ModelError naming the key when a code feature is neither
/// given nor has an expression: the caller's feature set does not match the model's schema.
std::vector<double> code_vector(const std::vector<Feature>& features, const CodeFeatures& code,
                                const LaunchShape& launch, const ArgValues& args = {});

/// Fills out[0..features.size()) with the feature vector of one configuration; `code` is in the order of the code
/// features among `features`. Values are computed in double and rounded to float, as the trees compare them.
void feature_vector(const std::vector<Feature>& features, const Platform& platform, const double* code,
                    const LaunchShape& launch, const Config& config, float* out);
/// feature_vector of each of `configs` (one decision), into out[c * features.size() + i]: what the configurations
/// share (the estimate's inputs and its best) is computed once. The same values as feature_vector's.
void feature_vectors(const std::vector<Feature>& features, const Platform& platform, const double* code,
                     const LaunchShape& launch, const std::vector<Config>& configs, float* out);

/// The configuration a decision picks from a model's outputs `scores` (one per configuration, grid order): the
/// highest, where a configuration that uses both devices counts `mixed_margin` less (Model::mixed_margin); the first
/// of equal values in grid order. A NaN or -inf output is never picked unless every output is one (then the first).
size_t pick_config(const std::vector<Config>& configs, const double* scores, double mixed_margin);

/// The outcome of one launch decision.
struct Decision {
  Config config;
  size_t index = 0;      ///< position of config in Model::configs()
  double predicted = 0;  ///< the model's output for it (normalised performance, or a ranking score)
  bool cached = false;   ///< the decision came from the memo
};

struct PredictorOptions {
  /// The caller's platform id; when not empty, a model trained for another platform is refused.
  std::string platform_id;
  /// Memoised decisions kept (in 16 shards); 0 disables memoisation.
  size_t cache_capacity = 65536;
};

/// Evaluates a model for every configuration and picks the best (pick_config: the model's mixing margin, the first of
/// equal values in grid order).
/// Thread-safe: every method may be called concurrently; decisions are memoised per (kernel id, launch shape,
/// argument values) in a sharded cache with shared (reader) locks.
class Predictor {
 public:
  explicit Predictor(Model model, PredictorOptions options = {});
  static Predictor load(const std::string& path, PredictorOptions options = {});
  ~Predictor();
  Predictor(Predictor&&) noexcept;
  Predictor& operator=(Predictor&&) noexcept;

  const Model& model() const;
  size_t num_configs() const;

  /// The model's output for every configuration (grid order); code in code-feature order.
  void scores(const double* code, const LaunchShape& launch, double* out) const;
  std::vector<double> scores(const CodeFeatures& code, const LaunchShape& launch, const ArgValues& args = {}) const;
  /// The reference evaluation: one full feature vector and one tree walk per configuration (no shortcuts). Used by
  /// tests to check the fast path of scores().
  void scores_reference(const double* code, const LaunchShape& launch, double* out) const;
  /// The model's output for one explicit feature vector (Model::features order), as XGBoost would compute it.
  double predict_row(const float* x) const;

  /// Best configuration, not memoised.
  Decision decide(const double* code, const LaunchShape& launch) const;
  Decision decide(const CodeFeatures& code, const LaunchShape& launch, const ArgValues& args = {}) const;
  /// Best configuration, memoised: `kernel_id` must identify the kernel's code features (e.g. "file.cl:name").
  Decision decide(const std::string& kernel_id, const CodeFeatures& code, const LaunchShape& launch,
                  const ArgValues& args = {}) const;
  /// The memoised decision of (kernel id, launch shape, argument values), if there is one (cached = true).
  std::optional<Decision> cached(const std::string& kernel_id, const LaunchShape& launch,
                                 const ArgValues& args = {}) const;
  size_t cache_size() const;
  void clear_cache() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A self-contained C++17 header that evaluates `model` with no dependency: the trees (or linear terms) as static
/// arrays, the grid, the feature derivation, and
///   float NS::predict(const float* x);                         // one feature vector (NS::kFeatureNames order)
///   NS::Decision NS::decide(const double* code, unsigned work_dim, const unsigned long long* global,
///                           const unsigned long long* local);  // best configuration
///   NS::Decision NS::decide_with_data(..., const NS::LaunchData& data);  // with in/out bytes, data on the GPU
std::string generate_header(const Model& model, const std::string& name_space);

}  // namespace dop::pred
