/* The predictor's C API used from C (compiled as C): load, predict twice (memoised), a missing feature, free.
 * The model is test_predictor.cpp's hand-made tree: the best configuration is (0.75, 0) at 0.1f + 0.9f for a < 5. */
#include <stdio.h>
#include <string.h>

#include "dop/predictor.h"

int dop_test_c_api(const char* model_path, char* message, size_t size);

int dop_test_c_api(const char* model_path, char* message, size_t size) {
  dop_predictor* p = dop_predictor_load(model_path, "test-platform");
  if (!p) {
    snprintf(message, size, "load: %s", dop_predictor_last_error());
    return 1;
  }
  if (dop_predictor_num_code_features(p) != 2 || strcmp(dop_predictor_code_feature(p, 0), "a") != 0 ||
      dop_predictor_code_feature(p, 2) != NULL) {
    snprintf(message, size, "code features: expected a, b");
    dop_predictor_free(p);
    return 2;
  }
  const char* names[] = {"a", "b"};
  const double values[] = {1.0, 0.0};
  const size_t global[] = {1024, 1}, local[] = {64, 1};
  dop_decision d, again;
  int rc = dop_predictor_predict(p, "k.cl:k", 2, names, values, 2, global, local, &d);
  rc |= dop_predictor_predict(p, "k.cl:k", 2, names, values, 2, global, local, &again);
  if (rc != 0) {
    snprintf(message, size, "predict: %s", dop_predictor_last_error());
    dop_predictor_free(p);
    return 3;
  }
  if (d.cpu_util != 0.75 || d.gpu_util != 0.0 || d.index != 26 || d.predicted != (double)(0.1f + 0.9f) || d.cached ||
      !again.cached || again.index != d.index) {
    snprintf(message, size, "decision: cpu %g gpu %g index %zu predicted %.9g cached %d/%d", d.cpu_util, d.gpu_util,
             d.index, d.predicted, d.cached, again.cached);
    dop_predictor_free(p);
    return 4;
  }
  /* The launch's data is part of the memo key: the same launch with its data on the GPU is another decision. */
  rc = dop_predictor_predict_data(p, "k.cl:k", 2, names, values, 2, global, local, 4096, 1024, DOP_DATA_ON_GPU,
                                  &again);
  if (rc != 0 || again.cached || again.index != d.index) {
    snprintf(message, size, "predict with data: rc %d cached %d: %s", rc, again.cached, dop_predictor_last_error());
    dop_predictor_free(p);
    return 10;
  }
  /* Page-locked host data is a third place: another decision again. */
  rc = dop_predictor_predict_data(p, "k.cl:k", 2, names, values, 2, global, local, 4096, 1024, DOP_DATA_ON_PINNED,
                                  &again);
  if (rc != 0 || again.cached) {
    snprintf(message, size, "predict with pinned data: rc %d cached %d: %s", rc, again.cached,
             dop_predictor_last_error());
    dop_predictor_free(p);
    return 11;
  }
  /* A place that is none of them is an error naming the three. */
  rc = dop_predictor_predict_data(p, "k.cl:k", 2, names, values, 2, global, local, 4096, 1024, 3, &again);
  if (rc == 0 || strstr(dop_predictor_last_error(), "data_on 3 is not DOP_DATA_ON_HOST (0)") == NULL) {
    snprintf(message, size, "data_on 3 not refused: rc %d, '%s'", rc, dop_predictor_last_error());
    dop_predictor_free(p);
    return 12;
  }
  /* Without a kernel id: not memoised. */
  rc = dop_predictor_predict(p, NULL, 2, names, values, 1, global, local, &d);
  if (rc != 0 || d.cached) {
    snprintf(message, size, "unmemoised predict failed: %s", dop_predictor_last_error());
    dop_predictor_free(p);
    return 5;
  }
  /* Feature b only: the model needs a. */
  rc = dop_predictor_predict(p, NULL, 1, names + 1, values + 1, 1, global, local, &d);
  if (rc == 0 || strstr(dop_predictor_last_error(), "code feature 'a' is required") == NULL) {
    snprintf(message, size, "missing feature not reported: rc %d, '%s'", rc, dop_predictor_last_error());
    dop_predictor_free(p);
    return 6;
  }
  /* A bad work_dim. */
  rc = dop_predictor_predict(p, NULL, 2, names, values, 4, global, local, &d);
  if (rc == 0 || strstr(dop_predictor_last_error(), "work_dim 4") == NULL) {
    snprintf(message, size, "bad work_dim not reported");
    dop_predictor_free(p);
    return 7;
  }
  dop_predictor_free(p);
  return 0;
}
