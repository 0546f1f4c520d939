// Indirect access: idx[i] and dst[i] continuous; src[idx[i]] depends on a loaded value: random.
__kernel void gather(__global const float* src, __global const int* idx, __global float* dst, int n) {
  int i = get_global_id(0);
  if (i < n) dst[i] = src[idx[i]];
}
