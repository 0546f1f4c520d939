// 2D naive matrix multiply. Inside the k loop: A[row*K + k] moves 1 element per iteration (continuous),
// B[k*N + col] moves N elements (stride, a kernel argument). Outside the loop C[row*N + col] moves one element
// per work-item along get_global_id(0) = col (continuous).
// Integer ops: row*K, +k, k*N, +col, row*N, +col = 6 (k++ is loop control, not counted). Float: += and * = 2.
__kernel void gemm(__global const float* A, __global const float* B, __global float* C, int N, int K) {
  int row = get_global_id(1);
  int col = get_global_id(0);
  float acc = 0.0f;
  for (int k = 0; k < K; k++)
    acc += A[row * K + k] * B[k * N + col];
  C[row * N + col] = acc;
}
