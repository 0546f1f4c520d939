// Atomics. Global: data[gid] (uchar, 1 byte apart: continuous), atomic_add on bins[lid] (int, along the local id:
// continuous) -> continuous 2, of which 1 global atomic. Local: lbins[lid] = 0 (store), atomic_inc (local atomic),
// lbins[lid] (load). Two barriers, three branches, all on the work-item id.
__kernel void histogram(__global const uchar* data, __global int* bins, __local int* lbins, int n) {
  int gid = get_global_id(0), lid = get_local_id(0);
  if (lid < 256) lbins[lid] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (gid < n) atomic_inc(&lbins[data[gid]]);
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid < 256) atomic_add(&bins[lid], lbins[lid]);
}
