#include "code_features.hpp"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#if DOP_HAVE_FEATURES
#include "dop/features.hpp"
#endif

namespace dop::cli {

using nlohmann::json;

pred::CodeFeatures code_features_from_json(const std::string& text, const std::string& origin,
                                           const std::string& kernel) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw std::runtime_error(origin + ": invalid JSON (byte " + std::to_string(e.byte) + "): " + e.what());
  }
  const json* obj = &j;
  if (j.is_object() && j.contains("kernels")) {
    const json& ks = j["kernels"];
    const json* found = nullptr;
    std::string names;
    for (const auto& k : ks) {
      const std::string n = k.value("kernel", "");
      names += (names.empty() ? "" : ", ") + n;
      if (kernel.empty() ? ks.size() == 1 : n == kernel) found = &k;
    }
    if (!found)
      throw std::runtime_error(origin + ": " +
                               (kernel.empty() ? "several kernels (" + names + "): choose one with --kernel"
                                               : "no kernel '" + kernel + "' (it has " + names + ")"));
    obj = found;
  }
  if (obj->is_object() && obj->contains("features")) {
    if (!(*obj)["features"].is_object()) throw std::runtime_error(origin + ": kernel has no \"features\" object");
    obj = &(*obj)["features"];
  }
  if (!obj->is_object()) throw std::runtime_error(origin + ": expected a JSON object of features");
  pred::CodeFeatures c;
  for (const auto& [k, v] : obj->items()) {
    if (v.is_number()) c.values[k] = v.get<double>();
    else if (v.is_null()) c.values[k] = std::nan("");
    else if (v.is_string()) c.exprs[k] = v.get<std::string>();
    else if (v.is_boolean()) c.values[k] = v.get<bool>() ? 1 : 0;
  }
  return c;
}

pred::CodeFeatures code_features_from_source(const std::string& source, const std::string& file,
                                             const std::string& kernel, const std::string& build_options) {
#if DOP_HAVE_FEATURES
  features::Options o;
  o.kernel = kernel;
  o.build_options = build_options;
  const auto r = features::analyze(source, file, o);
  for (const auto& d : r.diagnostics)
    if (d.severity == features::Diagnostic::Severity::error || d.severity == features::Diagnostic::Severity::fatal)
      std::fprintf(stderr, "%s\n", d.str().c_str());
  const features::KernelFeatures* k = nullptr;
  std::string names;
  for (const auto& x : r.kernels) {
    names += (names.empty() ? "" : ", ") + x.name;
    if (kernel.empty() ? r.kernels.size() == 1 : x.name == kernel) k = &x;
  }
  if (!k)
    throw std::runtime_error(file + ": " +
                             (kernel.empty() ? "choose a kernel with --kernel (" + names + ")"
                                             : "no kernel '" + kernel + "' (found: " + names + ")"));
  if (!k->complete) throw std::runtime_error(file + ": the analysis of kernel '" + k->name + "' is incomplete");
  pred::CodeFeatures c;
  for (const auto& [key, v] : k->values()) c.values[key] = v;
  c.exprs["global_bytes_per_item_expr"] = k->global_bytes_per_item_expr;
  return c;
#else
  (void)source;
  (void)kernel;
  (void)build_options;
  throw std::runtime_error("this dop was built without the features library (analysis tier): give the code "
                           "features of " + file + " another way (dop features --json, or a kernel bundle)");
#endif
}

}  // namespace dop::cli
