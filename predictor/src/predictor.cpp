// The predictor: every configuration of the grid evaluated per launch decision, memoised.
//
// Fast path (tree models, grids of at most 64 configurations): the configurations of one decision share their code
// and launch features and differ only in the few features that depend on the configuration. Each tree is walked
// once for all configurations together, carrying the set of configurations (a 64-bit mask) that reach a node: a
// split on a shared feature sends the whole set one way; a split on a configuration-only feature (cpu_util,
// gpu_util, cpu_cores) splits it with a mask precomputed at load; a split on a mixed feature (cpu_waves, ...)
// compares that feature's per-configuration values computed once per decision. Each configuration still reaches
// exactly one leaf per tree and accumulates leaves in tree order in float, so the result is bit-identical to one
// walk per configuration (scores_reference) and to XGBoost.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "dop/predictor.hpp"
#include "internal.hpp"

namespace dop::pred {

namespace {

enum NodeKind : uint8_t { kLeaf, kShared, kConfigOnly, kMixed };

struct FastNode {
  float threshold = 0;  ///< split threshold, or the leaf value
  int32_t slot = 0;     ///< kShared: index into the shared vector; kMixed: mixed slot
  int32_t left = -1, right = -1;
  uint8_t kind = kLeaf;
  uint8_t default_left = 0;
  uint64_t left_mask = 0;  ///< kConfigOnly: configurations that go left
};

struct Scratch {
  std::vector<float> shared, mixed, acc, row;
  std::vector<std::pair<int32_t, uint64_t>> stack;
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

constexpr size_t kShards = 16;

}  // namespace

struct Predictor::Impl {
  Model model;
  PredictorOptions options;
  std::vector<Config> configs;
  std::vector<int> builtin;      // per feature: builtin id, -1 for code features
  std::vector<int> code_index;   // per feature: index into the code vector, -1 for builtins
  size_t num_code = 0;

  // Fast path.
  bool fast = false;
  std::vector<FastNode> nodes;
  std::vector<int32_t> roots;
  std::vector<int> shared_features;  // feature indices whose value is shared by all configurations (slot order)
  std::vector<int> mixed_ids;        // builtin id per mixed slot
  uint64_t all = 0;
  size_t max_nodes = 0;

  struct Shard {
    mutable std::shared_mutex mu;
    std::unordered_map<std::string, Decision> map;
  };
  mutable std::array<Shard, kShards> shards;

  void compile();
  void fast_scores(const double* code, const LaunchShape& l, double* out) const;
  double row_output(const float* x) const;
  void linear_scores(const double* code, const LaunchShape& l, double* out) const;
};

void Predictor::Impl::compile() {
  configs = model.configs();
  for (const Feature& f : model.features) {
    if (f.source == Source::code) {
      builtin.push_back(-1);
      code_index.push_back(int(num_code++));
    } else {
      builtin.push_back(builtin_id(f.name));
      code_index.push_back(-1);
    }
  }
  if (model.trees.empty() || configs.size() > 64) return;
  fast = true;
  const size_t C = configs.size();
  all = C == 64 ? ~uint64_t(0) : (uint64_t(1) << C) - 1;
  std::vector<int> shared_slot(model.features.size(), -1), mixed_slot(model.features.size(), -1);
  const Platform& p = model.platform;
  const LaunchShape unit;  // config-only features do not depend on the launch
  for (const Tree& t : model.trees) {
    const int32_t base = int32_t(nodes.size());
    roots.push_back(base);
    max_nodes = std::max(max_nodes, t.size());
    for (size_t i = 0; i < t.size(); ++i) {
      FastNode n;
      if (t.left[i] < 0) {
        n.kind = kLeaf;
        n.threshold = t.value[i];
        nodes.push_back(n);
        continue;
      }
      n.left = base + t.left[i];
      n.right = base + t.right[i];
      n.threshold = t.threshold[i];
      n.default_left = t.default_left[i];
      const int f = t.feature[i];
      const int id = builtin[size_t(f)];
      const BuiltinKind k = id < 0 ? BuiltinKind::constant : builtin_kind(id);
      if (k == BuiltinKind::constant) {
        n.kind = kShared;
        if (shared_slot[size_t(f)] < 0) {
          shared_slot[size_t(f)] = int(shared_features.size());
          shared_features.push_back(f);
        }
        n.slot = shared_slot[size_t(f)];
      } else if (k == BuiltinKind::config_only) {
        n.kind = kConfigOnly;
        for (size_t c = 0; c < C; ++c) {
          const float v = static_cast<float>(builtin_value(id, unit, p, configs[c]));
          if (v < n.threshold) n.left_mask |= uint64_t(1) << c;
        }
      } else {
        n.kind = kMixed;
        if (mixed_slot[size_t(f)] < 0) {
          mixed_slot[size_t(f)] = int(mixed_ids.size());
          mixed_ids.push_back(id);
        }
        n.slot = mixed_slot[size_t(f)];
      }
      nodes.push_back(n);
    }
  }
}

void Predictor::Impl::fast_scores(const double* code, const LaunchShape& l, double* out) const {
  Scratch& s = scratch();
  const size_t C = configs.size();
  const Platform& p = model.platform;
  s.shared.resize(shared_features.size());
  for (size_t k = 0; k < shared_features.size(); ++k) {
    const int f = shared_features[k];
    const int id = builtin[size_t(f)];
    s.shared[k] = id < 0 ? static_cast<float>(code[code_index[size_t(f)]])
                         : static_cast<float>(builtin_value(id, l, p, Config{}));
  }
  s.mixed.resize(mixed_ids.size() * C);
  for (size_t m = 0; m < mixed_ids.size(); ++m) {
    float* v = s.mixed.data() + m * C;
    for (size_t c = 0; c < C; ++c) v[c] = static_cast<float>(builtin_value(mixed_ids[m], l, p, configs[c]));
  }
  s.acc.assign(C, model.base_score);
  s.stack.resize(max_nodes + 1);
  float* acc = s.acc.data();
  const FastNode* nodes_p = nodes.data();
  auto* stack = s.stack.data();
  for (const int32_t root : roots) {
    size_t sp = 0;
    stack[sp++] = {root, all};
    while (sp) {
      auto [n, m] = stack[--sp];
      for (;;) {
        const FastNode& nd = nodes_p[n];
        if (nd.kind == kLeaf) {
          const float v = nd.threshold;
          for (uint64_t b = m; b; b &= b - 1) acc[__builtin_ctzll(b)] += v;
          break;
        }
        if (nd.kind == kShared) {
          const float x = s.shared[size_t(nd.slot)];
          n = (std::isnan(x) ? nd.default_left : x < nd.threshold) ? nd.left : nd.right;
          continue;
        }
        uint64_t lm;
        if (nd.kind == kConfigOnly) {
          lm = m & nd.left_mask;
        } else {
          const float* v = s.mixed.data() + size_t(nd.slot) * C;
          lm = 0;
          for (uint64_t b = m; b; b &= b - 1) {
            const int c = __builtin_ctzll(b);
            lm |= uint64_t(v[c] < nd.threshold) << c;
          }
        }
        const uint64_t rm = m & ~lm;
        if (!lm) {
          n = nd.right;
        } else if (!rm) {
          n = nd.left;
        } else {
          stack[sp++] = {nd.right, rm};
          n = nd.left;
          m = lm;
        }
      }
    }
  }
  for (size_t c = 0; c < C; ++c) out[c] = double(acc[c]);
}

double Predictor::Impl::row_output(const float* x) const {
  if (!model.trees.empty()) {
    float sum = model.base_score;
    for (const Tree& t : model.trees) {
      int32_t n = 0;
      while (t.left[size_t(n)] >= 0) {
        const float v = x[t.feature[size_t(n)]];
        const bool go_left = std::isnan(v) ? t.default_left[size_t(n)] != 0 : v < t.threshold[size_t(n)];
        n = go_left ? t.left[size_t(n)] : t.right[size_t(n)];
      }
      sum += t.value[size_t(n)];
    }
    return double(sum);
  }
  double sum = model.intercept;
  for (const LinearTerm& term : model.terms) {
    double prod = term.weight;
    for (const LinearFactor& f : term.factors) {
      const double v = double(x[f.feature]);
      prod *= std::isnan(v) ? 0.0 : ((f.log1p ? std::log1p(std::max(v, 0.0)) : v) - f.mean) / f.scale;
    }
    sum += prod;
  }
  return sum;
}

// ---------------------------------------------------------------------------------------------------------------

Predictor::Predictor(Model model, PredictorOptions options) : impl_(std::make_unique<Impl>()) {
  model.validate("model");
  if (!options.platform_id.empty() && options.platform_id != model.platform.id)
    throw ModelError("the model was trained for platform '" + model.platform.id + "', not for '" +
                     options.platform_id + "': train one for this platform (dop sweep, dop train)");
  impl_->model = std::move(model);
  impl_->options = std::move(options);
  impl_->compile();
}

Predictor Predictor::load(const std::string& path, PredictorOptions options) {
  Model m = Model::load(path);
  if (!options.platform_id.empty() && options.platform_id != m.platform.id)
    throw ModelError(path + ": the model was trained for platform '" + m.platform.id + "', not for '" +
                     options.platform_id + "'");
  return Predictor(std::move(m), std::move(options));
}

Predictor::~Predictor() = default;
Predictor::Predictor(Predictor&&) noexcept = default;
Predictor& Predictor::operator=(Predictor&&) noexcept = default;

const Model& Predictor::model() const { return impl_->model; }
size_t Predictor::num_configs() const { return impl_->configs.size(); }

void Predictor::scores_reference(const double* code, const LaunchShape& launch, double* out) const {
  const Impl& I = *impl_;
  std::vector<float> row(I.model.features.size());
  for (size_t c = 0; c < I.configs.size(); ++c) {
    feature_vector(I.model.features, I.model.platform, code, launch, I.configs[c], row.data());
    out[c] = I.row_output(row.data());
  }
}

void Predictor::scores(const double* code, const LaunchShape& launch, double* out) const {
  const Impl& I = *impl_;
  if (I.fast) return I.fast_scores(code, launch, out);
  Scratch& s = scratch();
  const size_t F = I.model.features.size();
  s.row.resize(F);
  for (size_t c = 0; c < I.configs.size(); ++c) {
    for (size_t f = 0; f < F; ++f) {
      const int id = I.builtin[f];
      s.row[f] = id < 0 ? static_cast<float>(code[I.code_index[f]])
                        : static_cast<float>(builtin_value(id, launch, I.model.platform, I.configs[c]));
    }
    out[c] = I.row_output(s.row.data());
  }
}

std::vector<double> Predictor::scores(const CodeFeatures& code, const LaunchShape& launch,
                                      const ArgValues& args) const {
  const auto cv = code_vector(impl_->model.features, code, launch, args);
  std::vector<double> out(impl_->configs.size());
  scores(cv.data(), launch, out.data());
  return out;
}

double Predictor::predict_row(const float* x) const { return impl_->row_output(x); }

Decision Predictor::decide(const double* code, const LaunchShape& launch) const {
  const size_t C = impl_->configs.size();
  thread_local std::vector<double> out;
  out.resize(C);
  scores(code, launch, out.data());
  size_t best = 0;
  for (size_t c = 1; c < C; ++c)
    if (out[c] > out[best]) best = c;
  Decision d;
  d.config = impl_->configs[best];
  d.index = best;
  d.predicted = out[best];
  return d;
}

Decision Predictor::decide(const CodeFeatures& code, const LaunchShape& launch, const ArgValues& args) const {
  const auto cv = code_vector(impl_->model.features, code, launch, args);
  return decide(cv.data(), launch);
}

namespace {
std::string cache_key(const std::string& kernel_id, const LaunchShape& l, const ArgValues& args) {
  std::string k = kernel_id;
  k += '\0';
  k.append(reinterpret_cast<const char*>(&l.work_dim), sizeof l.work_dim);
  k.append(reinterpret_cast<const char*>(l.global.data()), sizeof l.global);
  k.append(reinterpret_cast<const char*>(l.local.data()), sizeof l.local);
  for (const auto& [name, v] : args) {
    k += name;
    k += '=';
    k.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  return k;
}
}  // namespace

Decision Predictor::decide(const std::string& kernel_id, const CodeFeatures& code, const LaunchShape& launch,
                           const ArgValues& args) const {
  const Impl& I = *impl_;
  if (I.options.cache_capacity == 0) return decide(code, launch, args);
  const std::string key = cache_key(kernel_id, launch, args);
  auto& shard = I.shards[std::hash<std::string>{}(key) % kShards];
  {
    std::shared_lock lock(shard.mu);
    const auto it = shard.map.find(key);
    if (it != shard.map.end()) {
      Decision d = it->second;
      d.cached = true;
      return d;
    }
  }
  const Decision d = decide(code, launch, args);  // outside the lock: decisions of other launches go on
  std::unique_lock lock(shard.mu);
  const size_t per_shard = std::max<size_t>(1, I.options.cache_capacity / kShards);
  if (shard.map.size() >= per_shard) shard.map.clear();  // bounded: start over rather than grow without limit
  shard.map.emplace(key, d);
  return d;
}

size_t Predictor::cache_size() const {
  size_t n = 0;
  for (auto& s : impl_->shards) {
    std::shared_lock lock(s.mu);
    n += s.map.size();
  }
  return n;
}

void Predictor::clear_cache() const {
  for (auto& s : impl_->shards) {
    std::unique_lock lock(s.mu);
    s.map.clear();
  }
}

}  // namespace dop::pred
