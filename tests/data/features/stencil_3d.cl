// 3D 7-point stencil. Every neighbour is at a fixed offset of the flattened index, so all 7 loads and the store
// move one element per work-item along x: continuous 8.
// Integer ops: z*ny, +y, *nx, +x (4); i-1, i+1 (2); i-nx, i+nx (2); nx*ny, i-.., nx*ny, i+.. (4) = 12.
// Float ops: five + between the six neighbours, one -, one * = 7.
__kernel void stencil(__global const float* in, __global float* out, int nx, int ny) {
  int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
  int i = (z * ny + y) * nx + x;
  out[i] = in[i - 1] + in[i + 1] + in[i - nx] + in[i + nx] + in[i - nx * ny] + in[i + nx * ny] - 6.0f * in[i];
}
