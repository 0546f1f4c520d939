// vload4/vstore4 access 4 floats at in + 4*i: 16 bytes apart, 16 bytes wide -> continuous (1 load, 1 store).
// out[4*i] and in[4*i + 1] access 4 bytes 16 bytes apart -> stride 2.
// Float: v * 2.0f on float4 (1, vector). Integer: 4*i, 4*i, +1 = 3.
__kernel void copy4(__global const float* in, __global float* out) {
  int i = get_global_id(0);
  float4 v = vload4(i, in);
  vstore4(v * 2.0f, i, out);
  out[4 * i] = in[4 * i + 1];
}
