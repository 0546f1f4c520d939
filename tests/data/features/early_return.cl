// Early return. x[i] = x[i] * s is a load and a store; x[i] += 1 is a load and a store (compound assignment):
// continuous 4. Float ops: * and += -> 2. x is read and written.
__kernel void scale(__global float* x, float s, int n) {
  size_t i = get_global_id(0);
  if (i >= n) return;
  x[i] = x[i] * s;
  x[i] += 1.0f;
}
