// Trip counts. Loop 0: i < n*m (symbolic "n*m"); loop 1: i < n (symbolic); loop 2: j from i to n (depends on the
// outer loop: unknown); loop 3: k = 10, 7, 4, 1 (constant 4).
// Memory: a[g] += 1 in loop 0 does not move (constant: load + store); a[i*n + j] moves one element per j
// iteration (continuous); a[k] moves -3 elements per iteration (stride).
// Integer: n*m, i*n, +j = 3. Float: += = 1. Nest depth 2.
__kernel void nest(__global float* a, int n, int m) {
  int g = get_global_id(0);
  for (int i = 0; i < n * m; i++) a[g] += 1.0f;
  for (int i = 0; i < n; i++)
    for (int j = i; j < n; j++)
      a[i * n + j] = 0.0f;
  for (int k = 10; k > 0; k -= 3) a[k] = 1.0f;
}
