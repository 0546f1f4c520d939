// Pointer arithmetic. row = m + r*cols; *(row + c) in the c loop moves one float per iteration: continuous.
// p advances by cols floats per iteration (p += cols): *p is a stride access (kernel-argument stride).
// Integer ops: r*cols only (pointer + int is address arithmetic, like a subscript; p += cols too).
// Trip counts: cols (symbolic), 16 (constant).
__kernel void rows(__global float* m, int cols) {
  int r = get_global_id(0);
  __global float* row = m + r * cols;
  for (int c = 0; c < cols; c++)
    *(row + c) = 0.0f;
  __global float* p = m;
  for (int k = 0; k < 16; k++) {
    *p = 1.0f;
    p += cols;
  }
}
