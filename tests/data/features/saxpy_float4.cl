// float4 elements: x[i] and y[i] are 16-byte accesses 16 bytes apart = one element per work-item: continuous 3
// (x[i] load, y[i] load, y[i] store). Two float4 operations (* and +): arith_float 2, arith_vector 2, width 4.
__kernel void saxpy4(__global const float4* x, __global float4* y, float a) {
  int i = get_global_id(0);
  y[i] = a * x[i] + y[i];
}
