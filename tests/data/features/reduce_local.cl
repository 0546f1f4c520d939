// Tree reduction in local memory. Global: in[get_global_id(0)] continuous; out[get_group_id(0)] does not change
// between neighbouring work-items (constant). Local: scratch[lid] store; in the loop scratch[lid] += ... is a load
// and a store and scratch[lid + s] a load; scratch[0] a load -> local loads 3, stores 2. Two barriers.
// Integer: get_local_size(0) / 2 and lid + s = 2 (s >>= 1 is loop control). Float: += (1).
// The loop halves s: no constant step, so its trip count is unknown.
__kernel void reduce(__global const float* in, __global float* out, __local float* scratch) {
  int lid = get_local_id(0);
  scratch[lid] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) out[get_group_id(0)] = scratch[0];
}
