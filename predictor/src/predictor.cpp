// The predictor: every configuration of the grid evaluated per launch decision, memoised.
//
// The configurations of one decision share their code and launch features; the other features depend on the CPU
// level only (cpu_util, cpu_cores, cpu_waves, ...) or on the GPU level only (gpu_util, ...). The fast paths use
// that structure instead of walking every tree once per configuration:
//
// Tree ensembles: a bit-vector evaluation in the manner of QuickScorer (Lucchese et al., SIGIR'15). Leaves are
// numbered left to right within each tree and every tree owns ceil(leaves / 64) words of a bit vector. A node whose
// test is false (x >= threshold, or a missing x whose default is right) rules out the leaves of its left subtree;
// the exit leaf of a tree is the leftmost leaf that no false node ruled out. Per decision, the nodes on shared
// features are applied once (for each feature, a prefix of its nodes sorted by threshold is false); the nodes on
// features of one level are applied once per level (configuration-only features at load time, launch-dependent
// ones per decision), giving one vector per CPU level and one per GPU level. A configuration's exit leaves are the
// first set bits of (CPU vector AND GPU vector) in each tree. Leaves are summed in tree order in float, as XGBoost
// does, so the outputs are bit-identical to one walk per configuration (scores_reference) and to XGBoost.
//
// Linear models: each factor of each term is computed once per decision (shared features) or once per level.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <numeric>
#include <shared_mutex>
#include <unordered_map>

#include "dop/predictor.hpp"
#include "internal.hpp"

namespace dop::pred {

namespace {

// Clears leaf bits [w0 * 64 + lo, w1 * 64 + hi): the words w0..w1, with masks for the first and the last.
struct Clear {
  uint32_t w0 = 0, w1 = 0;
  uint64_t m0 = 0, m1 = 0;  // AND masks of word w0 and word w1 (w0 == w1: m0 & m1)
};

inline void apply(uint64_t* bits, const Clear& c) {
  if (c.w0 == c.w1) {
    bits[c.w0] &= c.m0 & c.m1;
    return;
  }
  bits[c.w0] &= c.m0;
  for (uint32_t w = c.w0 + 1; w < c.w1; ++w) bits[w] = 0;
  bits[c.w1] &= c.m1;
}

Clear clear_range(size_t first_bit, size_t end_bit) {  // bits [first_bit, end_bit), end_bit > first_bit
  Clear c;
  c.w0 = uint32_t(first_bit / 64);
  c.w1 = uint32_t((end_bit - 1) / 64);
  const unsigned lo = unsigned(first_bit % 64), hi = unsigned((end_bit - 1) % 64) + 1;  // hi in 1..64
  const uint64_t from_lo = ~uint64_t(0) << lo;                                         // bits >= lo
  const uint64_t below_hi = hi == 64 ? ~uint64_t(0) : (uint64_t(1) << hi) - 1;         // bits < hi
  c.m0 = c.w0 == c.w1 ? ~(from_lo & below_hi) : ~from_lo;
  c.m1 = c.w0 == c.w1 ? ~uint64_t(0) : ~below_hi;
  return c;
}

// Nodes on one feature, sorted by threshold: for a value v, the nodes with threshold <= v are false.
struct SortedNodes {
  std::vector<float> threshold;
  std::vector<Clear> clear;
  std::vector<uint32_t> word;  // one-word trees: the word and mask of each clear (compact, for the hot loops)
  std::vector<uint64_t> mask;
  /// The nodes that are false for value v: the first false_count(v) (threshold <= v).
  size_t false_count(float v) const {
    return size_t(std::upper_bound(threshold.begin(), threshold.end(), v) - threshold.begin());
  }
  void apply_first(uint64_t* bits, size_t begin, size_t end, bool one_word) const {
    if (one_word) {
      const uint32_t* w = word.data();
      const uint64_t* m = mask.data();
      for (size_t k = begin; k < end; ++k) bits[w[k]] &= m[k];
    } else {
      for (size_t k = begin; k < end; ++k) apply(bits, clear[k]);
    }
  }
};

struct SharedFeature {
  int feature = 0;
  SortedNodes nodes;
  std::vector<Clear> missing;  ///< nodes that are false for a missing value (default right)
  /// Checkpoints: checkpoint[j] (words each) is the AND of the clears of the first (j + 1) * kCheckpoint nodes, so
  /// that a long false prefix costs one vector AND plus fewer than kCheckpoint single clears.
  std::vector<uint64_t> checkpoint;
};
constexpr size_t kCheckpoint = 128;

struct LevelFeature {  ///< a feature of the launch and one configuration coordinate, applied per decision
  int feature = 0;
  int builtin = 0;
  Axis axis = Axis::cpu;
  SortedNodes nodes;
};

struct Scratch {
  std::vector<uint64_t> base, cpu, gpu, run;
  std::vector<float> acc, row;
  std::vector<double> level_values, factors;
  std::vector<size_t> order;
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// Exit leaves of one-word trees for a grid of NG GPU levels: per CPU level, the NG sums run over the trees in
// registers (each still in tree order).
template <size_t NG>
void combine_one_word(const uint64_t* cpu, const uint64_t* gpu, const float* leaf_value, size_t trees, size_t NC,
                      bool skip_origin, float* acc) {
  float* out_c = acc;
  for (size_t lc = 0; lc < NC; ++lc) {
    float r[NG];
    const size_t first = (lc == 0 && skip_origin) ? 1 : 0;
    for (size_t lg = 0; lg < NG; ++lg) r[lg] = lg < first ? 0.0f : out_c[lg - first];
    for (size_t t = 0; t < trees; ++t) {
      const uint64_t x = cpu[t * NC + lc];
      const uint64_t* g = gpu + t * NG;
      const float* leaves = leaf_value + t * 64;
      for (size_t lg = 0; lg < NG; ++lg) r[lg] += leaves[unsigned(__builtin_ctzll(x & g[lg]))];
    }
    for (size_t lg = first; lg < NG; ++lg) *out_c++ = r[lg];
  }
}

constexpr size_t kShards = 16;

}  // namespace

struct Predictor::Impl {
  Model model;
  PredictorOptions options;
  std::vector<Config> configs;
  std::vector<int> builtin;     // per feature: builtin id, -1 for code features
  std::vector<int> code_index;  // per feature: index into the code vector, -1 for builtins
  std::vector<Axis> axis;       // per feature
  std::vector<size_t> cpu_level, gpu_level;  // per configuration: its level indices
  size_t num_code = 0;

  // Tree ensembles (bit vectors).
  bool trees_fast = false;
  size_t words = 0;                        // total words of the bit vector
  std::vector<uint32_t> tree_word;         // first word of each tree
  std::vector<uint32_t> tree_words;        // words of each tree
  bool one_word = false;                   // every tree has at most 64 leaves
  std::vector<float> leaf_value;           // per bit
  std::vector<SharedFeature> shared;
  std::vector<LevelFeature> level_features;
  std::vector<uint64_t> cpu_static, gpu_static;  // configuration-only nodes applied: [word * levels + level]
  bool skip_origin = false;                      // the grid's (0, 0) is not a configuration

  // Tree ensembles with larger trees (a walk of all configurations together, <= 64 configurations).
  struct WalkNode {  // 16 bytes: a decision tree of 2,000 nodes stays in L1
    float threshold = 0;  // split threshold, or the leaf value
    int32_t slot = 0;     // kShared*: feature index; kConfig: index into walk_masks; kLevel: level feature index
    int32_t left = -1;    // the right child is left + 1
    uint32_t kind = 0;
  };
  enum : uint32_t { kLeaf, kSharedRight, kSharedLeft, kConfig, kLevel };  // kShared*: where a missing value goes
  std::vector<uint64_t> walk_masks;  // kConfig: the configurations that go left
  bool walk = false;
  std::vector<WalkNode> walk_nodes;
  std::vector<int32_t> walk_roots;
  std::vector<int> walk_level_features;            // builtin feature index per level slot
  std::vector<int> walk_shared_features;           // shared features the walk reads
  std::vector<size_t> walk_level_offset;           // start of each level feature's table, then the total
  size_t walk_level_table_size = 0;
  std::vector<uint64_t> cpu_level_mask, gpu_level_mask;  // configurations at each level
  size_t walk_max_nodes = 0;
  uint64_t all_configs = 0;

  // Linear models.
  bool linear_fast = false;
  struct Factor {
    int feature;
    Axis axis;
    bool log1p;
    double mean, scale;
    size_t slot;  // shared: index into factors; per level: first of its levels
  };
  std::vector<Factor> factors;
  std::vector<size_t> term_begin;  // factors of term t: [term_begin[t], term_begin[t + 1])
  size_t factor_slots = 0;

  struct Shard {
    mutable std::shared_mutex mu;
    std::unordered_map<std::string, Decision> map;
  };
  mutable std::array<Shard, kShards> shards;

  void compile();
  void compile_trees();
  void compile_linear();
  float shared_value(int f, const double* code, const LaunchShape& l, double groups) const {
    const int id = builtin[size_t(f)];
    return id < 0 ? static_cast<float>(code[code_index[size_t(f)]])
                  : static_cast<float>(builtin_value(id, l, groups, model.platform, Config{}));
  }
  Config level_config(Axis a, size_t level) const {
    return a == Axis::cpu ? Config{model.cpu_levels[level], 0} : Config{0, model.gpu_levels[level]};
  }
  size_t levels(Axis a) const { return a == Axis::cpu ? model.cpu_levels.size() : model.gpu_levels.size(); }
  std::vector<double> level_cores;  // CPU cores at each CPU level (cpu_cores_of, computed once)
  /// builtin_value(id, l, groups, platform, level_config(a, level)) for the builtins of one level, without
  /// recomputing the configuration's core count (the same arithmetic, so the same values).
  double level_value(int id, const LaunchShape& l, double groups, Axis a, size_t level) const {
    switch (id) {
      case kGroupsPerCpuCore: {
        const double k = level_cores[level];
        return k > 0 ? groups / k : 0;
      }
      case kCpuWaves: {
        const double k = level_cores[level];
        return k > 0 ? std::ceil(groups / k) : 0;
      }
      case kGpuItemsPerUnit:
        return double(l.global_size()) * model.gpu_levels[level] / double(std::max(1, model.platform.gpu_units));
      default: return builtin_value(id, l, groups, model.platform, level_config(a, level));
    }
  }
  void tree_scores(const double* code, const LaunchShape& l, double* out) const;
  void compile_walk();
  void walk_scores(const double* code, const LaunchShape& l, double* out) const;
  void linear_scores(const double* code, const LaunchShape& l, double* out) const;
  double row_output(const float* x) const;
};

void Predictor::Impl::compile() {
  configs = model.configs();
  for (const Feature& f : model.features) {
    if (f.source == Source::code) {
      builtin.push_back(-1);
      code_index.push_back(int(num_code++));
      axis.push_back(Axis::none);
    } else {
      const int id = builtin_id(f.name);
      builtin.push_back(id);
      code_index.push_back(-1);
      axis.push_back(builtin_axis(id));
    }
  }
  for (const Config& c : configs) {
    cpu_level.push_back(size_t(std::find(model.cpu_levels.begin(), model.cpu_levels.end(), c.cpu) -
                               model.cpu_levels.begin()));
    gpu_level.push_back(size_t(std::find(model.gpu_levels.begin(), model.gpu_levels.end(), c.gpu) -
                               model.gpu_levels.begin()));
  }
  for (double c : model.cpu_levels) level_cores.push_back(cpu_cores_of(c, model.platform.cpu_units));
  if (!model.trees.empty()) compile_trees();
  else compile_linear();
}

void Predictor::Impl::compile_trees() {
  for (const Tree& t : model.trees)
    for (size_t i = 0; i < t.size(); ++i)
      if (t.left[i] >= 0 && axis[size_t(t.feature[i])] == Axis::both) return;  // reference path only
  std::vector<std::vector<std::pair<float, Clear>>> shared_nodes(model.features.size()),
      level_nodes(model.features.size());
  std::vector<std::vector<Clear>> missing(model.features.size());
  std::vector<std::vector<std::pair<size_t, Clear>>> static_cpu, static_gpu;  // (level, clear)
  std::vector<std::pair<size_t, Clear>> cpu_clears, gpu_clears;
  const LaunchShape unit;
  for (const Tree& t : model.trees) {
    const size_t n = t.size();
    // Leaves left to right: counts bottom-up, first leaf top-down (children follow their parents).
    std::vector<size_t> count(n, 0), first(n, 0);
    for (size_t i = n; i-- > 0;) count[i] = t.left[i] < 0 ? 1 : count[size_t(t.left[i])] + count[size_t(t.right[i])];
    for (size_t i = 0; i < n; ++i)
      if (t.left[i] >= 0) {
        first[size_t(t.left[i])] = first[i];
        first[size_t(t.right[i])] = first[i] + count[size_t(t.left[i])];
      }
    const size_t w = (count[0] + 63) / 64, base_bit = words * 64;
    tree_word.push_back(uint32_t(words));
    tree_words.push_back(uint32_t(w));
    words += w;
    leaf_value.resize(words * 64, 0.0f);
    for (size_t i = 0; i < n; ++i) {
      if (t.left[i] < 0) {
        leaf_value[base_bit + first[i]] = t.value[i];
        continue;
      }
      const size_t l = size_t(t.left[i]);
      const Clear c = clear_range(base_bit + first[l], base_bit + first[l] + count[l]);
      const int f = t.feature[i];
      const int id = builtin[size_t(f)];
      const float thr = t.threshold[i];
      if (axis[size_t(f)] == Axis::none) {
        shared_nodes[size_t(f)].push_back({thr, c});
        if (!t.default_left[i]) missing[size_t(f)].push_back(c);
      } else if (builtin_kind(id) == BuiltinKind::config_only) {
        const Axis a = axis[size_t(f)];
        for (size_t lv = 0; lv < levels(a); ++lv) {
          const float v = static_cast<float>(builtin_value(id, unit, model.platform, level_config(a, lv)));
          if (!(v < thr)) (a == Axis::cpu ? cpu_clears : gpu_clears).push_back({lv, c});
        }
      } else {
        level_nodes[size_t(f)].push_back({thr, c});
      }
    }
  }
  auto sorted = [](std::vector<std::pair<float, Clear>>& v) {
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    SortedNodes s;
    for (const auto& [thr, c] : v) {
      s.threshold.push_back(thr);
      s.clear.push_back(c);
      s.word.push_back(c.w0);
      s.mask.push_back(c.m0 & c.m1);
    }
    return s;
  };
  for (size_t f = 0; f < model.features.size(); ++f) {
    if (!shared_nodes[f].empty()) {
      SharedFeature sf;
      sf.feature = int(f);
      sf.nodes = sorted(shared_nodes[f]);
      sf.missing = missing[f];
      std::vector<uint64_t> run(words, ~uint64_t(0));
      for (size_t k = 0; k < sf.nodes.clear.size(); ++k) {
        apply(run.data(), sf.nodes.clear[k]);
        if ((k + 1) % kCheckpoint == 0) sf.checkpoint.insert(sf.checkpoint.end(), run.begin(), run.end());
      }
      shared.push_back(std::move(sf));
    }
    if (!level_nodes[f].empty()) {
      LevelFeature lf;
      lf.feature = int(f);
      lf.builtin = builtin[f];
      lf.axis = axis[f];
      lf.nodes = sorted(level_nodes[f]);
      level_features.push_back(std::move(lf));
    }
  }
  // Word-major layout ([word * levels + level]): the combination reads the levels of one word together.
  const size_t NC = model.cpu_levels.size(), NG = model.gpu_levels.size();
  std::vector<uint64_t> tmp(words);
  cpu_static.assign(NC * words, ~uint64_t(0));
  gpu_static.assign(NG * words, ~uint64_t(0));
  for (size_t lv = 0; lv < NC; ++lv) {
    std::fill(tmp.begin(), tmp.end(), ~uint64_t(0));
    for (const auto& [l, c] : cpu_clears)
      if (l == lv) apply(tmp.data(), c);
    for (size_t w = 0; w < words; ++w) cpu_static[w * NC + lv] = tmp[w];
  }
  for (size_t lv = 0; lv < NG; ++lv) {
    std::fill(tmp.begin(), tmp.end(), ~uint64_t(0));
    for (const auto& [l, c] : gpu_clears)
      if (l == lv) apply(tmp.data(), c);
    for (size_t w = 0; w < words; ++w) gpu_static[w * NG + lv] = tmp[w];
  }
  skip_origin = model.cpu_levels[0] == 0 && model.gpu_levels[0] == 0;
  one_word = std::all_of(tree_words.begin(), tree_words.end(), [](uint32_t w) { return w == 1; });
  trees_fast = true;
  // Trees of more than 64 leaves: the bit vectors grow with the leaves and a false node clears several words, while
  // a walk visits only the nodes that some configuration reaches. Walk them when the grid fits a 64-bit mask.
  if (!one_word && configs.size() <= 64) compile_walk();
}

void Predictor::Impl::tree_scores(const double* code, const LaunchShape& l, double* out) const {
  Scratch& s = scratch();
  const size_t W = words, NC = model.cpu_levels.size(), NG = model.gpu_levels.size(), C = configs.size();
  const double groups = double(l.num_groups());
  s.base.assign(W, ~uint64_t(0));
  uint64_t* base = s.base.data();
  for (const SharedFeature& sf : shared) {
    const float v = shared_value(sf.feature, code, l, groups);
    if (std::isnan(v)) {
      for (const Clear& c : sf.missing) apply(base, c);
      continue;
    }
    const size_t n = sf.nodes.false_count(v), j = n / kCheckpoint;
    if (j > 0) {
      const uint64_t* cp = sf.checkpoint.data() + (j - 1) * W;
      for (size_t w = 0; w < W; ++w) base[w] &= cp[w];
    }
    sf.nodes.apply_first(base, j * kCheckpoint, n, one_word);
  }
  s.cpu.resize(NC * W);
  s.gpu.resize(NG * W);
  uint64_t* cpu = s.cpu.data();
  uint64_t* gpu = s.gpu.data();
  for (size_t w = 0; w < W; ++w)
    for (size_t lv = 0; lv < NC; ++lv) cpu[w * NC + lv] = base[w] & cpu_static[w * NC + lv];
  std::copy(gpu_static.begin(), gpu_static.end(), gpu);
  // Launch-dependent level features: levels in increasing value, a running vector of the false nodes so far.
  for (const LevelFeature& lf : level_features) {
    const size_t L = levels(lf.axis);
    s.level_values.resize(L);
    s.order.resize(L);
    for (size_t lv = 0; lv < L; ++lv)
      s.level_values[lv] = double(static_cast<float>(level_value(lf.builtin, l, groups, lf.axis, lv)));
    std::iota(s.order.begin(), s.order.end(), size_t(0));
    std::sort(s.order.begin(), s.order.end(),
              [&](size_t a, size_t b) { return s.level_values[a] < s.level_values[b]; });
    s.run.assign(W, ~uint64_t(0));
    uint64_t* run = s.run.data();
    uint64_t* dest = lf.axis == Axis::cpu ? cpu : gpu;
    size_t k = 0;
    for (size_t lv : s.order) {
      const size_t e = lf.nodes.false_count(static_cast<float>(s.level_values[lv]));
      if (e > k) lf.nodes.apply_first(run, k, e, one_word);
      k = std::max(k, e);
      for (size_t w = 0; w < W; ++w) dest[w * L + lv] &= run[w];
    }
  }
  // Exit leaves per configuration (CPU level major, GPU level minor, as configs()) and tree; sums in tree order.
  s.acc.assign(C, model.base_score);
  float* acc = s.acc.data();
  const float* lv = leaf_value.data();
  if (one_word && NG == 9) {  // Dopia's grid: the GPU levels' sums stay in registers
    combine_one_word<9>(cpu, gpu, lv, W, NC, skip_origin, acc);
  } else if (one_word) {
    for (size_t t = 0; t < W; ++t) {
      const float* leaves = lv + t * 64;
      const uint64_t* a = cpu + t * NC;
      const uint64_t* g = gpu + t * NG;
      float* out_c = acc;
      for (size_t lc = 0; lc < NC; ++lc) {
        const uint64_t x = a[lc];
        for (size_t lg = (lc == 0 && skip_origin) ? 1 : 0; lg < NG; ++lg)
          *out_c++ += leaves[__builtin_ctzll(x & g[lg])];
      }
    }
  } else {
    const size_t T = tree_word.size();
    for (size_t t = 0; t < T; ++t) {
      const size_t w0 = tree_word[t], w1 = w0 + tree_words[t];
      float* out_c = acc;
      for (size_t lc = 0; lc < NC; ++lc)
        for (size_t lg = (lc == 0 && skip_origin) ? 1 : 0; lg < NG; ++lg) {
          size_t w = w0;
          uint64_t m = cpu[w * NC + lc] & gpu[w * NG + lg];
          while (!m && ++w < w1) m = cpu[w * NC + lc] & gpu[w * NG + lg];
          *out_c++ += lv[w * 64 + size_t(__builtin_ctzll(m))];  // the true exit leaf always survives: m != 0
        }
    }
  }
  for (size_t c = 0; c < C; ++c) out[c] = double(acc[c]);
}

void Predictor::Impl::compile_walk() {
  const size_t C = configs.size();
  all_configs = C == 64 ? ~uint64_t(0) : (uint64_t(1) << C) - 1;
  cpu_level_mask.assign(model.cpu_levels.size(), 0);
  gpu_level_mask.assign(model.gpu_levels.size(), 0);
  for (size_t c = 0; c < C; ++c) {
    cpu_level_mask[cpu_level[c]] |= uint64_t(1) << c;
    gpu_level_mask[gpu_level[c]] |= uint64_t(1) << c;
  }
  std::vector<int> level_slot(model.features.size(), -1);
  std::vector<bool> shared_used(model.features.size(), false);
  const LaunchShape unit;
  for (const Tree& t : model.trees) {
    // Breadth-first renumbering: siblings adjacent (right = left + 1), so a step is left + (goes right).
    const int32_t base = int32_t(walk_nodes.size());
    walk_roots.push_back(base);
    walk_max_nodes = std::max(walk_max_nodes, t.size());
    std::vector<int32_t> order{0};
    std::vector<int32_t> pos(t.size(), -1);
    pos[0] = 0;
    for (size_t q = 0; q < order.size(); ++q) {
      const size_t i = size_t(order[q]);
      if (t.left[i] < 0) continue;
      pos[size_t(t.left[i])] = int32_t(order.size());
      order.push_back(t.left[i]);
      pos[size_t(t.right[i])] = int32_t(order.size());
      order.push_back(t.right[i]);
    }
    for (const int32_t oi : order) {
      const size_t i = size_t(oi);
      WalkNode n;
      if (t.left[i] < 0) {
        n.kind = kLeaf;
        n.threshold = t.value[i];
        walk_nodes.push_back(n);
        continue;
      }
      n.left = base + pos[size_t(t.left[i])];
      n.threshold = t.threshold[i];
      const int f = t.feature[i];
      const int id = builtin[size_t(f)];
      if (axis[size_t(f)] == Axis::none) {
        n.kind = t.default_left[i] ? kSharedLeft : kSharedRight;
        n.slot = f;
        shared_used[size_t(f)] = true;
      } else if (builtin_kind(id) == BuiltinKind::config_only) {
        n.kind = kConfig;
        uint64_t mask = 0;
        for (size_t c = 0; c < C; ++c)
          if (static_cast<float>(builtin_value(id, unit, model.platform, configs[c])) < n.threshold)
            mask |= uint64_t(1) << c;
        n.slot = int32_t(walk_masks.size());
        walk_masks.push_back(mask);
      } else {
        n.kind = kLevel;
        if (level_slot[size_t(f)] < 0) {
          level_slot[size_t(f)] = int(walk_level_features.size());
          walk_level_features.push_back(f);
        }
        n.slot = level_slot[size_t(f)];
      }
      walk_nodes.push_back(n);
    }
  }
  for (size_t f = 0; f < shared_used.size(); ++f)
    if (shared_used[f]) walk_shared_features.push_back(int(f));
  for (const int f : walk_level_features) {
    walk_level_offset.push_back(walk_level_table_size);
    walk_level_table_size += levels(axis[size_t(f)]) + 1;
  }
  walk_level_offset.push_back(walk_level_table_size);
  walk = true;
}

void Predictor::Impl::walk_scores(const double* code, const LaunchShape& l, double* out) const {
  Scratch& s = scratch();
  const size_t C = configs.size();
  const double groups = double(l.num_groups());
  // Shared feature values, once.
  s.row.resize(model.features.size());
  for (const int f : walk_shared_features) s.row[size_t(f)] = shared_value(f, code, l, groups);
  const float* x = s.row.data();
  // Per level feature k: its levels in increasing value and, for each, the configurations of the levels before it;
  // a sentinel (+inf, all levels) ends each table. The tables' offsets are fixed: walk_level_offset.
  thread_local std::vector<float> value;
  thread_local std::vector<uint64_t> prefix;
  value.resize(walk_level_table_size);
  prefix.resize(walk_level_table_size);
  const size_t* offset = walk_level_offset.data();
  for (size_t k = 0; k < walk_level_features.size(); ++k) {
    const int f = walk_level_features[k];
    const Axis a = axis[size_t(f)];
    const size_t L = levels(a);
    float* v = value.data() + offset[k];
    uint64_t* pm = prefix.data() + offset[k];
    const auto& masks = a == Axis::cpu ? cpu_level_mask : gpu_level_mask;
    // Insertion sort of (value, level mask) pairs: a handful of levels.
    for (size_t lv = 0; lv < L; ++lv) {
      const float x_lv = static_cast<float>(level_value(builtin[size_t(f)], l, groups, a, lv));
      const uint64_t m_lv = masks[lv];
      size_t j = lv;
      for (; j > 0 && v[j - 1] > x_lv; --j) {
        v[j] = v[j - 1];
        pm[j] = pm[j - 1];
      }
      v[j] = x_lv;
      pm[j] = m_lv;
    }
    uint64_t p = 0;  // masks of the levels so far -> prefix masks
    for (size_t j = 0; j < L; ++j) {
      const uint64_t mj = pm[j];
      pm[j] = p;
      p |= mj;
    }
    v[L] = std::numeric_limits<float>::infinity();
    pm[L] = p;
  }
  s.acc.assign(C, model.base_score);
  float* acc = s.acc.data();
  thread_local std::vector<std::pair<int32_t, uint64_t>> stack;
  stack.resize(walk_max_nodes + 1);
  const WalkNode* nodes = walk_nodes.data();
  for (const int32_t root : walk_roots) {
    size_t sp = 0;
    stack[sp++] = {root, all_configs};
    while (sp) {
      auto [n, m] = stack[--sp];
      for (;;) {
        const WalkNode& nd = nodes[n];
        // Shared features first (most nodes), branch-free: the path differs from launch to launch. A missing value
        // fails both comparisons: right for kSharedRight (v < t is false), left for kSharedLeft (v >= t is false).
        if (nd.kind == kSharedRight) {
          n = nd.left + int32_t(!(x[nd.slot] < nd.threshold));
          continue;
        }
        if (nd.kind == kSharedLeft) {
          n = nd.left + int32_t(x[nd.slot] >= nd.threshold);
          continue;
        }
        if (nd.kind == kLeaf) {
          const float v = nd.threshold;
          for (uint64_t b = m; b; b &= b - 1) acc[__builtin_ctzll(b)] += v;
          break;
        }
        uint64_t lm;
        if (nd.kind == kConfig) {
          lm = m & walk_masks[size_t(nd.slot)];
        } else {
          // The configurations whose level value is below the threshold: the levels before the first value
          // >= threshold in increasing order; all of them at the sentinel.
          size_t k = offset[size_t(nd.slot)];
          const size_t end = offset[size_t(nd.slot) + 1] - 1;
          while (k < end && value[k] < nd.threshold) ++k;
          lm = m & prefix[k];
        }
        const uint64_t rm = m & ~lm;
        if (!lm) {
          n = nd.left + 1;
        } else if (!rm) {
          n = nd.left;
        } else {
          stack[sp++] = {nd.left + 1, rm};
          n = nd.left;
          m = lm;
        }
      }
    }
  }
  for (size_t c = 0; c < C; ++c) out[c] = double(acc[c]);
}

void Predictor::Impl::compile_linear() {
  size_t slots = 0;
  for (const LinearTerm& t : model.terms) {
    term_begin.push_back(factors.size());
    for (const LinearFactor& f : t.factors) {
      const Axis a = axis[size_t(f.feature)];
      if (a == Axis::both) {
        factors.clear();
        term_begin.clear();
        return;  // reference path only
      }
      factors.push_back({f.feature, a, f.log1p, f.mean, f.scale, slots});
      slots += a == Axis::none ? 1 : levels(a);
    }
  }
  term_begin.push_back(factors.size());
  factor_slots = slots;
  linear_fast = true;
}

namespace {
inline double factor_value(float x, bool log1p, double mean, double scale) {
  const double v = double(x);
  return std::isnan(v) ? 0.0 : ((log1p ? std::log1p(std::max(v, 0.0)) : v) - mean) / scale;
}
}  // namespace

void Predictor::Impl::linear_scores(const double* code, const LaunchShape& l, double* out) const {
  Scratch& s = scratch();
  const double groups = double(l.num_groups());
  s.factors.resize(factor_slots);
  double* z = s.factors.data();
  for (const Factor& f : factors) {
    if (f.axis == Axis::none) {
      z[f.slot] = factor_value(shared_value(f.feature, code, l, groups), f.log1p, f.mean, f.scale);
    } else {
      const int id = builtin[size_t(f.feature)];
      for (size_t lv = 0; lv < levels(f.axis); ++lv)
        z[f.slot + lv] =
            factor_value(static_cast<float>(level_value(id, l, groups, f.axis, lv)), f.log1p, f.mean, f.scale);
    }
  }
  const size_t T = term_begin.size() - 1;
  for (size_t c = 0; c < configs.size(); ++c) {
    double sum = model.intercept;
    for (size_t t = 0; t < T; ++t) {
      double prod = model.terms[t].weight;
      for (size_t k = term_begin[t]; k < term_begin[t + 1]; ++k) {
        const Factor& f = factors[k];
        prod *= z[f.slot + (f.axis == Axis::none ? 0 : f.axis == Axis::cpu ? cpu_level[c] : gpu_level[c])];
      }
      sum += prod;
    }
    out[c] = sum;
  }
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
    for (const LinearFactor& f : term.factors) prod *= factor_value(x[f.feature], f.log1p, f.mean, f.scale);
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
  if (I.walk) return I.walk_scores(code, launch, out);
  if (I.trees_fast) return I.tree_scores(code, launch, out);
  if (I.linear_fast) return I.linear_scores(code, launch, out);
  scores_reference(code, launch, out);
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

std::optional<Decision> Predictor::cached(const std::string& kernel_id, const LaunchShape& launch,
                                          const ArgValues& args) const {
  const Impl& I = *impl_;
  if (I.options.cache_capacity == 0) return std::nullopt;
  const std::string key = cache_key(kernel_id, launch, args);
  auto& shard = I.shards[std::hash<std::string>{}(key) % kShards];
  std::shared_lock lock(shard.mu);
  const auto it = shard.map.find(key);
  if (it == shard.map.end()) return std::nullopt;
  Decision d = it->second;
  d.cached = true;
  return d;
}

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
