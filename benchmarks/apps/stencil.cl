/* Iterative 2D Jacobi-like stencil on integers (benchmarks/apps/stencil.c). Built with -DCENTER_WEIGHT=W -DSHIFT=S:
 * an interior cell becomes (W*centre + the four neighbours) >> S. */
#ifndef CENTER_WEIGHT
#error "build with -DCENTER_WEIGHT=..."
#endif

/* One sweep: every interior cell from `in`; the edge cells are copied. */
__kernel void stencil_step(__global const int* in, __global int* out, int w, int h) {
  const int x = get_global_id(0);
  const int y = get_global_id(1);
  if (x >= w || y >= h) return;
  const int i = y * w + x;
  if (x == 0 || y == 0 || x == w - 1 || y == h - 1) {
    out[i] = in[i];
    return;
  }
  out[i] = (CENTER_WEIGHT * in[i] + in[i - 1] + in[i + 1] + in[i - w] + in[i + w]) >> SHIFT;
}

/* The left and right edges: fixed sources from the parameter buffer, varying along the edge. */
__kernel void boundary(__global int* grid, __global const int* params, int w, int h) {
  const int y = get_global_id(0);
  if (y >= h) return;
  grid[y * w] = params[0] + (y & 7);
  grid[y * w + w - 1] = params[1];
}

/* Per work-group sums of |a - b| (wrapping), a reduction through __local memory. */
__kernel void residual(__global const int* a, __global const int* b, __global uint* partial, __local uint* scratch,
                       int n) {
  const int lid = get_local_id(0);
  uint sum = 0;
  for (int i = get_global_id(0); i < n; i += get_global_size(0)) sum += (uint)abs(a[i] - b[i]);
  scratch[lid] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = get_local_size(0) / 2; s > 0; s /= 2) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) partial[get_group_id(0)] = scratch[0];
}
