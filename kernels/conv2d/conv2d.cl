// 2DCONV: a 3x3 convolution of an n x m image (row-major), one work-item per output pixel.
//   B[i][j] = sum_{a,b in -1..1} w[a][b] * A[i+a][j+b]   for 1 <= i < n-1, 1 <= j < m-1
// The border of B is not written (it keeps its initial value). Global size: [cols, rows] rounded up to the
// work-group size; dimension 0 runs along a row so that neighbouring work-items touch neighbouring pixels.
// The weights are part of the kernel (as in the usual benchmark); the CPU reference uses the same ones in the same
// order.
#define W00 0.25f
#define W01 (-0.5f)
#define W02 0.75f
#define W10 (-0.125f)
#define W11 0.375f
#define W12 (-0.625f)
#define W20 0.5f
#define W21 0.875f
#define W22 (-0.25f)

__kernel void conv2d(__global const float* A, __global float* B, int n, int m) {
  const int j = (int)get_global_id(0);
  const int i = (int)get_global_id(1);
  if (i < 1 || i >= n - 1 || j < 1 || j >= m - 1) return;
  const __global float* up = A + (size_t)(i - 1) * (size_t)m;
  const __global float* mid = up + m;
  const __global float* down = mid + m;
  float acc = W00 * up[j - 1];
  acc += W01 * up[j];
  acc += W02 * up[j + 1];
  acc += W10 * mid[j - 1];
  acc += W11 * mid[j];
  acc += W12 * mid[j + 1];
  acc += W20 * down[j - 1];
  acc += W21 * down[j];
  acc += W22 * down[j + 1];
  B[(size_t)i * (size_t)m + j] = acc;
}
