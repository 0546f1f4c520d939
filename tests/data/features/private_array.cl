// Private arrays are counted apart: buf[k] store (1), buf[7 - k] load (1).
// Global: in[gid*8 + k] continuous along k, out[gid] continuous along the work-item.
// Integer: gid*8, +k, 7-k, += = 4 (int data).
__kernel void priv(__global const int* in, __global int* out) {
  int gid = get_global_id(0);
  int buf[8];
  for (int k = 0; k < 8; k++) buf[k] = in[gid * 8 + k];
  int acc = 0;
  for (int k = 0; k < 8; k++) acc += buf[7 - k];
  out[gid] = acc;
}
