// The paper's example with flattened indices and the row length M as a kernel argument: still constant 1,
// continuous 2, stride 2 (B moves M elements per j iteration), random 1.
// Integer: each i*M + j / j*M + i is 2 ops, 4 of them (D, A, B, B; C[c1] has none) = 8. Float: 3.
__kernel void paper_flat(__global float* A, __global int* B, __global float* C, __global float* D, int N, int M,
                         int c1) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++)
      D[i * M + j] = A[i * M + j] + B[j * M + i] + C[c1] + C[B[j * M + i]];
}
