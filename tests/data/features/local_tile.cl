// Local memory is counted apart from Table 1: tile[lid] store (1), tile[k] load (1).
// Global: in[gid], out[gid] continuous. One barrier. Float: += (1). The k loop runs TS = 16 times.
#define TS 16
__kernel void tiled_sum(__global const float* in, __global float* out) {
  __local float tile[TS];
  int lid = get_local_id(0);
  int gid = get_global_id(0);
  tile[lid] = in[gid];
  barrier(CLK_LOCAL_MEM_FENCE);
  float s = 0.0f;
  for (int k = 0; k < TS; k++) s += tile[k];
  out[gid] = s;
}
