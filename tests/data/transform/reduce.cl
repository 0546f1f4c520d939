// A work-group reduction in __local memory with barriers: the malleable form must be refused.
__kernel void reduce(__global const float* in, __global float* out) {
  __local float part[64];
  const size_t l = get_local_id(0);
  part[l] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t s = get_local_size(0) / 2; s > 0; s /= 2) {
    if (l < s) part[l] += part[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) out[get_group_id(0)] = part[0];
}
