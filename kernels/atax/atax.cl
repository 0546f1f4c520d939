// ATAX: y = A^T (A x) for an n x n row-major matrix A, in two kernels.
//   atax1: tmp[i] = sum_j A[i][j] * x[j]      one work-item per row i (each work-item streams one row)
//   atax2: y[j]   = sum_i A[i][j] * tmp[i]    one work-item per column j (neighbouring work-items read
//                                             neighbouring elements of each row)
// Sums run in index order in a float accumulator (the CPU reference does the same).

__kernel void atax1(__global const float* A, __global const float* x, __global float* tmp, int n) {
  const int i = (int)get_global_id(0);
  if (i >= n) return;
  const __global float* row = A + (size_t)i * (size_t)n;
  float acc = 0.0f;
  for (int j = 0; j < n; ++j) acc += row[j] * x[j];
  tmp[i] = acc;
}

__kernel void atax2(__global const float* A, __global const float* tmp, __global float* y, int n) {
  const int j = (int)get_global_id(0);
  if (j >= n) return;
  float acc = 0.0f;
  for (int i = 0; i < n; ++i) acc += A[(size_t)i * (size_t)n + j] * tmp[i];
  y[j] = acc;
}
