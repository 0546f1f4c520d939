// Reverses each work-group's slice of x through a __local array of one element per work-item (t[get_local_id(0)]):
// for the launch-time check of a __local argument's size against what the kernel indexes.
__kernel void local_reverse(__global const float* x, __global float* y, __local float* t) {
  const size_t l = get_local_id(0), n = get_local_size(0);
  t[l] = x[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  y[get_global_id(0)] = t[n - 1 - l];
}

// The same through an index the kernel loads (t[idx[l]]): a __local access the footprint cannot bound.
__kernel void local_gather(__global const int* idx, __global const float* x, __global float* y, __local float* t) {
  const size_t l = get_local_id(0);
  t[l] = x[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  y[get_global_id(0)] = t[idx[l]];
}
