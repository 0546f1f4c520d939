// CSR sparse matrix-vector product. rowptr[r] (loop init, outside the loop) and y[r] are continuous along the
// work-item. In the k loop: rowptr[r + 1] in the condition does not move (constant), val[k] and col[k] move one
// element per iteration (continuous), x[col[k]] is indirect (random).
// -> constant 1, continuous 4, random 1. Integer: r + 1. Float: += and *. Trip count unknown (loaded bounds), and
// divergent (the bounds depend on the row, i.e. on the work-item).
__kernel void spmv(__global const int* rowptr, __global const int* col, __global const float* val,
                   __global const float* x, __global float* y, int rows) {
  int r = get_global_id(0);
  if (r >= rows) return;
  float sum = 0.0f;
  for (int k = rowptr[r]; k < rowptr[r + 1]; k++)
    sum += val[k] * x[col[k]];
  y[r] = sum;
}
