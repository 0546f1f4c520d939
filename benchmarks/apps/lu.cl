/* LU factorisation without pivoting over the integers modulo a prime (benchmarks/apps/lu.c), in place: after step k,
 * column k below the diagonal holds L and the rows above hold U. Built with -DPRIME=p. */
#ifndef PRIME
#error "build with -DPRIME=..."
#endif

static uint mulmod(uint a, uint b) { return (uint)(((ulong)a * b) % PRIME); }

/* a^(PRIME-2): the inverse of a nonzero a modulo the prime (Fermat). */
static uint inverse(uint a) {
  uint result = 1;
  uint e = PRIME - 2;
  while (e) {
    if (e & 1) result = mulmod(result, a);
    a = mulmod(a, a);
    e >>= 1;
  }
  return result;
}

/* Column k below the diagonal divided by the pivot: one work-item per row k+1+i. */
__kernel void lu_column(__global uint* a, int n, int k) {
  const int i = k + 1 + get_global_id(0);
  if (i >= n) return;
  a[i * n + k] = mulmod(a[i * n + k], inverse(a[k * n + k]));
}

/* The trailing submatrix: a[i][j] -= a[i][k] * a[k][j] for i, j > k. */
__kernel void lu_update(__global uint* a, int n, int k) {
  const int j = k + 1 + get_global_id(0);
  const int i = k + 1 + get_global_id(1);
  if (i >= n || j >= n) return;
  const uint prod = mulmod(a[i * n + k], a[k * n + j]);
  const uint v = a[i * n + j];
  a[i * n + j] = v >= prod ? v - prod : v + (PRIME - prod);
}
