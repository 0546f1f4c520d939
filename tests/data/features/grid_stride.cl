// Grid-stride loop: i advances by get_global_size(0) per iteration, so along the innermost loop x[i] moves by a
// launch-time constant: the load and the store are stride accesses. The trip count depends on the work-item
// (unknown, divergent). Float: * (1).
__kernel void grid_stride(__global float* x, int n) {
  for (int i = get_global_id(0); i < n; i += get_global_size(0))
    x[i] = 2.0f * x[i];
}
