// Tree models through XGBoost's C API, converted from XGBoost's own JSON model into dop-model/1 trees.
#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "internal.hpp"

namespace dop::train::detail {

namespace {

using nlohmann::json;

void check(int rc, const char* what) {
  if (rc != 0) throw std::runtime_error(std::string("XGBoost: ") + what + ": " + XGBGetLastError());
}

struct DMatrix {
  DMatrixHandle h = nullptr;
  DMatrix(const float* x, size_t rows, size_t cols) {
    check(XGDMatrixCreateFromMat(x, bst_ulong(rows), bst_ulong(cols), std::nanf(""), &h), "XGDMatrixCreateFromMat");
  }
  ~DMatrix() {
    if (h) XGDMatrixFree(h);
  }
  DMatrix(const DMatrix&) = delete;
  DMatrix& operator=(const DMatrix&) = delete;
};

struct Booster {
  BoosterHandle h = nullptr;
  explicit Booster(DMatrixHandle d) { check(XGBoosterCreate(&d, 1, &h), "XGBoosterCreate"); }
  ~Booster() {
    if (h) XGBoosterFree(h);
  }
  Booster(const Booster&) = delete;
  Booster& operator=(const Booster&) = delete;
  void set(const std::string& k, const std::string& v) {
    check(XGBoosterSetParam(h, k.c_str(), v.c_str()), ("XGBoosterSetParam " + k + "=" + v).c_str());
  }
};

std::string float_text(float f) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", double(f));
  return b;
}

// One XGBoost tree (its JSON arrays) in dop-model/1 form: reachable nodes renumbered breadth-first so that
// children follow their parents; leaves keep their value, internal nodes their split.
pred::Tree convert_tree(const json& t, size_t num_features, size_t index) {
  const std::string where = "XGBoost model: tree " + std::to_string(index);
  const auto left = t.at("left_children").get<std::vector<int64_t>>();
  const auto right = t.at("right_children").get<std::vector<int64_t>>();
  const auto feat = t.at("split_indices").get<std::vector<int64_t>>();
  const auto cond = t.at("split_conditions").get<std::vector<float>>();
  const auto dleft = t.at("default_left").get<std::vector<int>>();
  std::vector<int> split_type(left.size(), 0);
  if (t.contains("split_type")) split_type = t.at("split_type").get<std::vector<int>>();
  const size_t n = left.size();
  if (!n || right.size() != n || feat.size() != n || cond.size() != n || dleft.size() != n || split_type.size() != n)
    throw std::runtime_error(where + ": arrays of different lengths");
  pred::Tree out;
  std::vector<int64_t> order;  // new index -> old
  std::vector<int32_t> newid(n, -1);
  std::deque<int64_t> q{0};
  newid[0] = 0;
  order.push_back(0);
  while (!q.empty()) {
    const int64_t o = q.front();
    q.pop_front();
    if (left[size_t(o)] < 0) continue;
    for (int64_t c : {left[size_t(o)], right[size_t(o)]}) {
      if (c < 0 || size_t(c) >= n || newid[size_t(c)] >= 0) throw std::runtime_error(where + ": malformed children");
      newid[size_t(c)] = int32_t(order.size());
      order.push_back(c);
      q.push_back(c);
    }
  }
  for (int64_t o : order) {
    const size_t i = size_t(o);
    if (left[i] < 0) {
      out.feature.push_back(-1);
      out.threshold.push_back(0);
      out.left.push_back(-1);
      out.right.push_back(-1);
      out.default_left.push_back(0);
      out.value.push_back(cond[i]);
    } else {
      if (split_type[i] != 0) throw std::runtime_error(where + ": categorical split (not supported)");
      if (feat[i] < 0 || size_t(feat[i]) >= num_features) throw std::runtime_error(where + ": feature out of range");
      out.feature.push_back(int32_t(feat[i]));
      out.threshold.push_back(cond[i]);
      out.left.push_back(newid[size_t(left[i])]);
      out.right.push_back(newid[size_t(right[i])]);
      out.default_left.push_back(dleft[i] ? 1 : 0);
      out.value.push_back(0);
    }
  }
  return out;
}

}  // namespace

void train_xgboost(const Matrix& m, const TrainOptions& options, const std::map<std::string, std::string>& params,
                   pred::Model& model, const std::vector<float>* check_rows, std::vector<float>* check_out) {
  DMatrix d(m.x.data(), m.rows, m.cols);
  check(XGDMatrixSetFloatInfo(d.h, "label", m.y.data(), bst_ulong(m.rows)), "XGDMatrixSetFloatInfo label");
  if (!m.weight.empty())
    check(XGDMatrixSetFloatInfo(d.h, "weight", m.weight.data(), bst_ulong(m.rows)), "XGDMatrixSetFloatInfo weight");
  const bool rank = params.at("objective").rfind("rank:", 0) == 0;
  if (rank) {
    std::vector<unsigned> sizes;  // one query group per workload: its configurations
    for (size_t g = 1; g < m.group_ptr.size(); ++g) sizes.push_back(m.group_ptr[g] - m.group_ptr[g - 1]);
    check(XGDMatrixSetGroup(d.h, sizes.data(), bst_ulong(sizes.size())), "XGDMatrixSetGroup");
    if (params.at("objective") == "rank:ndcg") {  // NDCG gains are 2^label - 1 of integer labels: relevance levels
      std::vector<float> rel(m.rows);
      for (size_t i = 0; i < m.rows; ++i) rel[i] = std::max(0.0f, std::floor(m.y[i] * 20.0f + 0.5f));
      check(XGDMatrixSetFloatInfo(d.h, "label", rel.data(), bst_ulong(m.rows)), "XGDMatrixSetFloatInfo label");
    }
  }
  Booster b(d.h);
  int rounds = 1;
  float base_score = 0.5f;
  if (!rank) {            // start from the mean: fewer rounds spent on the offset
    double s = 0, n = 0;  // the rows' weighted mean
    for (size_t i = 0; i < m.rows; ++i) {
      const double w = m.weight.empty() ? 1.0 : m.weight[i];
      s += w * m.y[i];
      n += w;
    }
    base_score = n > 0 ? float(s / n) : 0.5f;
  }
  b.set("verbosity", "0");
  // OpenMP's fork/join costs more than it saves on small matrices (10x slower on a busy 2-core machine for 1,000
  // rows): one thread below 50,000 rows unless asked otherwise.
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const int threads = options.threads > 0 ? options.threads : (m.rows < 50000 ? 1 : int(hw));
  b.set("nthread", std::to_string(threads));
  b.set("seed", std::to_string(options.seed % 2147483647));
  b.set("base_score", float_text(base_score));
  for (const auto& [k, v] : params) {
    if (k == "rounds") {
      char* end = nullptr;
      const long r = std::strtol(v.c_str(), &end, 10);
      if (!end || *end || r < 1 || r > 100000) throw std::invalid_argument("rounds '" + v + "' must be 1..100000");
      rounds = int(r);
    } else if (k == "base_score") {
      base_score = std::strtof(v.c_str(), nullptr);
      b.set(k, v);
    } else {
      b.set(k, v);
    }
  }
  for (int it = 0; it < rounds; ++it) check(XGBoosterUpdateOneIter(b.h, it, d.h), "XGBoosterUpdateOneIter");

  bst_ulong len = 0;
  const char* buf = nullptr;
  check(XGBoosterSaveModelToBuffer(b.h, "{\"format\": \"json\"}", &len, &buf), "XGBoosterSaveModelToBuffer");
  const json j = json::parse(buf, buf + len);
  const json& learner = j.at("learner");
  const std::string objective = learner.at("objective").at("name").get<std::string>();
  const json& gb = learner.at("gradient_booster");
  if (gb.at("name").get<std::string>() != "gbtree")
    throw std::runtime_error("XGBoost booster '" + gb.at("name").get<std::string>() + "': only gbtree is supported");
  const std::string bs = learner.at("learner_model_param").at("base_score").get<std::string>();
  const float stored = std::strtof(bs.c_str(), nullptr);
  if (stored != base_score)
    throw std::runtime_error("XGBoost model: base_score '" + bs + "' differs from the one set (" +
                             float_text(base_score) + ")");
  const std::string nf = learner.at("learner_model_param").at("num_feature").get<std::string>();
  if (std::stoul(nf) != m.cols)
    throw std::runtime_error("XGBoost model: " + nf + " features, expected " + std::to_string(m.cols));
  model.objective = objective;
  model.base_score = base_score;
  model.trees.clear();
  const json& trees = gb.at("model").at("trees");
  for (size_t t = 0; t < trees.size(); ++t) model.trees.push_back(convert_tree(trees[t], m.cols, t));
  if (model.trees.empty()) throw std::runtime_error("XGBoost trained no trees");

  if (check_rows && check_out) {
    const size_t n = check_rows->size() / m.cols;
    DMatrix q(check_rows->data(), n, m.cols);
    bst_ulong out_len = 0;
    const float* out = nullptr;
    check(XGBoosterPredict(b.h, q.h, 0, 0, 0, &out_len, &out), "XGBoosterPredict");
    check_out->assign(out, out + out_len);
  }
}

}  // namespace dop::train::detail
