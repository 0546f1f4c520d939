// Checks of the features' memory footprint (docs/features.md, "Memory footprint") that need no runtime: the names
// a chunk's range expressions may use, and whether a kernel's footprint object is well-formed.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "dop/expr.hpp"

namespace dop::test {

/// Launch and chunk names for a launch of `global` x `local` work-items whose chunk covers gid [lo, hi] along the
/// last dimension `dims - 1` (whole launch along the others).
inline std::map<std::string, int64_t> chunk_values(unsigned dims, const int64_t global[3], const int64_t local[3],
                                                   int64_t lo, int64_t hi) {
  std::map<std::string, int64_t> v;
  v["work_dim"] = dims;
  for (unsigned d = 0; d < 3; ++d) {
    const int64_t g = d < dims ? global[d] : 1, l = d < dims ? local[d] : 1;
    const std::string s = std::to_string(d);
    v["global_size_" + s] = g;
    v["local_size_" + s] = l;
    v["num_groups_" + s] = (g + l - 1) / l;
    v["global_offset_" + s] = 0;
    const bool chunk = d + 1 == dims;
    v["gid_lo_" + s] = chunk ? lo : 0;
    v["gid_hi_" + s] = chunk ? hi : g - 1;
    v["group_lo_" + s] = v["gid_lo_" + s] / l;
    v["group_hi_" + s] = v["gid_hi_" + s] / l;
  }
  return v;
}

/// Checks a kernel's "footprint" object: one entry per global/constant/local pointer argument, every whole one has a
/// reason, every atom used has a range whose expressions evaluate with `values` (which must define every scalar
/// argument and launch name). Returns "" when well-formed, else what is wrong.
inline std::string footprint_problem(const nlohmann::ordered_json& kernel,
                                     const std::map<std::string, int64_t>& values) {
  if (!kernel.contains("footprint")) return "no footprint";
  const auto& fp = kernel.at("footprint");
  if (!fp.contains("args") || !fp.at("args").is_object() || !fp.contains("ranges") || !fp.at("ranges").is_object())
    return "footprint without args/ranges objects";
  for (const auto& a : kernel.at("args")) {
    const bool want =
        a.at("pointer").get<bool>() &&
        (a.at("address_space") == "global" || a.at("address_space") == "constant" || a.at("address_space") == "local");
    if (want != fp.at("args").contains(a.at("name").get<std::string>()))
      return "argument " + a.at("name").get<std::string>() + (want ? " missing" : " should not be there");
  }
  for (const auto& [name, a] : fp.at("args").items()) {
    if (!a.at("whole").is_boolean()) return name + ": whole not a boolean";
    if (a.at("whole").get<bool>()) {
      if (!a.contains("why") || a.at("why").get<std::string>().empty()) return name + ": whole without why";
      continue;
    }
    for (const auto& acc : a.at("accesses")) {
      if (!acc.at("write").is_boolean() || acc.at("bytes").get<int64_t>() <= 0) return name + ": bad access";
      for (const auto& t : acc.at("terms")) {
        if (!t.is_array() || t.empty() || !t.at(0).is_number_integer()) return name + ": bad term";
        for (size_t i = 1; i < t.size(); ++i)
          if (!fp.at("ranges").contains(t.at(i).get<std::string>()))
            return name + ": atom " + t.at(i).get<std::string>() + " has no range";
      }
    }
  }
  for (const auto& [atom, r] : fp.at("ranges").items()) {
    if (!r.is_array() || r.size() != 2) return atom + ": range is not [lo, hi]";
    for (int i = 0; i < 2; ++i) {
      try {
        dop::expr::evaluate(r.at(size_t(i)).get<std::string>(), values);
      } catch (const std::exception& e) {
        return atom + ": range expression '" + r.at(size_t(i)).get<std::string>() + "': " + e.what();
      }
    }
  }
  return "";
}

/// Values for footprint_problem: every non-pointer argument of the kernel, and a 3D launch.
inline std::map<std::string, int64_t> generic_values(const nlohmann::ordered_json& kernel) {
  const int64_t g[3] = {64, 32, 8}, l[3] = {16, 8, 2};
  auto v = chunk_values(3, g, l, 2, 5);
  for (const auto& a : kernel.at("args"))
    if (!a.at("pointer").get<bool>()) v[a.at("name").get<std::string>()] = 7;
  return v;
}

}  // namespace dop::test
