// The features' layout over the grid, and the choice of a scoring backend for a model (scorer.hpp).
#include "scorer.hpp"

#include <algorithm>
#include <cmath>

namespace dop::pred {

Layout::Layout(const Model& m) : model(m), configs(m.configs()) {
  int num_code = 0;
  for (const Feature& f : model.features) {
    if (f.source == Source::code) {
      builtin.push_back(-1);
      code_index.push_back(num_code++);
      axis.push_back(Axis::none);
    } else {
      const int id = builtin_id(f.name);
      builtin.push_back(id);
      code_index.push_back(-1);
      axis.push_back(builtin_axis(id));
    }
  }
  for (const Config& c : configs) {
    cpu_level.push_back(
        size_t(std::find(model.cpu_levels.begin(), model.cpu_levels.end(), c.cpu) - model.cpu_levels.begin()));
    gpu_level.push_back(
        size_t(std::find(model.gpu_levels.begin(), model.gpu_levels.end(), c.gpu) - model.gpu_levels.begin()));
  }
  for (double c : model.cpu_levels) level_cores.push_back(cpu_cores_of(c, model.platform.cpu_units));
  estimate_keys = dop::pred::estimate_keys(model.features);
  for (int id : builtin) uses_estimate |= is_estimate(id);
  if (model.platform.figures) {
    for (double k : level_cores) cpu_device.push_back(dop::pred::cpu_level(*model.platform.figures, k));
    for (double g : model.gpu_levels) gpu_device.push_back(dop::pred::gpu_level(*model.platform.figures, g));
    host_bps = host_bandwidth_gbs(*model.platform.figures) * 1e9;
  }
  const Config corners[3] = {{1, 0}, {0, 1}, {1, 1}};
  for (int k = 0; k < 3; ++k) {
    const auto it = std::find_if(configs.begin(), configs.end(),
                                 [&](const Config& c) { return c.cpu == corners[k].cpu && c.gpu == corners[k].gpu; });
    corner[k] = it == configs.end() ? -1 : long(it - configs.begin());
  }
}

double Layout::best_estimate(const double* code, const LaunchShape& l) const {
  if (!model.platform.figures) return std::nan("");
  return best_estimate_ms(*model.platform.figures, estimate_inputs(estimate_keys, code, l), model.platform.cpu_units);
}

double Layout::estimates(const double* code, const LaunchShape& l, std::vector<double>& est_ms,
                         std::vector<double>& est_rel) const {
  const size_t C = configs.size();
  est_ms.resize(C);
  est_rel.resize(C);
  const EstimateInputs in = estimate_inputs(estimate_keys, code, l);
  if (!in.known() || !model.platform.figures) {
    std::fill(est_ms.begin(), est_ms.end(), std::nan(""));
    std::fill(est_rel.begin(), est_rel.end(), std::nan(""));
    return std::nan("");
  }
  const PlatformFigures& f = *model.platform.figures;
  // What the launch asks of each device, then each device's terms at each of its levels: once per decision.
  const DeviceDemand cpu_asks = cpu_demand(f, in), gpu_asks = gpu_demand(f, in);
  thread_local std::vector<DeviceShare> cpu, gpu;
  cpu.resize(cpu_device.size());
  gpu.resize(gpu_device.size());
  for (size_t lv = 0; lv < cpu.size(); ++lv)
    cpu[lv] = device_share(device_cost(cpu_device[lv], cpu_asks), in.items, host_bps);
  for (size_t lv = 0; lv < gpu.size(); ++lv)
    gpu[lv] = device_share(device_cost(gpu_device[lv], gpu_asks), in.items, host_bps);
  for (size_t c = 0; c < C; ++c) est_ms[c] = combined_ms(cpu[cpu_level[c]], gpu[gpu_level[c]], in.items);
  // best_estimate_ms is the least of the corners' estimates: the same combinations of the same costs.
  const double best = corner[0] >= 0 && corner[1] >= 0 && corner[2] >= 0
                          ? std::min({est_ms[size_t(corner[0])], est_ms[size_t(corner[1])], est_ms[size_t(corner[2])]})
                          : best_estimate_ms(f, in, model.platform.cpu_units);
  for (size_t c = 0; c < C; ++c) est_rel[c] = est_ms[c] / best;
  return best;
}

namespace {

// A feature that depends on both levels (no model the trainer makes has one) leaves only the reference backend.
// The estimate features depend on both levels and the fast tree backends handle them (per configuration).
bool tree_splits_on_both_levels(const Model& model, const Layout& layout) {
  for (const Tree& t : model.trees)
    for (size_t i = 0; i < t.size(); ++i)
      if (t.left[i] >= 0 && layout.axis[size_t(t.feature[i])] == Axis::both &&
          !is_estimate(layout.builtin[size_t(t.feature[i])]))
        return true;
  return false;
}

bool factor_on_both_levels(const Model& model, const Layout& layout) {
  for (const LinearTerm& t : model.terms)
    for (const LinearFactor& f : t.factors)
      if (layout.axis[size_t(f.feature)] == Axis::both) return true;
  return false;
}

bool trees_fit_one_word(const Model& model) {  // every tree has at most 64 leaves
  return std::all_of(model.trees.begin(), model.trees.end(), [](const Tree& t) {
    return std::count_if(t.left.begin(), t.left.end(), [](int32_t l) { return l < 0; }) <= 64;
  });
}

}  // namespace

std::unique_ptr<Scorer> make_scorer(const Model& model) {
  Layout layout(model);
  if (model.trees.empty()) {
    if (factor_on_both_levels(model, layout)) return make_reference_scorer(model);
    return make_linear_scorer(std::move(layout));
  }
  if (tree_splits_on_both_levels(model, layout)) return make_reference_scorer(model);
  // Trees of more than 64 leaves: the bit vectors grow with the leaves and a false node clears several words, while
  // a walk visits only the nodes that some configuration reaches. Walk them when the grid fits a 64-bit mask.
  if (!trees_fit_one_word(model) && layout.configs.size() <= 64) return make_walk_scorer(std::move(layout));
  return make_bitvector_scorer(std::move(layout));
}

}  // namespace dop::pred
