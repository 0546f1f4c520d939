// What the runtime reads from a kernel's static features (`dop features --json`, a bundle's features_json): the code
// features for the predictor. (Memory footprints are read in engine/footprint.cpp.)
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "dop/executor.hpp"
#include "dop/predictor.hpp"

namespace dop {

using json = nlohmann::json;

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
    if (v.is_number())
      c.values[k] = v.get<double>();
    else if (v.is_null())
      c.values[k] = std::nan("");
    else if (v.is_string())
      c.exprs[k] = v.get<std::string>();
    else if (v.is_boolean())
      c.values[k] = v.get<bool>() ? 1 : 0;
  }
  return c;
}

}  // namespace dop
