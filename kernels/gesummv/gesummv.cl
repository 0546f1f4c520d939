// GESUMMV: y = alpha * A x + beta * B x for n x n row-major matrices A and B, one work-item per row i.
//   y[i] = alpha * (sum_j A[i][j] * x[j]) + beta * (sum_j B[i][j] * x[j])
// Both sums run in index order in float accumulators (so does the CPU reference).

__kernel void gesummv(__global const float* A, __global const float* B, __global const float* x, __global float* y,
                      float alpha, float beta, int n) {
  const int i = (int)get_global_id(0);
  if (i >= n) return;
  const __global float* a = A + (size_t)i * (size_t)n;
  const __global float* b = B + (size_t)i * (size_t)n;
  float sa = 0.0f;
  float sb = 0.0f;
  for (int j = 0; j < n; ++j) {
    sa += a[j] * x[j];
    sb += b[j] * x[j];
  }
  y[i] = alpha * sa + beta * sb;
}
