/* A chain of dependent matrix products on integers modulo 2^32 (benchmarks/apps/gemm_chain.c). Built with
 * -DELEM=uint. */
#ifndef ELEM
#error "build with -DELEM=..."
#endif

/* out = left * right, n x n, row-major; one work-item per output element. */
__kernel void matmul(__global ELEM* out, __global const ELEM* left, __global const ELEM* right, int n) {
  const int j = get_global_id(0);
  const int i = get_global_id(1);
  if (i >= n || j >= n) return;
  ELEM sum = 0;
  for (int k = 0; k < n; ++k) sum += left[i * n + k] * right[k * n + j];
  out[i * n + j] = sum;
}

/* out = a + b, element-wise over n*n elements. */
__kernel void matadd(__global ELEM* out, __global const ELEM* a, __global const ELEM* b, int n) {
  const int i = get_global_id(0);
  if (i < n * n) out[i] = a[i] + b[i];
}
