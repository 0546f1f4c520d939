// Helper functions are analysed at each call site with their pointer parameters bound to the caller's buffers.
// load_scaled(a, i): a[i] continuous; load_scaled(b, 2*i): b[2i] stride; store_sum: out[i] continuous.
// Float: two * (one per load_scaled call) and one + = 3. Integer: i*2 = 1. Three calls inlined.
float load_scaled(__global const float* p, int i, float s) { return p[i] * s; }

void store_sum(__global float* out, int i, float a, float b) { out[i] = a + b; }

__kernel void helpers(__global const float* a, __global const float* b, __global float* out, float s) {
  int i = get_global_id(0);
  store_sum(out, i, load_scaled(a, i, s), load_scaled(b, i * 2, s));
}
