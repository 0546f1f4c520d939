/* One tiny step of a chain (benchmarks/apps/tiny.c): dst = (dst ^ (src * 2654435761)) + t + i, element-wise. */
__kernel void tiny_step(__global uint* dst, __global const uint* src, uint t, int n) {
  const int i = get_global_id(0);
  if (i < n) dst[i] = (dst[i] ^ (src[i] * 2654435761u)) + t + (uint)i;
}
