// 1D, outside loops: classified along the work-item index get_global_id(0).
// a[i], b[i], c[i]: unit stride -> continuous 3. One float add. The bounds check is a divergent branch.
__kernel void vec_add(__global const float* a, __global const float* b, __global float* c, int n) {
  int i = get_global_id(0);
  if (i < n) c[i] = a[i] + b[i];
}
