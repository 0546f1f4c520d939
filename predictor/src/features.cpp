// The feature vocabulary of dop-model/1: launch shapes, the builtin features and their values, the feature vector of
// a configuration, and code features from their expressions (dop/expr.hpp). The trainer builds its training matrix
// with these functions too: training and prediction cannot disagree on what a feature means.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "dop/expr.hpp"
#include "dop/predictor.hpp"
#include "estimate.hpp"
#include "internal.hpp"

namespace dop::pred {

// ---------------------------------------------------------------------------------------------------------------
// Launch shapes
// ---------------------------------------------------------------------------------------------------------------

uint64_t LaunchShape::num_groups() const {
  uint64_t n = 1;
  for (int d = 0; d < 3; ++d) n *= local[d] ? (global[d] + local[d] - 1) / local[d] : 0;
  return n;
}

namespace {
std::vector<uint64_t> parse_sizes(const std::string& text, const char* what) {
  std::vector<uint64_t> out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    const auto b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    item = b == std::string::npos ? "" : item.substr(b, e - b + 1);
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = item.empty() || item[0] == '-' ? 0 : std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || item[0] == '-' || errno || !end || *end || v == 0)
      throw std::invalid_argument(std::string(what) + " '" + text + "': '" + item + "' is not a size >= 1");
    out.push_back(v);
  }
  if (out.empty() || out.size() > 3 || (!text.empty() && text.back() == ','))
    throw std::invalid_argument(std::string(what) + " '" + text + "' must be X, X,Y or X,Y,Z");
  return out;
}
}  // namespace

LaunchShape LaunchShape::parse(const std::string& global, const std::string& local) {
  const auto g = parse_sizes(global, "global size"), l = parse_sizes(local, "local size");
  if (g.size() != l.size())
    throw std::invalid_argument("global size '" + global + "' and local size '" + local +
                                "' have different numbers of dimensions");
  LaunchShape s;
  s.work_dim = unsigned(g.size());
  for (size_t d = 0; d < g.size(); ++d) {
    s.global[d] = g[d];
    s.local[d] = l[d];
  }
  return s;
}

std::string LaunchShape::str() const {
  std::string g, l;
  for (unsigned d = 0; d < work_dim && d < 3; ++d) {
    g += (d ? "x" : "") + std::to_string(global[d]);
    l += (d ? "x" : "") + std::to_string(local[d]);
  }
  return g + "/" + l;
}

// ---------------------------------------------------------------------------------------------------------------
// Features
// ---------------------------------------------------------------------------------------------------------------

const char* source_name(Source s) {
  switch (s) {
    case Source::code:
      return "code";
    case Source::launch:
      return "launch";
    case Source::derived:
      return "derived";
    case Source::config:
      return "config";
  }
  return "?";
}

namespace {
const char* kEstMsDefinition = "analytic estimate of the configuration's time in ms (docs/models.md, Estimate)";
const char* kEstRelDefinition = "est_ms / est_best_ms";
const char* kEstBestDefinition = "least est_ms of configurations (1, 0), (0, 1), (1, 1)";

Feature builtin(const char* name, Source s, const char* def) {
  Feature f;
  f.name = name;
  f.key = name;
  f.source = s;
  f.definition = def;
  return f;
}
}  // namespace

const std::vector<Feature>& builtin_features() {
  // Never destroyed (as model.cpp's tables: a model may be read on a thread that runs while the process exits).
  static const std::vector<Feature>& all = *new const std::vector<Feature>{
      builtin("work_dim", Source::launch, "work_dim"),
      builtin("global_size", Source::launch, "global_x * global_y * global_z"),
      builtin("local_size", Source::launch, "local_x * local_y * local_z"),
      builtin("num_groups", Source::launch,
              "ceil(global_x / local_x) * ceil(global_y / local_y) * ceil(global_z / local_z)"),
      builtin("global_x", Source::launch, "global_x"),
      builtin("global_y", Source::launch, "global_y"),
      builtin("global_z", Source::launch, "global_z"),
      builtin("local_x", Source::launch, "local_x"),
      builtin("local_y", Source::launch, "local_y"),
      builtin("local_z", Source::launch, "local_z"),
      builtin("groups_per_gpu_unit", Source::derived, "num_groups / gpu_units"),
      builtin("gpu_waves", Source::derived, "ceil(num_groups / gpu_units)"),
      builtin("cpu_cores", Source::derived, "cpu_util > 0 ? clamp(round(cpu_util * cpu_units), 1, cpu_units) : 0"),
      builtin("groups_per_cpu_core", Source::derived, "cpu_cores > 0 ? num_groups / cpu_cores : 0"),
      builtin("cpu_waves", Source::derived, "cpu_cores > 0 ? ceil(num_groups / cpu_cores) : 0"),
      builtin("gpu_items_per_unit", Source::derived, "global_size * gpu_util / gpu_units"),
      builtin("cpu_util", Source::config, "cpu_util"),
      builtin("gpu_util", Source::config, "gpu_util"),
      // The data inputs (issue 16): where the inputs are, the buffers' bytes, and what the GPU must receive.
      builtin("data_on_gpu", Source::launch, "data_on_gpu ? 1 : 0"),
      builtin("in_bytes", Source::launch, "in_bytes"),
      builtin("out_bytes", Source::launch, "out_bytes"),
      builtin("gpu_recv_bytes", Source::derived, "gpu_util > 0 && !data_on_gpu ? in_bytes : 0"),
      builtin("est_ms", Source::derived, kEstMsDefinition),
      builtin("est_rel", Source::derived, kEstRelDefinition),
      builtin("est_best_ms", Source::derived, kEstBestDefinition),
      builtin("data_pinned", Source::launch, "data_pinned && !data_on_gpu ? 1 : 0"),
  };
  return all;
}

bool depends_on_config(const std::string& n) {
  const int id = builtin_id(n);
  return id >= 0 && builtin_kind(id) != BuiltinKind::constant;
}

int builtin_id(const std::string& name) {
  const auto& b = builtin_features();
  for (size_t i = 0; i < b.size(); ++i)
    if (b[i].name == name) return int(i);
  return -1;
}

const Feature& builtin_feature(const std::string& name) {
  const int id = builtin_id(name);
  if (id < 0) throw std::invalid_argument("'" + name + "' is not a builtin feature of the predictor");
  return builtin_features()[size_t(id)];
}

// Keep in sync with builtin_features() (the ids are positions in it) and with the generated header (header.cpp).
BuiltinKind builtin_kind(int id) {
  switch (id) {
    case kCpuCores:
    case kCpuUtil:
    case kGpuUtil:
      return BuiltinKind::config_only;
    case kGroupsPerCpuCore:
    case kCpuWaves:
    case kGpuItemsPerUnit:
    case kGpuRecvBytes:
    case kEstMs:
    case kEstRel:
      return BuiltinKind::mixed;
    default:
      return BuiltinKind::constant;
  }
}

Axis builtin_axis(int id) {
  switch (id) {
    case kCpuCores:
    case kCpuUtil:
    case kGroupsPerCpuCore:
    case kCpuWaves:
      return Axis::cpu;
    case kGpuUtil:
    case kGpuItemsPerUnit:
    case kGpuRecvBytes:
      return Axis::gpu;
    case kEstMs:
    case kEstRel:
      return Axis::both;
    default:
      return Axis::none;
  }
}

double cpu_cores_of(double cpu_util, int cpu_units) {
  if (!(cpu_util > 0)) return 0;
  const double u = std::max(1, cpu_units);
  return std::clamp(std::round(cpu_util * u), 1.0, u);
}

double builtin_value(int id, const LaunchShape& l, const Platform& p, const Config& c) {
  return builtin_value(id, l, double(l.num_groups()), p, c);
}

double builtin_value(int id, const LaunchShape& l, double groups, const Platform& p, const Config& c) {
  const double gpu_units = std::max(1, p.gpu_units);
  switch (id) {
    case kWorkDim:
      return l.work_dim;
    case kGlobalSize:
      return double(l.global_size());
    case kLocalSize:
      return double(l.local_size());
    case kNumGroups:
      return groups;
    case kGlobalX:
      return double(l.global[0]);
    case kGlobalY:
      return double(l.global[1]);
    case kGlobalZ:
      return double(l.global[2]);
    case kLocalX:
      return double(l.local[0]);
    case kLocalY:
      return double(l.local[1]);
    case kLocalZ:
      return double(l.local[2]);
    case kGroupsPerGpuUnit:
      return groups / gpu_units;
    case kGpuWaves:
      return std::ceil(groups / gpu_units);
    case kCpuCores:
      return cpu_cores_of(c.cpu, p.cpu_units);
    case kGroupsPerCpuCore: {
      const double k = cpu_cores_of(c.cpu, p.cpu_units);
      return k > 0 ? groups / k : 0;
    }
    case kCpuWaves: {
      const double k = cpu_cores_of(c.cpu, p.cpu_units);
      return k > 0 ? std::ceil(groups / k) : 0;
    }
    case kGpuItemsPerUnit:
      return double(l.global_size()) * c.gpu / gpu_units;
    case kCpuUtil:
      return c.cpu;
    case kGpuUtil:
      return c.gpu;
    case kDataOnGpu:
      return l.data_on_gpu ? 1 : 0;
    case kDataPinned:
      return l.data_pinned && !l.data_on_gpu ? 1 : 0;
    case kInBytes:
      return double(l.in_bytes);
    case kOutBytes:
      return double(l.out_bytes);
    case kGpuRecvBytes:
      return c.gpu > 0 && !l.data_on_gpu ? double(l.in_bytes) : 0;
    case kEstMs:
    case kEstRel:
    case kEstBestMs:
      throw ModelError("builtin feature '" + builtin_features()[size_t(id)].name +
                       "' reads code features: feature_vector computes it");
    default:
      throw ModelError("builtin feature id " + std::to_string(id) + " unknown");
  }
}

namespace {

// The feature vectors of n configurations of one decision (rows of features.size()): what the configurations share
// (the features' builtin ids, the estimate's inputs and its best) is computed once.
void vectors_of(const std::vector<Feature>& features, const Platform& p, const double* code, const LaunchShape& l,
                const Config* configs, size_t n, float* out) {
  const size_t F = features.size();
  thread_local std::vector<int> ids;  // per feature: builtin id, -1 for a code feature
  ids.assign(F, -1);
  bool need_estimate = false;
  for (size_t i = 0; i < F; ++i) {
    if (features[i].source == Source::code) continue;
    ids[i] = builtin_id(features[i].name);
    // validate() prevents this
    if (ids[i] < 0) throw ModelError("feature '" + features[i].name + "' is not a builtin feature");
    if (is_estimate(ids[i]) && !p.figures)
      throw ModelError("feature '" + features[i].name + "' needs the platform figures (an estimate section)");
    need_estimate |= is_estimate(ids[i]);
  }
  EstimateInputs in;
  double best = std::nan("");
  if (need_estimate) {
    in = estimate_inputs(estimate_keys(features), code, l);
    best = best_estimate_ms(*p.figures, in, p.cpu_units);
  }
  const double groups = double(l.num_groups());
  for (size_t c = 0; c < n; ++c) {
    float* row = out + c * F;
    const double est = need_estimate ? estimate_ms(*p.figures, in, configs[c], p.cpu_units) : std::nan("");
    size_t ci = 0;
    for (size_t i = 0; i < F; ++i) {
      const int id = ids[i];
      row[i] = id < 0             ? static_cast<float>(code[ci++])
               : id == kEstMs     ? static_cast<float>(est)
               : id == kEstRel    ? static_cast<float>(est / best)
               : id == kEstBestMs ? static_cast<float>(best)
                                  : static_cast<float>(builtin_value(id, l, groups, p, configs[c]));
    }
  }
}

}  // namespace

void feature_vector(const std::vector<Feature>& features, const Platform& p, const double* code, const LaunchShape& l,
                    const Config& c, float* out) {
  vectors_of(features, p, code, l, &c, 1, out);
}

void feature_vectors(const std::vector<Feature>& features, const Platform& p, const double* code, const LaunchShape& l,
                     const std::vector<Config>& configs, float* out) {
  vectors_of(features, p, code, l, configs.data(), configs.size(), out);
}

// ---------------------------------------------------------------------------------------------------------------
// Expressions of code features (the grammar is dop/expr.hpp)
// ---------------------------------------------------------------------------------------------------------------

std::map<std::string, int64_t> launch_symbols(const LaunchShape& l) {
  std::map<std::string, int64_t> m;
  for (int d = 0; d < 3; ++d) {
    const std::string s = std::to_string(d);
    m["global_size_" + s] = int64_t(l.global[d]);
    m["local_size_" + s] = int64_t(l.local[d]);
    m["num_groups_" + s] = int64_t(l.local[d] ? (l.global[d] + l.local[d] - 1) / l.local[d] : 0);
    m["global_offset_" + s] = 0;
  }
  m["work_dim"] = l.work_dim;
  return m;
}

std::vector<double> code_vector(const std::vector<Feature>& features, const CodeFeatures& code,
                                const LaunchShape& launch, const ArgValues& args) {
  std::vector<double> out;
  std::map<std::string, int64_t> symbols;
  bool have_symbols = false;
  for (const Feature& f : features) {
    if (f.source != Source::code) continue;
    const auto it = code.values.find(f.key);
    double v = it == code.values.end() ? std::nan("") : it->second;
    if (std::isnan(v)) {
      const auto e = f.expr_key.empty() ? code.exprs.end() : code.exprs.find(f.expr_key);
      if (e != code.exprs.end() && !e->second.empty()) {
        if (!have_symbols) {
          symbols = launch_symbols(launch);
          for (const auto& [k, a] : args) symbols[k] = a;  // arguments shadow launch symbols of the same name
          have_symbols = true;
        }
        try {
          v = double(expr::evaluate(e->second, symbols));
        } catch (const std::invalid_argument&) {
          v = std::nan("");  // an unknown symbol (argument not given, unknown trip count): missing
        }
      } else if (it == code.values.end()) {
        throw ModelError("code feature '" + f.key + "' is required by the model but was not given" +
                         (f.expr_key.empty() ? std::string() : " (nor its expression '" + f.expr_key + "')"));
      }
    }
    out.push_back(v);
  }
  return out;
}

}  // namespace dop::pred
