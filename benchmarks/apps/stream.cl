/* The STREAM triad (benchmarks/apps/stream.c): a = b + s * c over n floats. */
__kernel void triad(__global float* a, __global const float* b, __global const float* c, float s, int n) {
  const int i = get_global_id(0);
  if (i < n) a[i] = b[i] + s * c[i];
}
