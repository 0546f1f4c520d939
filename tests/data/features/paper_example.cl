// The worked example of Dopia (PPoPP'22), Section 5.1:
//   for i < N, for j < M: D[i][j] = A[i][j] + B[j][i] + C[c1] + C[B[j][i]]
// with row-major M-column arrays. Expected: constant 1 (C[c1]), continuous 2 (A[i][j], D[i][j]),
// stride 2 (both B[j][i]), random 1 (C[B[j][i]]); 3 float additions; loop counters are not counted.
#define M 1024

__kernel void paper_example(__global float (*A)[M], __global int (*B)[M], __global float* C,
                            __global float (*D)[M], int N, int c1) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++)
      D[i][j] = A[i][j] + B[j][i] + C[c1] + C[B[j][i]];
}
