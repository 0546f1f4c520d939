// Does not compile alone: DATA_TYPE, BLOCK and ALPHA come from build options elsewhere. DATA_TYPE is guessed to be
// float; BLOCK becomes a symbol, so the loop's trip count is "BLOCK" and a[i*BLOCK + j], b[i*BLOCK + j] are still
// classified (continuous along j). Integer: i*BLOCK, +j twice = 4.
__kernel void needs_defs(__global DATA_TYPE* a, __global DATA_TYPE* b, int n) {
  int i = get_global_id(0);
  for (int j = 0; j < BLOCK; j++)
    b[i * BLOCK + j] = a[i * BLOCK + j] * ALPHA;
}
