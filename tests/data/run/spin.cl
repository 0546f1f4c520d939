// Never ends while flag[0] is 0 (the spec's flag is zeros): for the time-limit tests.
__kernel void spin(__global volatile const int* flag, __global float* y) {
  while (flag[0] == 0) {
  }
  y[get_global_id(0)] = 1.0f;
}
