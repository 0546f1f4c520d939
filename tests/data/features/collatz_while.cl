// A while loop without an induction variable. start[gid] and steps[gid] are continuous along the work-item.
// Integer: v % 2, v / 2, 3 * v, + 1, s++ = 5. The if inside depends on v, loaded per work-item: divergent.
// The loop's trip count is unknown and divergent.
__kernel void collatz(__global int* steps, __global const int* start) {
  int gid = get_global_id(0);
  int v = start[gid];
  int s = 0;
  while (v != 1) {
    if (v % 2 == 0)
      v = v / 2;
    else
      v = 3 * v + 1;
    s++;
  }
  steps[gid] = s;
}
