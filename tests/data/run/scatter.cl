// y[idx[i]] = x[i]: an address the footprint cannot bound (the index is loaded), for the guard-page tests.
__kernel void scatter(__global const int* idx, __global const float* x, __global float* y) {
  const size_t i = get_global_id(0);
  y[idx[i]] = x[i];
}
