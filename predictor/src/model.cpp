// dop-model/1: the model file (parse, validate, write). The features it names are features.cpp's.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "dop/predictor.hpp"
#include "estimate.hpp"
#include "internal.hpp"

namespace dop::pred {

using nlohmann::json;

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
  // Trivially destructible (nothing of a model's reading is destroyed at exit: dop's interposer reads its model on a
  // thread of its own, which the process's exit waits for only after statics made later were destroyed).
  static constexpr const char* kTypes[] = {"dt", "rf", "gbt", "rank", "linear"};
  if (std::none_of(std::begin(kTypes), std::end(kTypes), [&](const char* t) { return type == t; }))
    bad("model type '" + type + "' is not one of dt, rf, gbt, rank, linear");
  if (output != "normalised_performance" && output != "score")
    bad("output '" + output + "' is not normalised_performance or score");
  if (!(mixed_margin >= 0 && mixed_margin < 1))
    bad("decision.mixed_margin " + std::to_string(mixed_margin) + " is not in [0, 1)");
  if (mixed_margin > 0 && output != "normalised_performance")
    bad("decision.mixed_margin needs a model whose output is normalised_performance, not '" + output + "'");
  if (cpu_levels.empty() || gpu_levels.empty()) bad("grid: empty cpu_levels or gpu_levels");
  for (const auto* lv : {&cpu_levels, &gpu_levels})
    for (size_t i = 0; i < lv->size(); ++i) {
      const double x = (*lv)[i];
      if (!(x >= 0 && x <= 1) || (i && !(x > (*lv)[i - 1]))) bad("grid: levels must increase strictly within [0, 1]");
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
    const int id = builtin_id(f.name);
    if (id < 0) bad(w + ": not a feature this predictor can compute (a newer dop?)");
    const Feature& b = builtin_features()[size_t(id)];
    if (b.source != f.source)
      bad(w + ": source '" + source_name(f.source) + "', this predictor computes it as " + source_name(b.source));
    if (b.definition != f.definition)
      bad(w + ": definition '" + f.definition + "' differs from this predictor's '" + b.definition + "'");
    if (is_estimate(id) && !platform.figures)
      bad(w + ": an estimate feature, and the model has no estimate section (the platform figures)");
  }
  if (platform.figures) validate_figures(*platform.figures, origin, "estimate.");
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
      if (tr.feature[i] < 0 || tr.feature[i] >= nf)
        bad(wn + ": feature index " + std::to_string(tr.feature[i]) + " out of range (" + std::to_string(nf) +
            " features)");
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

Source parse_source(const std::string& s, const std::string& where) {
  if (s == "code") return Source::code;
  if (s == "launch") return Source::launch;
  if (s == "derived") return Source::derived;
  if (s == "config") return Source::config;
  throw ModelError(where + ": unknown feature source '" + s + "' (code, launch, derived, config)");
}

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
    // The elements read in place: an element's path (a string) is made only for a message (a gbt's trees hold
    // about 140,000 numbers).
    std::vector<T> v;
    v.reserve(size());
    for (size_t i = 0; i < j.size(); ++i) {
      const json& e = j[i];
      if constexpr (std::is_integral_v<T>) {
        if (!e.is_number_integer()) at(i).fail("not an integer");
        const int64_t x = e.get<int64_t>();
        if (x < INT32_MIN || x > INT32_MAX) at(i).fail("out of range");
        v.push_back(T(x));
      } else {
        if (!e.is_number()) at(i).fail("not a number");
        v.push_back(T(e.get<double>()));
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
  if (!platform.devices.empty()) j["platform"]["devices"] = platform.devices;
  j["grid"] = {{"cpu_levels", cpu_levels}, {"gpu_levels", gpu_levels}};
  if (platform.figures) j["estimate"] = figures_to_json(*platform.figures);
  if (mixed_margin > 0) j["decision"] = {{"mixed_margin", mixed_margin}};
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
        fs2.push_back({{"feature", f.feature},
                       {"transform", f.log1p ? "log1p" : "identity"},
                       {"mean", f.mean},
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
        if (c == '\\' && i + 1 < out.size())
          packed += out[++i];
        else if (c == '"')
          in_string = false;
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
    throw ModelError(origin + ":" + position(text, e.byte ? e.byte - 1 : 0) +
                     ": invalid JSON: " + (p == std::string::npos ? what : what.substr(p)));
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
  if (pl.has("devices")) m.platform.devices = pl.at("devices").str();
  const Node grid = root.at("grid");
  m.cpu_levels = grid.at("cpu_levels").numbers<double>();
  m.gpu_levels = grid.at("gpu_levels").numbers<double>();
  if (root.has("estimate")) m.platform.figures = figures_from_json(j["estimate"], "$.estimate", origin);
  if (root.has("decision")) {
    const Node dec = root.at("decision");
    if (dec.has("mixed_margin")) m.mixed_margin = dec.at("mixed_margin").num();
  }
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
