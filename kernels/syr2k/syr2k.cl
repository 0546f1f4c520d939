// SYR2K: the symmetric rank-2k update C = alpha * A B^T + alpha * B A^T + beta * C with A and B n x m and C n x n
// (row-major), one work-item per element of C (the whole matrix, both triangles).
//   C[i][j] = beta * C[i][j] + alpha * sum_k (A[i][k] * B[j][k] + B[i][k] * A[j][k])
// Global size [n, n] rounded up to the work-group size (dimension 0 is j). The sum adds the two products of each k in
// that order into one float accumulator (so does the CPU reference).

__kernel void syr2k(__global const float* A, __global const float* B, __global float* C, float alpha, float beta,
                    int n, int m) {
  const int j = (int)get_global_id(0);
  const int i = (int)get_global_id(1);
  if (i >= n || j >= n) return;
  const __global float* ai = A + (size_t)i * (size_t)m;
  const __global float* bi = B + (size_t)i * (size_t)m;
  const __global float* aj = A + (size_t)j * (size_t)m;
  const __global float* bj = B + (size_t)j * (size_t)m;
  float acc = 0.0f;
  for (int k = 0; k < m; ++k) {
    acc += ai[k] * bj[k];
    acc += bi[k] * aj[k];
  }
  const size_t p = (size_t)i * (size_t)n + j;
  C[p] = beta * C[p] + alpha * acc;
}
