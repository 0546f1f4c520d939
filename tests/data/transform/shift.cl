// Work-items of a group exchange values through global memory across a barrier: the malleable form must be refused.
__kernel void shift(__global float* a, __global float* b) {
  const size_t g = get_global_id(0);
  a[g] = a[g] * 2.0f;
  barrier(CLK_GLOBAL_MEM_FENCE);
  const size_t n = get_group_id(0) * get_local_size(0) + (get_local_id(0) + 1) % get_local_size(0);
  b[g] = a[n];
}
