/* dop predictor, C API: load a dop-model/1 file and pick the degree of parallelism for a kernel launch.
 *
 *   dop_predictor* p = dop_predictor_load("model.json", "h100-xeon16");   // NULL platform id: no check
 *   if (!p) { fprintf(stderr, "%s\n", dop_predictor_last_error()); ... }
 *   const char* names[] = {"mem_continuous", "arith_float", ...};
 *   double values[] = {3, 2, ...};
 *   size_t global[] = {1024, 1024}, local[] = {16, 16};
 *   dop_decision d;
 *   if (dop_predictor_predict(p, "gemm.cl:gemm", n, names, values, 2, global, local, &d) != 0) { ... }
 *   ... d.cpu_util, d.gpu_util ...
 *   dop_predictor_free(p);
 *
 * Every function is thread-safe; decisions are memoised per (kernel id, launch shape). Errors: a non-zero return
 * (or NULL) and a message from dop_predictor_last_error(), kept per thread until the next failing call.
 */
#ifndef DOP_PREDICTOR_H
#define DOP_PREDICTOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dop_predictor dop_predictor;

typedef struct dop_decision {
  double cpu_util;  /* share of the CPU cores, in [0, 1] */
  double gpu_util;  /* share of the GPU, in [0, 1] (eighths) */
  double predicted; /* the model's output: normalised performance, or a ranking score */
  size_t index;     /* position of the configuration in the model's grid order */
  int cached;       /* 1 when the decision came from the memo */
} dop_decision;

/* Loads a model file. platform_id: the caller's platform; a model for another platform is refused (NULL: no check).
 * Returns NULL on failure (see dop_predictor_last_error). */
dop_predictor* dop_predictor_load(const char* model_path, const char* platform_id);

/* Picks the best configuration. kernel_id identifies the kernel's code features for memoisation (may be NULL: no
 * memoisation). The code features are given by name (n_features pairs); every code feature of the model must be
 * present (NaN = missing value). global/local hold work_dim sizes. Returns 0, or -1 on error. */
int dop_predictor_predict(dop_predictor* predictor, const char* kernel_id, size_t n_features,
                          const char* const* feature_names, const double* feature_values, unsigned work_dim,
                          const size_t* global, const size_t* local, dop_decision* out);

/* Where a launch's inputs are (dop_predictor_predict_data's data_on). */
enum {
  DOP_DATA_ON_HOST = 0,  /* host memory, pageable: the runtime stages what the GPU receives */
  DOP_DATA_ON_GPU = 1,   /* the GPU already holds the inputs: it receives nothing */
  DOP_DATA_ON_PINNED = 2 /* host memory, page-locked: the GPU's DMA reads the inputs in place */
};

/* The same with the launch's data: bytes of the buffers the kernel reads and writes (0 = unknown), and where the
 * inputs are (data_on: DOP_DATA_ON_HOST, _GPU or _PINNED; another value is an error). dop_predictor_predict passes
 * 0, 0, DOP_DATA_ON_HOST. */
int dop_predictor_predict_data(dop_predictor* predictor, const char* kernel_id, size_t n_features,
                               const char* const* feature_names, const double* feature_values, unsigned work_dim,
                               const size_t* global, const size_t* local, uint64_t in_bytes, uint64_t out_bytes,
                               int data_on, dop_decision* out);

/* The model's code features: their number, and the key of the i-th (NULL when out of range). */
size_t dop_predictor_num_code_features(const dop_predictor* predictor);
const char* dop_predictor_code_feature(const dop_predictor* predictor, size_t i);

/* The last error of this thread ("" if none). */
const char* dop_predictor_last_error(void);

void dop_predictor_free(dop_predictor* predictor);

#ifdef __cplusplus
}
#endif

#endif /* DOP_PREDICTOR_H */
