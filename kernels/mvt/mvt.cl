// MVT: two matrix-vector products with the same n x n row-major matrix A, one plain and one transposed.
//   mvt1: x1[i] = x1[i] + sum_j A[i][j] * y1[j]   (x1 += A y1)     one work-item per row i
//   mvt2: x2[i] = x2[i] + sum_j A[j][i] * y2[j]   (x2 += A^T y2)   one work-item per column i
// The accumulator starts at the old x value and adds the products in index order (so does the CPU reference).

__kernel void mvt1(__global const float* A, __global float* x1, __global const float* y1, int n) {
  const int i = (int)get_global_id(0);
  if (i >= n) return;
  const __global float* row = A + (size_t)i * (size_t)n;
  float acc = x1[i];
  for (int j = 0; j < n; ++j) acc += row[j] * y1[j];
  x1[i] = acc;
}

__kernel void mvt2(__global const float* A, __global float* x2, __global const float* y2, int n) {
  const int i = (int)get_global_id(0);
  if (i >= n) return;
  float acc = x2[i];
  for (int j = 0; j < n; ++j) acc += A[(size_t)j * (size_t)n + i] * y2[j];
  x2[i] = acc;
}
