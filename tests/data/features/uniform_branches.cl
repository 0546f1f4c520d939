// Branches whose conditions do not depend on the work-item: if (mode == 1), if (mode == 2), if (k % 2 == 0), ?:
// -> 4 branches, 0 divergent. Memory: two x[i] stores (continuous); in the k loop x[i] += 1 does not move with k
// (constant: load + store); x[i] *= v (continuous: load + store) -> continuous 4, constant 2.
// Float: +=, *= = 2. Integer: k % 2 = 1.
__kernel void modes(__global float* x, int mode, int n) {
  int i = get_global_id(0);
  if (mode == 1)
    x[i] = 0.0f;
  else if (mode == 2)
    x[i] = 1.0f;
  for (int k = 0; k < n; k++) {
    if (k % 2 == 0) x[i] += 1.0f;
  }
  float v = mode > 0 ? 1.0f : 2.0f;
  x[i] *= v;
}
