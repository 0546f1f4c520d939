// The bit-vector backend (scorer.hpp) for tree ensembles.
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
#include <algorithm>
#include <cmath>
#include <numeric>

#include "scorer.hpp"

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
  const uint64_t from_lo = ~uint64_t(0) << lo;                                          // bits >= lo
  const uint64_t below_hi = hi == 64 ? ~uint64_t(0) : (uint64_t(1) << hi) - 1;          // bits < hi
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
  // The words the nodes clear, in the order the sorted nodes first touch them: the first touched_by[k] of them are
  // every word the first k nodes touch (the others of a running vector of this feature are all ones).
  std::vector<uint32_t> touched;
  std::vector<uint32_t> touched_by;  // size: nodes + 1
  /// The nodes that are false for value v: the first false_count(v) (threshold <= v).
  size_t false_count(float v) const {
    return size_t(std::upper_bound(threshold.begin(), threshold.end(), v) - threshold.begin());
  }
  /// false_count(v) for a v at least the value whose count was `from` (levels visited in increasing value): a
  /// galloping search forward from there, as the next level's count is usually a few nodes further on.
  size_t false_count_from(float v, size_t from) const {
    const size_t n = threshold.size();
    size_t lo = from, step = 1;
    while (lo + step <= n && !(v < threshold[lo + step - 1])) {
      lo += step;
      step *= 2;
    }
    const auto first = threshold.begin() + long(lo), last = threshold.begin() + long(std::min(n, lo + step));
    return size_t(std::upper_bound(first, last, v) - threshold.begin());
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
  Axis axis = Axis::cpu;  ///< Axis::both: the estimate, one value per configuration
  SortedNodes nodes;
  std::vector<Clear> missing;  ///< the estimate's nodes that are false for a missing value (default right)
};

// Exit leaves of one-word trees for a grid of NG GPU levels: per CPU level, the NG sums run over the trees in
// registers (each still in tree order). With the estimate features, `both` holds a vector per grid position
// ([(cpu level * NG + gpu level) * trees + tree]; the origin (0, 0), when it is no configuration, has an all-ones
// row whose sum is discarded), so the GPU levels' loop has a constant trip count and unrolls.
template <size_t NG, bool kBoth>
void combine_one_word(const uint64_t* cpu, const uint64_t* gpu, const uint64_t* both, const float* leaf_value,
                      size_t trees, size_t NC, bool skip_origin, float* acc) {
  float* out_c = acc;
  for (size_t lc = 0; lc < NC; ++lc) {
    float r[NG];
    const size_t first = (lc == 0 && skip_origin) ? 1 : 0;
    for (size_t lg = 0; lg < NG; ++lg) r[lg] = lg < first ? 0.0f : out_c[lg - first];
    const uint64_t* row = kBoth ? both + lc * NG * trees : nullptr;  // grid position (lc, 0)
    for (size_t t = 0; t < trees; ++t) {
      const uint64_t x = cpu[t * NC + lc];
      const uint64_t* g = gpu + t * NG;
      const float* leaves = leaf_value + t * 64;
      for (size_t lg = 0; lg < NG; ++lg) {
        const uint64_t m = kBoth ? x & g[lg] & row[lg * trees + t] : x & g[lg];
        r[lg] += leaves[unsigned(__builtin_ctzll(m))];
      }
    }
    for (size_t lg = first; lg < NG; ++lg) *out_c++ = r[lg];
  }
}

struct Scratch {
  std::vector<uint64_t> base, cpu, gpu, run, both;
  std::vector<double> est_ms, est_rel;
  std::vector<float> acc;
  std::vector<double> level_values;
  std::vector<size_t> order, est_order;
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

class BitVectorScorer final : public Scorer {
 public:
  explicit BitVectorScorer(Layout layout);
  void scores(const double* code, const LaunchShape& l, double* out) const override;

 private:
  Layout layout_;
  size_t words = 0;                  // total words of the bit vector
  std::vector<uint32_t> tree_word;   // first word of each tree
  std::vector<uint32_t> tree_words;  // words of each tree
  bool one_word = false;             // every tree has at most 64 leaves
  std::vector<float> leaf_value;     // per bit
  std::vector<SharedFeature> shared;
  std::vector<LevelFeature> level_features;
  std::vector<uint64_t> cpu_static, gpu_static;  // configuration-only nodes applied: [word * levels + level]
  bool skip_origin = false;                      // the grid's (0, 0) is not a configuration
  bool uses_estimate = false;                    // a level feature of both axes: per-configuration vectors
};

BitVectorScorer::BitVectorScorer(Layout layout) : layout_(std::move(layout)) {
  const Model& model = layout_.model;
  const auto& builtin = layout_.builtin;
  const auto& axis = layout_.axis;
  std::vector<std::vector<std::pair<float, Clear>>> shared_nodes(model.features.size()),
      level_nodes(model.features.size());
  std::vector<std::vector<Clear>> missing(model.features.size());
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
        for (size_t lv = 0; lv < layout_.levels(a); ++lv) {
          const float v = static_cast<float>(builtin_value(id, unit, model.platform, layout_.level_config(a, lv)));
          if (!(v < thr)) (a == Axis::cpu ? cpu_clears : gpu_clears).push_back({lv, c});
        }
      } else {
        level_nodes[size_t(f)].push_back({thr, c});
        if (!t.default_left[i]) missing[size_t(f)].push_back(c);
      }
    }
  }
  auto sorted = [](std::vector<std::pair<float, Clear>>& v) {
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    SortedNodes s;
    std::vector<bool> seen;
    s.touched_by.push_back(0);
    for (const auto& [thr, c] : v) {
      s.threshold.push_back(thr);
      s.clear.push_back(c);
      s.word.push_back(c.w0);
      s.mask.push_back(c.m0 & c.m1);
      if (seen.size() <= c.w1) seen.resize(c.w1 + 1, false);
      for (uint32_t w = c.w0; w <= c.w1; ++w)
        if (!seen[w]) {
          seen[w] = true;
          s.touched.push_back(w);
        }
      s.touched_by.push_back(uint32_t(s.touched.size()));
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
      lf.missing = missing[f];
      uses_estimate |= lf.axis == Axis::both;
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
}

void BitVectorScorer::scores(const double* code, const LaunchShape& l, double* out) const {
  Scratch& s = scratch();
  const Model& model = layout_.model;
  const size_t W = words, NC = model.cpu_levels.size(), NG = model.gpu_levels.size(), C = layout_.configs.size();
  const double groups = double(l.num_groups());
  s.base.assign(W, ~uint64_t(0));
  uint64_t* base = s.base.data();
  // The estimate of every configuration, once, where a tree splits on it; else at most est_best_ms (a shared feature).
  const double best = !layout_.uses_estimate ? std::nan("")
                      : uses_estimate        ? layout_.estimates(code, l, s.est_ms, s.est_rel)
                                             : layout_.best_estimate(code, l);
  for (const SharedFeature& sf : shared) {
    const float v = layout_.shared_value(sf.feature, code, l, groups, best);
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
  // The estimate: for a launch it knows nothing of, missing for every configuration alike, so its features' missing
  // clears go to the shared vector.
  const auto estimate_of = [&](const LevelFeature& lf) {
    return lf.builtin == kEstMs ? s.est_ms.data() : s.est_rel.data();
  };
  const bool est_missing = std::isnan(best);
  // Per-configuration vectors by grid position: configuration c's is row c + org; the origin's row (org = 1: the
  // grid's (0, 0) is no configuration) stays all ones.
  const size_t org = skip_origin ? 1 : 0;
  if (uses_estimate) {
    s.both.resize((C + org) * W);
    std::fill(s.both.begin(), s.both.begin() + long(org * W), ~uint64_t(0));
    if (est_missing)
      for (const LevelFeature& lf : level_features)
        if (lf.axis == Axis::both)
          for (const Clear& c : lf.missing) apply(base, c);
  }
  // The configurations in increasing estimate, once for est_ms and est_rel alike: est_rel is est_ms divided by
  // one positive number, so the order (and its rounding to float) is the same.
  if (uses_estimate && !est_missing) {
    s.est_order.resize(C);
    std::iota(s.est_order.begin(), s.est_order.end(), size_t(0));
    const double* e = s.est_ms.data();
    std::sort(s.est_order.begin(), s.est_order.end(), [e](size_t a, size_t b) { return e[a] < e[b]; });
  }
  s.cpu.resize(NC * W);
  s.gpu.resize(NG * W);
  uint64_t* cpu = s.cpu.data();
  uint64_t* gpu = s.gpu.data();
  for (size_t w = 0; w < W; ++w)
    for (size_t lv = 0; lv < NC; ++lv) cpu[w * NC + lv] = base[w] & cpu_static[w * NC + lv];
  std::copy(gpu_static.begin(), gpu_static.end(), gpu);
  bool rows_set = false;  // the first per-configuration feature writes the configurations' vectors, later ones AND
  // Launch-dependent level features: levels in increasing value, a running vector of the false nodes so far. The
  // estimate's "levels" are the configurations (in est_order), its vectors configuration-major.
  for (const LevelFeature& lf : level_features) {
    const size_t L = layout_.levels(lf.axis);
    const bool both = lf.axis == Axis::both;
    if (both && est_missing) continue;  // its missing clears are in base
    if (!both) {
      s.level_values.resize(L);
      s.order.resize(L);
      for (size_t lv = 0; lv < L; ++lv)
        s.level_values[lv] = double(static_cast<float>(layout_.level_value(lf.builtin, l, groups, lf.axis, lv)));
      std::iota(s.order.begin(), s.order.end(), size_t(0));
      std::sort(s.order.begin(), s.order.end(),
                [&](size_t a, size_t b) { return s.level_values[a] < s.level_values[b]; });
    }
    s.run.assign(W, ~uint64_t(0));
    uint64_t* run = s.run.data();
    uint64_t* dest = lf.axis == Axis::cpu ? cpu : gpu;
    const double* value = both ? estimate_of(lf) : s.level_values.data();
    size_t k = 0;
    for (size_t lv : both ? s.est_order : s.order) {
      const size_t e = lf.nodes.false_count_from(static_cast<float>(value[lv]), k);
      if (e > k) lf.nodes.apply_first(run, k, e, one_word);
      k = std::max(k, e);
      // Only the words the false nodes so far touched differ from all ones in the running vector.
      const uint32_t* touched = lf.nodes.touched.data();
      const size_t n_touched = lf.nodes.touched_by[k];
      if (both && rows_set) {
        uint64_t* b = s.both.data() + (lv + org) * W;
        for (size_t i = 0; i < n_touched; ++i) b[touched[i]] &= run[touched[i]];
      } else if (both) {
        std::copy(run, run + W, s.both.data() + (lv + org) * W);
      } else {
        for (size_t i = 0; i < n_touched; ++i) dest[size_t(touched[i]) * L + lv] &= run[touched[i]];
      }
    }
    rows_set |= both;
  }
  if (uses_estimate && !rows_set) std::fill(s.both.begin(), s.both.end(), ~uint64_t(0));
  const uint64_t* both = uses_estimate ? s.both.data() : nullptr;
  // Exit leaves per configuration (CPU level major, GPU level minor, as configs()) and tree; sums in tree order.
  s.acc.assign(C, model.base_score);
  float* acc = s.acc.data();
  const float* lv = leaf_value.data();
  if (one_word && NG == 9) {  // Dopia's grid: the GPU levels' sums stay in registers
    if (both)
      combine_one_word<9, true>(cpu, gpu, both, lv, W, NC, skip_origin, acc);
    else
      combine_one_word<9, false>(cpu, gpu, both, lv, W, NC, skip_origin, acc);
  } else if (one_word) {
    for (size_t t = 0; t < W; ++t) {
      const float* leaves = lv + t * 64;
      const uint64_t* a = cpu + t * NC;
      const uint64_t* g = gpu + t * NG;
      float* out_c = acc;
      size_t c = 0;
      for (size_t lc = 0; lc < NC; ++lc) {
        const uint64_t x = a[lc];
        for (size_t lg = (lc == 0 && skip_origin) ? 1 : 0; lg < NG; ++lg, ++c)
          *out_c++ += leaves[__builtin_ctzll(both ? x & g[lg] & both[(c + org) * W + t] : x & g[lg])];
      }
    }
  } else {
    const size_t T = tree_word.size();
    for (size_t t = 0; t < T; ++t) {
      const size_t w0 = tree_word[t], w1 = w0 + tree_words[t];
      float* out_c = acc;
      for (size_t lc = 0; lc < NC; ++lc)
        for (size_t lg = (lc == 0 && skip_origin) ? 1 : 0; lg < NG; ++lg) {
          const uint64_t* b = both ? both + (size_t(out_c - acc) + org) * W : nullptr;  // this configuration's vector
          auto word = [&](size_t w) { return cpu[w * NC + lc] & gpu[w * NG + lg] & (b ? b[w] : ~uint64_t(0)); };
          size_t w = w0;
          uint64_t m = word(w);
          while (!m && ++w < w1) m = word(w);
          *out_c++ += lv[w * 64 + size_t(__builtin_ctzll(m))];  // the true exit leaf always survives: m != 0
        }
    }
  }
  for (size_t c = 0; c < C; ++c) out[c] = double(acc[c]);
}

}  // namespace

std::unique_ptr<Scorer> make_bitvector_scorer(Layout layout) {
  return std::make_unique<BitVectorScorer>(std::move(layout));
}

}  // namespace dop::pred
