// 2D transpose: in[y*W + x] is continuous along x = get_global_id(0); out[x*H + y] strides by H.
// Integer ops: y*W, +x, x*H, +y = 4. The && condition depends on the work-item id: 1 divergent branch.
__kernel void transpose(__global const float* in, __global float* out, int W, int H) {
  int x = get_global_id(0);
  int y = get_global_id(1);
  if (x < W && y < H) out[x * H + y] = in[y * W + x];
}
