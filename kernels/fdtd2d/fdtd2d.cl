// FDTD-2D: one time step of the two-dimensional finite-difference time-domain method (TE mode, Yee grid) on an
// nx x ny grid, as three kernels launched one after another. ex, ey and hz are nx x ny row-major arrays; fict is the
// source term of each time step. One work-item per grid point; global size [ny, nx] rounded up to the work-group
// size (dimension 0 runs along a row).
//   fdtd1 (ey): ey[0][j] = fict[t];  ey[i][j] = ey[i][j] - 0.5 * (hz[i][j] - hz[i-1][j])          for i >= 1
//   fdtd2 (ex): ex[i][j] = ex[i][j] - 0.5 * (hz[i][j] - hz[i][j-1])                              for j >= 1
//   fdtd3 (hz): hz[i][j] = hz[i][j] - 0.7 * (ex[i][j+1] - ex[i][j] + ey[i+1][j] - ey[i][j])   for i < nx-1, j < ny-1
// Points outside those ranges are left unchanged.

__kernel void fdtd1(__global float* ey, __global const float* hz, __global const float* fict, int t, int nx, int ny) {
  const int j = (int)get_global_id(0);
  const int i = (int)get_global_id(1);
  if (i >= nx || j >= ny) return;
  const size_t p = (size_t)i * (size_t)ny + j;
  if (i == 0) {
    ey[p] = fict[t];
  } else {
    ey[p] = ey[p] - 0.5f * (hz[p] - hz[p - ny]);
  }
}

__kernel void fdtd2(__global float* ex, __global const float* hz, int nx, int ny) {
  const int j = (int)get_global_id(0);
  const int i = (int)get_global_id(1);
  if (i >= nx || j < 1 || j >= ny) return;
  const size_t p = (size_t)i * (size_t)ny + j;
  ex[p] = ex[p] - 0.5f * (hz[p] - hz[p - 1]);
}

__kernel void fdtd3(__global float* hz, __global const float* ex, __global const float* ey, int nx, int ny) {
  const int j = (int)get_global_id(0);
  const int i = (int)get_global_id(1);
  if (i >= nx - 1 || j >= ny - 1) return;
  const size_t p = (size_t)i * (size_t)ny + j;
  hz[p] = hz[p] - 0.7f * (ex[p + 1] - ex[p] + ey[p + ny] - ey[p]);
}
