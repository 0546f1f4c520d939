// The walk backend (scorer.hpp) for tree ensembles with trees of more than 64 leaves, on grids of at most 64
// configurations: every tree is walked once per decision for all configurations together, carrying the 64-bit mask
// of the configurations that reach a node. Nodes on shared features send the whole mask one way; nodes on level
// features split it. Leaves are summed per configuration in tree order in float, as XGBoost does. The estimate
// features (one value per configuration) split it at each node the walk reaches: the configurations of the node's
// mask whose value is below the threshold go left, all configurations compared at once (the walk reaches few such
// nodes; placing every value among all of a feature's thresholds, per decision, cost more).
#include <algorithm>
#include <cmath>
#include <limits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "scorer.hpp"

namespace dop::pred {

namespace {

// Configurations are compared four at a time: the estimate's rows are padded to a multiple of four.
constexpr size_t kLanes = 4;

// Bit c set where v[c] < t, for c < n (n a multiple of kLanes): one comparison of all configurations of a node, where
// walking the node's mask bit by bit cost a dependent step per configuration. NaN compares false either way.
inline uint64_t below_threshold(const float* v, size_t n, float t) {
  uint64_t mask = 0;
#if defined(__SSE2__)
  const __m128 threshold = _mm_set1_ps(t);
  for (size_t c = 0; c < n; c += kLanes)
    mask |= uint64_t(unsigned(_mm_movemask_ps(_mm_cmplt_ps(_mm_loadu_ps(v + c), threshold)))) << c;
#else
  for (size_t c = 0; c < n; ++c) mask |= uint64_t(v[c] < t) << c;
#endif
  return mask;
}

class WalkScorer final : public Scorer {
 public:
  explicit WalkScorer(Layout layout);
  void scores(const double* code, const LaunchShape& l, double* out) const override;

 private:
  struct WalkNode {       // 16 bytes: a decision tree of 2,000 nodes stays in L1
    float threshold = 0;  // split threshold, or the leaf value
    int32_t slot = 0;     // kShared*: feature index; kConfig: index into walk_masks; kLevel: level feature index;
                          // kEst*: 0 for est_ms, 1 for est_rel
    int32_t left = -1;    // the right child is left + 1
    uint32_t kind = 0;
  };
  // kShared*, kEst*: where a missing value goes (the estimate's are missing for all configurations or none).
  enum : uint32_t { kLeaf, kSharedRight, kSharedLeft, kConfig, kLevel, kEstRight, kEstLeft };
  Layout layout_;
  std::vector<uint64_t> walk_masks;  // kConfig: the configurations that go left
  std::vector<WalkNode> walk_nodes;
  std::vector<int32_t> walk_roots;
  std::vector<int> walk_level_features;   // builtin feature index per level slot
  std::vector<int> walk_shared_features;  // shared features the walk reads
  std::vector<size_t> walk_level_offset;  // start of each level feature's table, then the total
  size_t walk_level_table_size = 0;
  std::vector<uint64_t> cpu_level_mask, gpu_level_mask;  // configurations at each level
  size_t walk_max_nodes = 0;
  uint64_t all_configs = 0;
  bool uses_estimate = false;              // a node splits on est_ms or est_rel
  bool splits_on_est[2] = {false, false};  // est_ms, est_rel
  size_t est_stride = 0;                   // configurations rounded up to kLanes: a row of the estimate's values
};

WalkScorer::WalkScorer(Layout layout) : layout_(std::move(layout)) {
  const Model& model = layout_.model;
  const auto& configs = layout_.configs;
  const auto& builtin = layout_.builtin;
  const auto& axis = layout_.axis;
  const size_t C = configs.size();
  all_configs = C == 64 ? ~uint64_t(0) : (uint64_t(1) << C) - 1;
  cpu_level_mask.assign(model.cpu_levels.size(), 0);
  gpu_level_mask.assign(model.gpu_levels.size(), 0);
  for (size_t c = 0; c < C; ++c) {
    cpu_level_mask[layout_.cpu_level[c]] |= uint64_t(1) << c;
    gpu_level_mask[layout_.gpu_level[c]] |= uint64_t(1) << c;
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
      } else if (axis[size_t(f)] == Axis::both) {
        n.kind = t.default_left[i] ? kEstLeft : kEstRight;
        n.slot = id == kEstMs ? 0 : 1;
        uses_estimate = true;
        splits_on_est[n.slot] = true;
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
    walk_level_table_size += layout_.levels(axis[size_t(f)]) + 1;
  }
  walk_level_offset.push_back(walk_level_table_size);
  est_stride = (C + kLanes - 1) / kLanes * kLanes;
}

void WalkScorer::scores(const double* code, const LaunchShape& l, double* out) const {
  thread_local std::vector<float> row, sums;  // per thread: feature values, outputs
  const Model& model = layout_.model;
  const size_t C = layout_.configs.size();
  const double groups = double(l.num_groups());
  // The estimate of every configuration, once, where a node splits on it; else at most est_best_ms (a shared feature).
  thread_local std::vector<double> est_ms, est_rel;
  const double best = !layout_.uses_estimate ? std::nan("")
                      : uses_estimate        ? layout_.estimates(code, l, est_ms, est_rel)
                                             : layout_.best_estimate(code, l);
  // Shared feature values, once.
  row.resize(model.features.size());
  for (const int f : walk_shared_features) row[size_t(f)] = layout_.shared_value(f, code, l, groups, best);
  const float* x = row.data();
  // Per level feature k: its levels in increasing value and, for each, the configurations of the levels before it;
  // a sentinel (+inf, all levels) ends each table. The tables' offsets are fixed: walk_level_offset.
  thread_local std::vector<float> value;
  thread_local std::vector<uint64_t> prefix;
  value.resize(walk_level_table_size);
  prefix.resize(walk_level_table_size);
  const size_t* offset = walk_level_offset.data();
  for (size_t k = 0; k < walk_level_features.size(); ++k) {
    const int f = walk_level_features[k];
    const Axis a = layout_.axis[size_t(f)];
    const size_t L = layout_.levels(a);
    float* v = value.data() + offset[k];
    uint64_t* pm = prefix.data() + offset[k];
    const auto& masks = a == Axis::cpu ? cpu_level_mask : gpu_level_mask;
    // Insertion sort of (value, level mask) pairs: a handful of levels.
    for (size_t lv = 0; lv < L; ++lv) {
      const float x_lv = static_cast<float>(layout_.level_value(layout_.builtin[size_t(f)], l, groups, a, lv));
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
  // The estimate features' values as the trees compare them, those the nodes split on: est_ms's row, then est_rel's
  // (each padded to est_stride).
  thread_local std::vector<float> est;
  const bool est_missing = std::isnan(best);  // a launch the estimate knows nothing of: missing everywhere
  if (uses_estimate && !est_missing) {
    est.assign(2 * est_stride, 0.0f);
    const std::vector<double>* values[2] = {&est_ms, &est_rel};
    for (size_t k = 0; k < 2; ++k)
      if (splits_on_est[k])
        for (size_t c = 0; c < C; ++c) est[k * est_stride + c] = static_cast<float>((*values[k])[c]);
  }
  sums.assign(C, model.base_score);
  float* acc = sums.data();
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
        } else if (nd.kind >= kEstRight) {
          if (est_missing) {
            lm = nd.kind == kEstLeft ? m : 0;
          } else {
            lm = m & below_threshold(est.data() + size_t(nd.slot) * est_stride, est_stride, nd.threshold);
          }
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

}  // namespace

std::unique_ptr<Scorer> make_walk_scorer(Layout layout) { return std::make_unique<WalkScorer>(std::move(layout)); }

}  // namespace dop::pred
