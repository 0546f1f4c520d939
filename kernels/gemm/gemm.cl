// GEMM: C = alpha * A B + beta * C with A ni x nk, B nk x nj, C ni x nj (row-major), one work-item per element of C.
//   C[i][j] = beta * C[i][j] + alpha * sum_k A[i][k] * B[k][j]
// Global size [nj, ni] rounded up to the work-group size (dimension 0 runs along a row of C and B). The sum runs in
// k order in a float accumulator (so does the CPU reference).

__kernel void gemm(__global const float* A, __global const float* B, __global float* C, float alpha, float beta,
                   int ni, int nj, int nk) {
  const int j = (int)get_global_id(0);
  const int i = (int)get_global_id(1);
  if (i >= ni || j >= nj) return;
  const __global float* a = A + (size_t)i * (size_t)nk;
  float acc = 0.0f;
  for (int k = 0; k < nk; ++k) acc += a[k] * B[(size_t)k * (size_t)nj + j];
  const size_t p = (size_t)i * (size_t)nj + j;
  C[p] = beta * C[p] + alpha * acc;
}
