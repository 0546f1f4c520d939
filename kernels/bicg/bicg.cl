// BICG: the two matrix-vector products of a BiConjugate Gradient step, for an n x n row-major matrix A.
//   bicg1: s[j] = sum_i r[i] * A[i][j]   (s = A^T r)   one work-item per column j
//   bicg2: q[i] = sum_j A[i][j] * p[j]   (q = A p)     one work-item per row i
// Sums run in index order in a float accumulator (the CPU reference does the same).

__kernel void bicg1(__global const float* A, __global const float* r, __global float* s, int n) {
  const int j = (int)get_global_id(0);
  if (j >= n) return;
  float acc = 0.0f;
  for (int i = 0; i < n; ++i) acc += r[i] * A[(size_t)i * (size_t)n + j];
  s[j] = acc;
}

__kernel void bicg2(__global const float* A, __global const float* p, __global float* q, int n) {
  const int i = (int)get_global_id(0);
  if (i >= n) return;
  const __global float* row = A + (size_t)i * (size_t)n;
  float acc = 0.0f;
  for (int j = 0; j < n; ++j) acc += row[j] * p[j];
  q[i] = acc;
}
