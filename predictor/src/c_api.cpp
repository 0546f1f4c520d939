// C API of the predictor (dop/predictor.h): a thin shell over dop::pred::Predictor that never lets an exception out.
#include <cmath>
#include <exception>
#include <string>

#include "dop/predictor.h"
#include "dop/predictor.hpp"

struct dop_predictor {
  dop::pred::Predictor predictor;
  std::vector<std::string> code_keys;
};

namespace {
thread_local std::string last_error;

int fail(const std::string& m) {
  last_error = m;
  return -1;
}
}  // namespace

extern "C" {

dop_predictor* dop_predictor_load(const char* model_path, const char* platform_id) {
  try {
    if (!model_path) {
      fail("dop_predictor_load: model_path is NULL");
      return nullptr;
    }
    dop::pred::PredictorOptions o;
    if (platform_id) o.platform_id = platform_id;
    auto p = dop::pred::Predictor::load(model_path, o);
    auto keys = p.model().code_keys();
    return new dop_predictor{std::move(p), std::move(keys)};
  } catch (const std::exception& e) {
    fail(e.what());
  } catch (...) {
    fail("dop_predictor_load: unknown error");
  }
  return nullptr;
}

int dop_predictor_predict(dop_predictor* p, const char* kernel_id, size_t n_features, const char* const* names,
                          const double* values, unsigned work_dim, const size_t* global, const size_t* local,
                          dop_decision* out) {
  return dop_predictor_predict_data(p, kernel_id, n_features, names, values, work_dim, global, local, 0, 0, 0, out);
}

int dop_predictor_predict_data(dop_predictor* p, const char* kernel_id, size_t n_features, const char* const* names,
                               const double* values, unsigned work_dim, const size_t* global, const size_t* local,
                               uint64_t in_bytes, uint64_t out_bytes, int data_on, dop_decision* out) {
  try {
    if (!p || !out) return fail("dop_predictor_predict: predictor or out is NULL");
    if (n_features && (!names || !values)) return fail("dop_predictor_predict: feature names or values are NULL");
    if (work_dim < 1 || work_dim > 3)
      return fail("dop_predictor_predict: work_dim " + std::to_string(work_dim) + " is not 1, 2 or 3");
    if (!global || !local) return fail("dop_predictor_predict: global or local is NULL");
    dop::pred::LaunchShape l;
    l.work_dim = work_dim;
    for (unsigned d = 0; d < work_dim; ++d) {
      if (global[d] == 0 || local[d] == 0)
        return fail("dop_predictor_predict: global and local sizes must be >= 1 (dimension " + std::to_string(d) + ")");
      l.global[d] = global[d];
      l.local[d] = local[d];
    }
    l.in_bytes = in_bytes;
    l.out_bytes = out_bytes;
    if (data_on != DOP_DATA_ON_HOST && data_on != DOP_DATA_ON_GPU && data_on != DOP_DATA_ON_PINNED)
      return fail("dop_predictor_predict: data_on " + std::to_string(data_on) +
                  " is not DOP_DATA_ON_HOST (0), DOP_DATA_ON_GPU (1) or DOP_DATA_ON_PINNED (2)");
    l.data_on_gpu = data_on == DOP_DATA_ON_GPU;
    l.data_pinned = data_on == DOP_DATA_ON_PINNED;
    if (kernel_id) {  // a memoised decision needs no features
      if (const auto hit = p->predictor.cached(kernel_id, l)) {
        out->cpu_util = hit->config.cpu;
        out->gpu_util = hit->config.gpu;
        out->predicted = hit->predicted;
        out->index = hit->index;
        out->cached = 1;
        return 0;
      }
    }
    dop::pred::CodeFeatures code;
    for (size_t i = 0; i < n_features; ++i) {
      if (!names[i]) return fail("dop_predictor_predict: feature name " + std::to_string(i) + " is NULL");
      code.values[names[i]] = values[i];
    }
    const dop::pred::Decision d =
        kernel_id ? p->predictor.decide(std::string(kernel_id), code, l) : p->predictor.decide(code, l);
    out->cpu_util = d.config.cpu;
    out->gpu_util = d.config.gpu;
    out->predicted = d.predicted;
    out->index = d.index;
    out->cached = d.cached ? 1 : 0;
    return 0;
  } catch (const std::exception& e) {
    return fail(e.what());
  } catch (...) {
    return fail("dop_predictor_predict: unknown error");
  }
}

size_t dop_predictor_num_code_features(const dop_predictor* p) { return p ? p->code_keys.size() : 0; }

const char* dop_predictor_code_feature(const dop_predictor* p, size_t i) {
  return p && i < p->code_keys.size() ? p->code_keys[i].c_str() : nullptr;
}

const char* dop_predictor_last_error(void) { return last_error.c_str(); }

void dop_predictor_free(dop_predictor* p) { delete p; }

}  // extern "C"
