// SpMV: y = A x for a sparse n-row matrix A in compressed sparse row (CSR) format, one work-item per row.
//   y[i] = sum_{k = rowptr[i]}^{rowptr[i+1]-1} val[k] * x[col[k]]
// The sum runs in k order in a float accumulator (so does the CPU reference).

__kernel void spmv(__global const int* rowptr, __global const int* col, __global const float* val,
                   __global const float* x, __global float* y, int n) {
  const int i = (int)get_global_id(0);
  if (i >= n) return;
  const int end = rowptr[i + 1];
  float acc = 0.0f;
  for (int k = rowptr[i]; k < end; ++k) acc += val[k] * x[col[k]];
  y[i] = acc;
}
