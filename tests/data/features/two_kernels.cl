// Two kernels sharing a helper. first: in[i] load, out[i] store (continuous 2), one float *.
// second: in[i] load inside a loop over k (constant along k), out[i] store outside (continuous); float: acc * ..
// and the helper's * = 2 (the loop body counts once, like every source occurrence).
float twice(float v) { return v * 2.0f; }

__kernel void first(__global const float* in, __global float* out) {
  int i = get_global_id(0);
  out[i] = twice(in[i]);
}

__kernel void second(__global const float* in, __global float* out) {
  int i = get_global_id(0);
  float acc = 0.0f;
  for (int k = 0; k < 3; k++) acc = acc * twice(in[i]);
  out[i] = acc;
}
