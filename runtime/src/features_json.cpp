// What the runtime reads from a kernel's static features (`dop features --json`, a bundle's features_json): the code
// features for the predictor. (Memory footprints are read in engine/footprint.cpp.)
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

<<<<<<< HEAD
#include "dop/executor.hpp"
=======
#include "dop/expr.hpp"
>>>>>>> predictor
#include "dop/predictor.hpp"

namespace dop {

using json = nlohmann::json;
<<<<<<< HEAD
=======
using i128 = __int128;

const json* find_footprint(const json& j) {
  if (!j.is_object()) return nullptr;
  if (j.contains("footprint")) return &j["footprint"];
  if (j.contains("features") && j["features"].is_object() && j["features"].contains("footprint"))
    return &j["features"]["footprint"];
  if (j.contains("kernels") && j["kernels"].is_array() && j["kernels"].size() == 1)
    return find_footprint(j["kernels"][0]);
  return nullptr;
}

struct Interval {
  i128 lo, hi;
};
constexpr i128 kLimit = i128(1) << 62;  // beyond this a range is useless (and products could overflow)

Interval mul(const Interval& a, const Interval& b) {
  const i128 c[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}
bool sane(const Interval& a) { return a.lo > -kLimit && a.hi < kLimit; }

// An atom's range; an atom whose range cannot be evaluated (a float argument, a name this launch lacks) leaves the
// arguments that use it unbounded. An empty range (a loop that does not run) becomes its low end: a safe stand-in.
std::optional<Interval> evaluate(const std::string& lo, const std::string& hi,
                                 const std::map<std::string, int64_t>& env) {
  try {
    Interval r{expr::evaluate(lo, env), expr::evaluate(hi, env)};
    if (r.hi < r.lo) r.hi = r.lo;
    return r;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace
>>>>>>> predictor

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
