// Keys, JSON/CSV output and the expression evaluator of dop/features.hpp (no Clang here).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "dop/expr.hpp"
#include "dop/features.hpp"

namespace dop::features {

namespace {

using IntField = int64_t KernelFeatures::*;

/// The numeric features in their stable order: the six of Dopia's Table 1 first.
const std::vector<std::pair<const char*, IntField>>& int_fields() {
  static const std::vector<std::pair<const char*, IntField>> fields = {
      {"mem_constant", &KernelFeatures::mem_constant},
      {"mem_continuous", &KernelFeatures::mem_continuous},
      {"mem_stride", &KernelFeatures::mem_stride},
      {"mem_random", &KernelFeatures::mem_random},
      {"arith_int", &KernelFeatures::arith_int},
      {"arith_float", &KernelFeatures::arith_float},
      {"mem_global_loads", &KernelFeatures::mem_global_loads},
      {"mem_global_stores", &KernelFeatures::mem_global_stores},
      {"mem_global_atomics", &KernelFeatures::mem_global_atomics},
      {"mem_constant_space", &KernelFeatures::mem_constant_space},
      {"mem_local_loads", &KernelFeatures::mem_local_loads},
      {"mem_local_stores", &KernelFeatures::mem_local_stores},
      {"mem_local_atomics", &KernelFeatures::mem_local_atomics},
      {"mem_private_loads", &KernelFeatures::mem_private_loads},
      {"mem_private_stores", &KernelFeatures::mem_private_stores},
      {"image_ops", &KernelFeatures::image_ops},
      {"arith_special", &KernelFeatures::arith_special},
      {"arith_bitwise", &KernelFeatures::arith_bitwise},
      {"arith_vector", &KernelFeatures::arith_vector},
      {"vector_width_max", &KernelFeatures::vector_width_max},
      {"loops", &KernelFeatures::loops},
      {"loop_depth", &KernelFeatures::loop_depth},
      {"loops_constant_trip", &KernelFeatures::loops_constant_trip},
      {"loops_symbolic_trip", &KernelFeatures::loops_symbolic_trip},
      {"loops_unknown_trip", &KernelFeatures::loops_unknown_trip},
      {"branches", &KernelFeatures::branches},
      {"branches_divergent", &KernelFeatures::branches_divergent},
      {"barriers", &KernelFeatures::barriers},
      {"work_dim", &KernelFeatures::work_dim},
      {"args_read_only", &KernelFeatures::args_read_only},
      {"args_write_only", &KernelFeatures::args_write_only},
      {"args_read_write", &KernelFeatures::args_read_write},
      {"calls_inlined", &KernelFeatures::calls_inlined},
  };
  return fields;
}

nlohmann::ordered_json kernel_json(const KernelFeatures& k) {
  nlohmann::ordered_json j;
  j["kernel"] = k.name;
  j["file"] = k.file;
  j["line"] = k.line;
  j["complete"] = k.complete;
  nlohmann::ordered_json f;
  for (const auto& [key, field] : int_fields()) f[key] = k.*field;
  f["global_bytes_per_item"] =
      k.global_bytes_per_item ? nlohmann::ordered_json(*k.global_bytes_per_item) : nlohmann::ordered_json(nullptr);
  f["global_bytes_per_item_expr"] = k.global_bytes_per_item_expr;
  j["features"] = std::move(f);
  j["args"] = nlohmann::ordered_json::array();
  for (const auto& a : k.args)
    j["args"].push_back({{"name", a.name},
                         {"type", a.type},
                         {"address_space", a.address_space},
                         {"pointer", a.is_pointer},
                         {"access", a.access()}});
  j["loops"] = nlohmann::ordered_json::array();
  for (const auto& l : k.loop_list) {
    nlohmann::ordered_json trip = {{"kind", trip_kind_name(l.trip.kind)}};
    trip["value"] = l.trip.kind == TripCount::Kind::constant ? nlohmann::ordered_json(l.trip.value)
                                                             : nlohmann::ordered_json(nullptr);
    trip["expr"] = l.trip.expr;
    trip["symbols"] = l.trip.symbols;
    j["loops"].push_back({{"line", l.line},
                          {"depth", l.depth},
                          {"parent", l.parent},
                          {"induction", l.induction},
                          {"trip", trip},
                          {"divergent", l.divergent}});
  }
  nlohmann::ordered_json fp;
  fp["args"] = nlohmann::ordered_json::object();
  for (const auto& a : k.footprint.args) {
    nlohmann::ordered_json ja;
    ja["whole"] = a.whole;
    if (a.whole) {
      ja["why"] = a.why;
    } else {
      ja["accesses"] = nlohmann::ordered_json::array();
      for (const auto& acc : a.accesses) {
        nlohmann::ordered_json terms = nlohmann::ordered_json::array();
        for (const auto& t : acc.terms) {
          nlohmann::ordered_json term = nlohmann::ordered_json::array();
          term.push_back(t.coef);
          for (const auto& at : t.atoms) term.push_back(at);
          terms.push_back(std::move(term));
        }
        nlohmann::ordered_json ja_acc = {{"write", acc.write}, {"bytes", acc.bytes}, {"terms", std::move(terms)}};
        if (acc.may) ja_acc["may"] = true;
        for (const auto& g : acc.guards) ja_acc["guards"].push_back({g.atom, g.op, g.bound});
        ja["accesses"].push_back(std::move(ja_acc));
      }
    }
    fp["args"][a.name] = std::move(ja);
  }
  fp["ranges"] = nlohmann::ordered_json::object();
  for (const auto& [name, r] : k.footprint.ranges) fp["ranges"][name] = {r.first, r.second};
  j["footprint"] = std::move(fp);
  return j;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

const char* severity_name(Diagnostic::Severity s) {
  switch (s) {
    case Diagnostic::Severity::note:
      return "note";
    case Diagnostic::Severity::warning:
      return "warning";
    case Diagnostic::Severity::error:
      return "error";
    case Diagnostic::Severity::fatal:
      return "fatal error";
  }
  return "error";
}

std::string Diagnostic::str() const {
  std::string s = file.empty() ? std::string("<input>") : file;
  if (line) {
    s += ":" + std::to_string(line);
    if (column) s += ":" + std::to_string(column);
  }
  return s + ": " + severity_name(severity) + ": " + message;
}

std::string ArgInfo::access() const {
  if (read && write) return "read_write";
  if (read) return "read";
  if (write) return "write";
  return "none";
}

const char* trip_kind_name(TripCount::Kind k) {
  switch (k) {
    case TripCount::Kind::constant:
      return "constant";
    case TripCount::Kind::symbolic:
      return "symbolic";
    case TripCount::Kind::unknown:
      return "unknown";
  }
  return "unknown";
}

std::optional<int64_t> TripCount::evaluate(const std::map<std::string, int64_t>& values) const {
  if (kind == Kind::constant) return value;
  if (kind == Kind::unknown) return std::nullopt;
  try {
    return std::max<int64_t>(0, expr::evaluate(expr, values));
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

std::vector<std::pair<std::string, double>> KernelFeatures::values() const {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [key, field] : int_fields()) out.emplace_back(key, double(this->*field));
  out.emplace_back("global_bytes_per_item",
                   global_bytes_per_item ? *global_bytes_per_item : std::numeric_limits<double>::quiet_NaN());
  return out;
}

const std::vector<std::string>& feature_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const auto& [key, field] : int_fields()) k.emplace_back(key);
    k.emplace_back("global_bytes_per_item");
    k.emplace_back("global_bytes_per_item_expr");
    return k;
  }();
  return keys;
}

bool AnalysisResult::has_errors() const {
  return std::any_of(diagnostics.begin(), diagnostics.end(), [](const Diagnostic& d) {
    return d.severity == Diagnostic::Severity::error || d.severity == Diagnostic::Severity::fatal;
  });
}

std::string to_json(const KernelFeatures& kernel, int indent) {
  return kernel_json(kernel).dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string to_json(const AnalysisResult& result, const std::string& file_name, int indent) {
  nlohmann::ordered_json j;
  j["file"] = file_name;
  j["kernels"] = nlohmann::ordered_json::array();
  for (const auto& k : result.kernels) j["kernels"].push_back(kernel_json(k));
  j["diagnostics"] = nlohmann::ordered_json::array();
  for (const auto& d : result.diagnostics)
    j["diagnostics"].push_back({{"severity", severity_name(d.severity)},
                                {"file", d.file},
                                {"line", d.line},
                                {"column", d.column},
                                {"message", d.message}});
  return j.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string csv_header() {
  std::string h = "file,kernel";
  for (const auto& k : feature_keys()) h += "," + k;
  return h;
}

std::string to_csv_row(const KernelFeatures& k) {
  std::string r = csv_field(k.file) + "," + csv_field(k.name);
  for (const auto& [key, field] : int_fields()) r += "," + std::to_string(k.*field);
  r += ",";
  if (k.global_bytes_per_item) {
    const double v = *k.global_bytes_per_item;
    if (std::floor(v) == v && std::fabs(v) < 9e15) {
      r += std::to_string(int64_t(v));
    } else {
      std::ostringstream s;
      s.precision(17);
      s << v;
      r += s.str();
    }
  }
  r += "," + csv_field(k.global_bytes_per_item_expr);
  return r;
}

}  // namespace dop::features
