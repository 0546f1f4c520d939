// __constant memory is device memory too: counted in Table 1 and also in mem_constant_space.
// In the k loop: coeffs[k] and in[i + k] continuous. Outside: out[i] continuous, extra[0] constant.
// -> continuous 3, constant 1, constant-space 2. Float: +=, *, + = 3. Integer: i + k = 1.
__constant float coeffs[4] = {0.1f, 0.2f, 0.3f, 0.4f};

__kernel void fir(__global const float* in, __global float* out, __constant float* extra) {
  int i = get_global_id(0);
  float acc = 0.0f;
  for (int k = 0; k < 4; k++) acc += coeffs[k] * in[i + k];
  out[i] = acc + extra[0];
}
