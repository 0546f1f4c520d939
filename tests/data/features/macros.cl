// Macros are expanded before counting: SQ(in[...]) is two loads of in[IDX(r, c + t, w)], both continuous along t;
// out[IDX(r, c, w)] is continuous along get_global_id(0) = c: continuous 3.
// Integer: IDX(r, c + t, w) = r*w + (c + t): 3 ops, twice (SQ duplicates it) = 6; IDX(r, c, w): 2 -> 8.
// Float: the * of SQ and += = 2. TILE gives a constant trip count of 4.
#define IDX(r, c, w) ((r) * (w) + (c))
#define TILE 4
#define SQ(x) ((x) * (x))

__kernel void macro_kernel(__global const float* in, __global float* out, int w) {
  int r = get_global_id(1), c = get_global_id(0);
  float s = 0.0f;
  for (int t = 0; t < TILE; t++)
    s += SQ(in[IDX(r, c + t, w)]);
  out[IDX(r, c, w)] = s;
}
