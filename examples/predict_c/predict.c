/* Embeds dop's predictor in a C program: loads a model, gives it a kernel's code features and a launch size, and
 * prints the configuration (CPU and GPU shares) the model picks.
 *
 *   predict_c MODEL.json GLOBAL_X GLOBAL_Y LOCAL_X LOCAL_Y
 *
 * The code features are those of kernels/gemm/gemm.cl, as `dop features kernels/gemm/gemm.cl --csv` computes
 * them: an application computes its kernels' features once, at build time, and ships them with its kernels.
 * global_bytes_per_item depends on the kernel's argument nk (its expression is 8*nk + 8): it is given as missing
 * (NaN) here, which tree models send the default way. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "dop/predictor.h"

static const char* const kGemmFeatureNames[] = {"mem_constant",
                                                "mem_continuous",
                                                "mem_stride",
                                                "mem_random",
                                                "arith_int",
                                                "arith_float",
                                                "mem_global_loads",
                                                "mem_global_stores",
                                                "mem_global_atomics",
                                                "mem_constant_space",
                                                "mem_local_loads",
                                                "mem_local_stores",
                                                "mem_local_atomics",
                                                "mem_private_loads",
                                                "mem_private_stores",
                                                "image_ops",
                                                "arith_special",
                                                "arith_bitwise",
                                                "arith_vector",
                                                "vector_width_max",
                                                "loops",
                                                "loop_depth",
                                                "loops_constant_trip",
                                                "loops_symbolic_trip",
                                                "loops_unknown_trip",
                                                "branches",
                                                "branches_divergent",
                                                "barriers",
                                                "work_dim",
                                                "args_read_only",
                                                "args_write_only",
                                                "args_read_write",
                                                "calls_inlined",
                                                "global_bytes_per_item"};
static const double kGemmFeatureValues[] = {0, 3, 1, 0, 5, 5, 3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                            0, 0, 1, 1, 1, 0, 1, 0, 1, 1, 0, 2, 2, 0, 1, 0, NAN};
#define N_FEATURES (sizeof kGemmFeatureValues / sizeof kGemmFeatureValues[0])

static size_t parse_size(const char* text, const char* what) {
  char* end = NULL;
  const unsigned long long v = strtoull(text, &end, 10);
  if (end == text || *end != '\0' || v == 0) {
    fprintf(stderr, "predict_c: %s: '%s' is not a positive integer\n", what, text);
    exit(2);
  }
  return (size_t)v;
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s MODEL.json GLOBAL_X GLOBAL_Y LOCAL_X LOCAL_Y\n", argv[0]);
    return 2;
  }
  const size_t global[2] = {parse_size(argv[2], "GLOBAL_X"), parse_size(argv[3], "GLOBAL_Y")};
  const size_t local[2] = {parse_size(argv[4], "LOCAL_X"), parse_size(argv[5], "LOCAL_Y")};

  dop_predictor* p = dop_predictor_load(argv[1], NULL); /* NULL: any platform's model */
  if (!p) {
    fprintf(stderr, "predict_c: %s\n", dop_predictor_last_error());
    return 1;
  }
  printf("model %s: %zu code features\n", argv[1], dop_predictor_num_code_features(p));

  dop_decision d;
  if (dop_predictor_predict(p, "gemm.cl:gemm", N_FEATURES, kGemmFeatureNames, kGemmFeatureValues, 2, global, local,
                            &d) != 0) {
    fprintf(stderr, "predict_c: %s\n", dop_predictor_last_error());
    dop_predictor_free(p);
    return 1;
  }
  printf("gemm %zux%zu/%zux%zu: cpu_util %g gpu_util %g (predicted %.4f), configuration %zu of the grid\n", global[0],
         global[1], local[0], local[1], d.cpu_util, d.gpu_util, d.predicted, d.index);
  dop_predictor_free(p);
  return 0;
}
