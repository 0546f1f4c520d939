// The paper's Figure 5 input kernel (2mat3d): one work-item per z, loops over y and x. In the x loop idx moves by 1:
// A[idx], B[idx], C[idx] continuous 3. Trip counts NY and NX (symbolic); 12 bytes per x iteration.
// Integer: NY*NX, z*(..), y*NX, +, + = 5. Float: 1. The z < NZ branch is divergent.
__kernel void mat3d(__global float* A, __global float* B, __global float* C, int NZ, int NY, int NX) {
  int z = get_global_id(0);
  if (z < NZ) {
    for (int y = 0; y < NY; y++) {
      for (int x = 0; x < NX; x++) {
        int idx = z * (NY * NX) + y * NX + x;
        C[idx] = A[idx] + B[idx];
      }
    }
  }
}
