// The features' layout over the grid, and the choice of a scoring backend for a model (scorer.hpp).
#include "scorer.hpp"

#include <algorithm>

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
}

namespace {

// A feature that depends on both levels (no model the trainer makes has one) leaves only the reference backend.
bool tree_splits_on_both_levels(const Model& model, const Layout& layout) {
  for (const Tree& t : model.trees)
    for (size_t i = 0; i < t.size(); ++i)
      if (t.left[i] >= 0 && layout.axis[size_t(t.feature[i])] == Axis::both) return true;
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
