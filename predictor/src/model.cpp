// dop-model/1: the feature vocabulary, launch shapes, code features from expressions, and the model file (parse,
// validate, write).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "dop/expr.hpp"
#include "dop/predictor.hpp"
#include "internal.hpp"

namespace dop::pred {

using nlohmann::json;

// ---------------------------------------------------------------------------------------------------------------
// Launch shapes
// ---------------------------------------------------------------------------------------------------------------

uint64_t LaunchShape::num_groups() const {
  uint64_t n = 1;
  for (int d = 0; d < 3; ++d) n *= local[d] ? (global[d] + local[d] - 1) / local[d] : 0;
  return n;
}

namespace {
std::vector<uint64_t> parse_sizes(const std::string& text, const char* what) {
  std::vector<uint64_t> out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    const auto b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    item = b == std::string::npos ? "" : item.substr(b, e - b + 1);
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = item.empty() || item[0] == '-' ? 0 : std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || item[0] == '-' || errno || !end || *end || v == 0)
      throw std::invalid_argument(std::string(what) + " '" + text + "': '" + item + "' is not a size >= 1");
    out.push_back(v);
  }
  if (out.empty() || out.size() > 3 || (!text.empty() && text.back() == ','))
    throw std::invalid_argument(std::string(what) + " '" + text + "' must be X, X,Y or X,Y,Z");
  return out;
}
}  // namespace

LaunchShape LaunchShape::parse(const std::string& global, const std::string& local) {
  const auto g = parse_sizes(global, "global size"), l = parse_sizes(local, "local size");
  if (g.size() != l.size())
    throw std::invalid_argument("global size '" + global + "' and local size '" + local +
                                "' have different numbers of dimensions");
  LaunchShape s;
  s.work_dim = unsigned(g.size());
  for (size_t d = 0; d < g.size(); ++d) {
    s.global[d] = g[d];
    s.local[d] = l[d];
  }
  return s;
}

std::string LaunchShape::str() const {
  std::string g, l;
  for (unsigned d = 0; d < work_dim && d < 3; ++d) {
    g += (d ? "x" : "") + std::to_string(global[d]);
    l += (d ? "x" : "") + std::to_string(local[d]);
  }
  return g + "/" + l;
}

// ---------------------------------------------------------------------------------------------------------------
// Features
// ---------------------------------------------------------------------------------------------------------------

const char* source_name(Source s) {
  switch (s) {
    case Source::code: return "code";
    case Source::launch: return "launch";
    case Source::derived: return "derived";
    case Source::config: return "config";
  }
  return "?";
}

namespace {
Source parse_source(const std::string& s, const std::string& where) {
  if (s == "code") return Source::code;
  if (s == "launch") return Source::launch;
  if (s == "derived") return Source::derived;
  if (s == "config") return Source::config;
  throw ModelError(where + ": unknown feature source '" + s + "' (code, launch, derived, config)");
}
Feature builtin(const char* name, Source s, const char* def) {
  Feature f;
  f.name = name;
  f.key = name;
  f.source = s;
  f.definition = def;
  return f;
}
}  // namespace

const std::vector<Feature>& builtin_features() {
  static const std::vector<Feature> all = {
      builtin("work_dim", Source::launch, "work_dim"),
      builtin("global_size", Source::launch, "global_x * global_y * global_z"),
      builtin("local_size", Source::launch, "local_x * local_y * local_z"),
      builtin("num_groups", Source::launch, "ceil(global_x / local_x) * ceil(global_y / local_y) * ceil(global_z / local_z)"),
      builtin("global_x", Source::launch, "global_x"),
      builtin("global_y", Source::launch, "global_y"),
      builtin("global_z", Source::launch, "global_z"),
      builtin("local_x", Source::launch, "local_x"),
      builtin("local_y", Source::launch, "local_y"),
      builtin("local_z", Source::launch, "local_z"),
      builtin("groups_per_gpu_unit", Source::derived, "num_groups / gpu_units"),
      builtin("gpu_waves", Source::derived, "ceil(num_groups / gpu_units)"),
      builtin("cpu_cores", Source::derived, "cpu_util > 0 ? clamp(round(cpu_util * cpu_units), 1, cpu_units) : 0"),
      builtin("groups_per_cpu_core", Source::derived, "cpu_cores > 0 ? num_groups / cpu_cores : 0"),
      builtin("cpu_waves", Source::derived, "cpu_cores > 0 ? ceil(num_groups / cpu_cores) : 0"),
      builtin("gpu_items_per_unit", Source::derived, "global_size * gpu_util / gpu_units"),
      builtin("cpu_util", Source::config, "cpu_util"),
      builtin("gpu_util", Source::config, "gpu_util"),
  };
  return all;
}

bool depends_on_config(const std::string& n) {
  const int id = builtin_id(n);
  return id >= 0 && builtin_kind(id) != BuiltinKind::constant;
}

int builtin_id(const std::string& name) {
  const auto& b = builtin_features();
  for (size_t i = 0; i < b.size(); ++i)
    if (b[i].name == name) return int(i);
  return -1;
}

// Keep in sync with builtin_features() (the ids are positions in it) and with the generated header (header.cpp).
BuiltinKind builtin_kind(int id) {
  switch (id) {
    case kCpuCores:
    case kCpuUtil:
    case kGpuUtil: return BuiltinKind::config_only;
    case kGroupsPerCpuCore:
    case kCpuWaves:
    case kGpuItemsPerUnit: return BuiltinKind::mixed;
    default: return BuiltinKind::constant;
  }
}

Axis builtin_axis(int id) {
  switch (id) {
    case kCpuCores:
    case kCpuUtil:
    case kGroupsPerCpuCore:
    case kCpuWaves: return Axis::cpu;
    case kGpuUtil:
    case kGpuItemsPerUnit: return Axis::gpu;
    default: return Axis::none;
  }
}

double cpu_cores_of(double cpu_util, int cpu_units) {
  if (!(cpu_util > 0)) return 0;
  const double u = std::max(1, cpu_units);
  return std::clamp(std::round(cpu_util * u), 1.0, u);
}

double builtin_value(int id, const LaunchShape& l, const Platform& p, const Config& c) {
  return builtin_value(id, l, double(l.num_groups()), p, c);
}

double builtin_value(int id, const LaunchShape& l, double groups, const Platform& p, const Config& c) {
  const double gpu_units = std::max(1, p.gpu_units);
  switch (id) {
    case kWorkDim: return l.work_dim;
    case kGlobalSize: return double(l.global_size());
    case kLocalSize: return double(l.local_size());
    case kNumGroups: return groups;
    case kGlobalX: return double(l.global[0]);
    case kGlobalY: return double(l.global[1]);
    case kGlobalZ: return double(l.global[2]);
    case kLocalX: return double(l.local[0]);
    case kLocalY: return double(l.local[1]);
    case kLocalZ: return double(l.local[2]);
    case kGroupsPerGpuUnit: return groups / gpu_units;
    case kGpuWaves: return std::ceil(groups / gpu_units);
    case kCpuCores: return cpu_cores_of(c.cpu, p.cpu_units);
    case kGroupsPerCpuCore: {
      const double k = cpu_cores_of(c.cpu, p.cpu_units);
      return k > 0 ? groups / k : 0;
    }
    case kCpuWaves: {
      const double k = cpu_cores_of(c.cpu, p.cpu_units);
      return k > 0 ? std::ceil(groups / k) : 0;
    }
    case kGpuItemsPerUnit: return double(l.global_size()) * c.gpu / gpu_units;
    case kCpuUtil: return c.cpu;
    case kGpuUtil: return c.gpu;
    default: throw ModelError("builtin feature id " + std::to_string(id) + " unknown");
  }
}

void feature_vector(const std::vector<Feature>& features, const Platform& p, const double* code,
                    const LaunchShape& l, const Config& c, float* out) {
  size_t ci = 0;
  for (size_t i = 0; i < features.size(); ++i) {
    const Feature& f = features[i];
    if (f.source == Source::code) {
      out[i] = static_cast<float>(code[ci++]);
      continue;
    }
    const int id = builtin_id(f.name);
    if (id < 0) throw ModelError("feature '" + f.name + "' is not a builtin feature");  // validate() prevents this
    out[i] = static_cast<float>(builtin_value(id, l, p, c));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Expressions of code features (the grammar is dop/expr.hpp)
// ---------------------------------------------------------------------------------------------------------------

std::map<std::string, int64_t> launch_symbols(const LaunchShape& l) {
  std::map<std::string, int64_t> m;
  for (int d = 0; d < 3; ++d) {
    const std::string s = std::to_string(d);
    m["global_size_" + s] = int64_t(l.global[d]);
    m["local_size_" + s] = int64_t(l.local[d]);
    m["num_groups_" + s] = int64_t(l.local[d] ? (l.global[d] + l.local[d] - 1) / l.local[d] : 0);
    m["global_offset_" + s] = 0;
  }
  m["work_dim"] = l.work_dim;
  return m;
}

std::vector<double> code_vector(const std::vector<Feature>& features, const CodeFeatures& code,
                                const LaunchShape& launch, const ArgValues& args) {
  std::vector<double> out;
  std::map<std::string, int64_t> symbols;
  bool have_symbols = false;
  for (const Feature& f : features) {
    if (f.source != Source::code) continue;
    const auto it = code.values.find(f.key);
    double v = it == code.values.end() ? std::nan("") : it->second;
    if (std::isnan(v)) {
      const auto e = f.expr_key.empty() ? code.exprs.end() : code.exprs.find(f.expr_key);
      if (e != code.exprs.end() && !e->second.empty()) {
        if (!have_symbols) {
          symbols = launch_symbols(launch);
          for (const auto& [k, a] : args) symbols[k] = a;  // arguments shadow launch symbols of the same name
          have_symbols = true;
        }
        try {
          v = double(expr::evaluate(e->second, symbols));
        } catch (const std::invalid_argument&) {
          v = std::nan("");  // an unknown symbol (argument not given, unknown trip count): missing
        }
      } else if (it == code.values.end()) {
        throw ModelError("code feature '" + f.key + "' is required by the model but was not given" +
                         (f.expr_key.empty() ? std::string() : " (nor its expression '" + f.expr_key + "')"));
      }
    }
    out.push_back(v);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------------------------------------------

int Tree::depth() const {
  if (left.empty()) return 0;
  std::vector<int> d(left.size(), 0);
  int best = 0;
  for (size_t i = 0; i < left.size(); ++i) {  // children come after parents (validate)
    best = std::max(best, d[i]);
    if (left[i] >= 0) {
      d[size_t(left[i])] = d[i] + 1;
      d[size_t(right[i])] = d[i] + 1;
    }
  }
  return best;
}

std::vector<Config> Model::configs() const { return Grid{cpu_levels, gpu_levels}.configs(); }

std::vector<std::string> Model::code_keys() const {
  std::vector<std::string> k;
  for (const auto& f : features)
    if (f.source == Source::code) k.push_back(f.key);
  return k;
}

void Model::validate(const std::string& origin) const {
  auto bad = [&](const std::string& m) { throw ModelError(origin + ": " + m); };
  static const std::set<std::string> types = {"dt", "rf", "gbt", "rank", "linear"};
  if (!types.count(type)) bad("model type '" + type + "' is not one of dt, rf, gbt, rank, linear");
  if (output != "normalised_performance" && output != "score")
    bad("output '" + output + "' is not normalised_performance or score");
  if (cpu_levels.empty() || gpu_levels.empty()) bad("grid: empty cpu_levels or gpu_levels");
  for (const auto* lv : {&cpu_levels, &gpu_levels})
    for (size_t i = 0; i < lv->size(); ++i) {
      const double x = (*lv)[i];
      if (!(x >= 0 && x <= 1) || (i && !(x > (*lv)[i - 1])))
        bad("grid: levels must increase strictly within [0, 1]");
    }
  if (configs().empty()) bad("grid: no configuration besides (0, 0)");
  if (platform.id.empty()) bad("platform: empty id");
  if (platform.cpu_units < 1 || platform.gpu_units < 1) bad("platform: cpu_units and gpu_units must be >= 1");
  if (features.empty()) bad("features: empty");
  std::set<std::string> names;
  for (size_t i = 0; i < features.size(); ++i) {
    const Feature& f = features[i];
    const std::string w = "features[" + std::to_string(i) + "] '" + f.name + "'";
    if (f.name.empty() || !names.insert(f.name).second) bad(w + ": empty or duplicate name");
    if (f.source == Source::code) {
      if (f.key.empty()) bad(w + ": code feature without a key");
      continue;
    }
    const auto& b = builtin_features();
    const auto it = std::find_if(b.begin(), b.end(), [&](const Feature& x) { return x.name == f.name; });
    if (it == b.end()) bad(w + ": not a feature this predictor can compute (a newer dop?)");
    if (it->source != f.source)
      bad(w + ": source '" + source_name(f.source) + "', this predictor computes it as " + source_name(it->source));
    if (it->definition != f.definition)
      bad(w + ": definition '" + f.definition + "' differs from this predictor's '" + it->definition + "'");
  }
  const int nf = int(features.size());
  if (type == "linear" && !trees.empty()) bad("a linear model has no trees");
  if (type != "linear" && (trees.empty() || !terms.empty()))
    bad("model type '" + type + "' needs trees and no linear terms");
  if (!std::isfinite(base_score) || !std::isfinite(intercept)) bad("base_score/intercept not finite");
  for (size_t t = 0; t < trees.size(); ++t) {
    const Tree& tr = trees[t];
    const std::string w = "trees[" + std::to_string(t) + "]";
    const size_t n = tr.left.size();
    if (n == 0) bad(w + ": no nodes");
    if (tr.right.size() != n || tr.feature.size() != n || tr.threshold.size() != n || tr.value.size() != n ||
        tr.default_left.size() != n)
      bad(w + ": arrays of different lengths");
    for (size_t i = 0; i < n; ++i) {
      const std::string wn = w + " node " + std::to_string(i);
      if (tr.left[i] < 0) {
        if (tr.right[i] >= 0) bad(wn + ": leaf with a right child");
        if (!std::isfinite(tr.value[i])) bad(wn + ": leaf value not finite");
        continue;
      }
      if (size_t(tr.left[i]) <= i || size_t(tr.right[i]) <= i || size_t(tr.left[i]) >= n || size_t(tr.right[i]) >= n)
        bad(wn + ": child index out of range (children must follow their parent)");
      if (tr.feature[i] < 0 || tr.feature[i] >= nf) bad(wn + ": feature index " + std::to_string(tr.feature[i]) +
                                                        " out of range (" + std::to_string(nf) + " features)");
      if (std::isnan(tr.threshold[i])) bad(wn + ": threshold is NaN");
    }
    // A tree, not a DAG: every node but the root has exactly one parent (children follow parents, so all nodes
    // with a parent are reachable from the root).
    std::vector<int> parents(n, 0);
    for (size_t i = 0; i < n; ++i)
      if (tr.left[i] >= 0) {
        ++parents[size_t(tr.left[i])];
        ++parents[size_t(tr.right[i])];
      }
    for (size_t i = 1; i < n; ++i)
      if (parents[i] != 1)
        bad(w + " node " + std::to_string(i) + ": " + std::to_string(parents[i]) + " parents (a tree node has one)");
  }
  for (size_t t = 0; t < terms.size(); ++t) {
    const std::string w = "linear.terms[" + std::to_string(t) + "]";
    if (!std::isfinite(terms[t].weight)) bad(w + ": weight not finite");
    for (const auto& f : terms[t].factors) {
      if (f.feature < 0 || f.feature >= nf) bad(w + ": feature index out of range");
      if (!std::isfinite(f.mean) || !std::isfinite(f.scale) || f.scale == 0) bad(w + ": bad mean or scale");
    }
  }
  const json tj = json::parse(training, nullptr, false);
  if (tj.is_discarded() || !tj.is_object()) bad("training: not a JSON object");
}

namespace {

// The shortest decimal that reads back as the same float, as a double: compact files, exact thresholds.
double compact(float f) {
  char b[32];
  for (int p = 6; p <= 9; ++p) {
    std::snprintf(b, sizeof b, "%.*g", p, double(f));
    const double d = std::strtod(b, nullptr);
    if (static_cast<float>(d) == f) return d;
  }
  return double(f);
}

// Position (line, column; both from 1) of byte offset `byte` in text.
std::string position(const std::string& text, size_t byte) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

// Typed access to a JSON value with its path for messages.
struct Node {
  const json& j;
  std::string path;
  const std::string& origin;
  [[noreturn]] void fail(const std::string& m) const { throw ModelError(origin + ": " + path + ": " + m); }
  Node at(const std::string& key) const {
    if (!j.is_object()) fail("not an object");
    const auto it = j.find(key);
    if (it == j.end()) fail("missing key '" + key + "'");
    return {*it, path + "." + key, origin};
  }
  bool has(const std::string& key) const { return j.is_object() && j.contains(key); }
  Node at(size_t i) const {
    if (!j.is_array()) fail("not an array");
    if (i >= j.size()) fail("index " + std::to_string(i) + " out of range");
    return {j[i], path + "[" + std::to_string(i) + "]", origin};
  }
  size_t size() const {
    if (!j.is_array()) fail("not an array");
    return j.size();
  }
  std::string str() const {
    if (!j.is_string()) fail("not a string");
    return j.get<std::string>();
  }
  double num() const {
    if (!j.is_number()) fail("not a number");
    return j.get<double>();
  }
  int64_t integer() const {
    if (!j.is_number_integer()) fail("not an integer");
    return j.get<int64_t>();
  }
  template <class T>
  std::vector<T> numbers() const {
    std::vector<T> v;
    v.reserve(size());
    for (size_t i = 0; i < j.size(); ++i) {
      const Node e = at(i);
      if constexpr (std::is_integral_v<T>) {
        const int64_t x = e.integer();
        if (x < INT32_MIN || x > INT32_MAX) e.fail("out of range");
        v.push_back(T(x));
      } else {
        v.push_back(T(e.num()));
      }
    }
    return v;
  }
};

}  // namespace

std::string Model::to_json(int indent) const {
  nlohmann::ordered_json j;
  j["format"] = kModelFormat;
  j["type"] = type;
  j["objective"] = objective;
  j["output"] = output;
  j["platform"] = {{"id", platform.id}, {"cpu_units", platform.cpu_units}, {"gpu_units", platform.gpu_units}};
  j["grid"] = {{"cpu_levels", cpu_levels}, {"gpu_levels", gpu_levels}};
  nlohmann::ordered_json fs = nlohmann::ordered_json::array();
  for (const auto& f : features) {
    nlohmann::ordered_json e = {{"name", f.name}, {"source", source_name(f.source)}};
    if (f.source == Source::code) {
      e["key"] = f.key;
      if (!f.expr_key.empty()) e["expr_key"] = f.expr_key;
    } else {
      e["definition"] = f.definition;
    }
    fs.push_back(e);
  }
  j["features"] = fs;
  if (!trees.empty()) {
    nlohmann::ordered_json ts = nlohmann::ordered_json::array();
    for (const auto& t : trees) {
      nlohmann::ordered_json th = nlohmann::ordered_json::array(), val = nlohmann::ordered_json::array();
      for (size_t i = 0; i < t.size(); ++i) {
        th.push_back(t.left[i] < 0 ? 0.0 : compact(t.threshold[i]));
        val.push_back(t.left[i] < 0 ? compact(t.value[i]) : 0.0);
      }
      ts.push_back({{"feature", t.feature},
                    {"threshold", th},
                    {"left", t.left},
                    {"right", t.right},
                    {"default_left", t.default_left},
                    {"value", val}});
    }
    j["trees"] = {{"base_score", compact(base_score)}, {"count", trees.size()}, {"list", ts}};
  } else {
    nlohmann::ordered_json ts = nlohmann::ordered_json::array();
    for (const auto& t : terms) {
      nlohmann::ordered_json fs2 = nlohmann::ordered_json::array();
      for (const auto& f : t.factors)
        fs2.push_back({{"feature", f.feature}, {"transform", f.log1p ? "log1p" : "identity"}, {"mean", f.mean},
                       {"scale", f.scale}});
      ts.push_back({{"weight", t.weight}, {"factors", fs2}});
    }
    j["linear"] = {{"intercept", intercept}, {"terms", ts}};
  }
  auto t = nlohmann::ordered_json::parse(training, nullptr, false);
  j["training"] = t.is_discarded() ? nlohmann::ordered_json::object() : t;
  // Trees are long arrays of numbers: one line per array of scalars keeps the file readable and small.
  std::string out = j.dump(indent);
  if (indent > 0) {
    std::string packed;
    packed.reserve(out.size());
    bool in_string = false;
    for (size_t i = 0; i < out.size(); ++i) {
      const char c = out[i];
      if (in_string) {
        packed += c;
        if (c == '\\' && i + 1 < out.size()) packed += out[++i];
        else if (c == '"') in_string = false;
        continue;
      }
      if (c == '"') in_string = true;
      if (c == '[') {  // an array of numbers, true/false/null only: drop its whitespace
        size_t k = i + 1;
        while (k < out.size() && out[k] != ']' && out[k] != '{' && out[k] != '[' && out[k] != '"') ++k;
        if (k < out.size() && out[k] == ']') {
          packed += '[';
          for (size_t m = i + 1; m < k; ++m)
            if (out[m] != '\n' && out[m] != ' ') packed += out[m];
          packed += ']';
          i = k;
          continue;
        }
      }
      packed += c;
    }
    out.swap(packed);
  }
  return out + "\n";
}

Model Model::parse(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    const auto p = what.find("parse error");
    throw ModelError(origin + ":" + position(text, e.byte ? e.byte - 1 : 0) + ": invalid JSON: " +
                     (p == std::string::npos ? what : what.substr(p)));
  }
  const Node root{j, "$", origin};
  if (!j.is_object()) root.fail("not a JSON object (a dop model file starts with {\"format\": \"dop-model/1\", ...})");
  if (!root.has("format")) root.fail("missing key 'format': not a dop model file");
  const std::string fmt = root.at("format").str();
  if (fmt != kModelFormat)
    throw ModelError(origin + ": model format '" + fmt + "' is not supported (this predictor reads " + kModelFormat +
                     ")");
  Model m;
  m.type = root.at("type").str();
  m.objective = root.at("objective").str();
  m.output = root.at("output").str();
  const Node pl = root.at("platform");
  m.platform.id = pl.at("id").str();
  m.platform.cpu_units = int(pl.at("cpu_units").integer());
  m.platform.gpu_units = int(pl.at("gpu_units").integer());
  const Node grid = root.at("grid");
  m.cpu_levels = grid.at("cpu_levels").numbers<double>();
  m.gpu_levels = grid.at("gpu_levels").numbers<double>();
  const Node fs = root.at("features");
  for (size_t i = 0; i < fs.size(); ++i) {
    const Node e = fs.at(i);
    Feature f;
    f.name = e.at("name").str();
    f.source = parse_source(e.at("source").str(), origin + ": " + e.path);
    if (f.source == Source::code) {
      f.key = e.has("key") ? e.at("key").str() : f.name;
      if (e.has("expr_key")) f.expr_key = e.at("expr_key").str();
    } else {
      f.key = f.name;
      f.definition = e.at("definition").str();
    }
    m.features.push_back(f);
  }
  if (root.has("trees")) {
    const Node ts = root.at("trees");
    m.base_score = float(ts.at("base_score").num());
    const Node list = ts.at("list");
    for (size_t t = 0; t < list.size(); ++t) {
      const Node e = list.at(t);
      Tree tr;
      tr.feature = e.at("feature").numbers<int32_t>();
      tr.threshold = e.at("threshold").numbers<float>();
      tr.left = e.at("left").numbers<int32_t>();
      tr.right = e.at("right").numbers<int32_t>();
      tr.value = e.at("value").numbers<float>();
      for (int32_t d : e.at("default_left").numbers<int32_t>()) tr.default_left.push_back(d ? 1 : 0);
      m.trees.push_back(std::move(tr));
    }
    if (size_t(ts.at("count").integer()) != m.trees.size()) ts.at("count").fail("does not match the list's length");
  }
  if (root.has("linear")) {
    const Node lin = root.at("linear");
    m.intercept = lin.at("intercept").num();
    const Node ts = lin.at("terms");
    for (size_t t = 0; t < ts.size(); ++t) {
      LinearTerm term;
      term.weight = ts.at(t).at("weight").num();
      const Node fs2 = ts.at(t).at("factors");
      for (size_t k = 0; k < fs2.size(); ++k) {
        const Node e = fs2.at(k);
        LinearFactor f;
        f.feature = int32_t(e.at("feature").integer());
        const std::string tf = e.at("transform").str();
        if (tf != "log1p" && tf != "identity") e.at("transform").fail("'" + tf + "' is not log1p or identity");
        f.log1p = tf == "log1p";
        f.mean = e.at("mean").num();
        f.scale = e.at("scale").num();
        term.factors.push_back(f);
      }
      m.terms.push_back(std::move(term));
    }
  }
  if (root.has("training")) m.training = j["training"].dump();
  m.validate(origin);
  return m;
}

Model Model::load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ModelError(path + ": cannot be read");
  std::ostringstream s;
  s << f.rdbuf();
  return parse(s.str(), path);
}

void Model::save(const std::string& path) const {
  validate(path);
  const std::string text = to_json();
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw ModelError(path + ": cannot be written");
    f << text;
    if (!f.flush()) throw ModelError(path + ": write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw ModelError(path + ": cannot be written (rename)");
}

}  // namespace dop::pred
