// double precision and math builtins: x[i] load and store (8 bytes, 8 apart): continuous 2.
// Float: sqrt, *, +, exp = 4, of which 2 special (math builtins).
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void dscale(__global double* x, double a) {
  int i = get_global_id(0);
  x[i] = sqrt(x[i]) * a + exp(a);
}
