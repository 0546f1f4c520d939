// Helper functions that use work-item ids, called from two kernels: one declared before it is defined, one without
// parameters, one reached only through another, one called inside a macro argument that expands it twice, and the
// builtins reached through the user's own macros. The second kernel keeps calling the original helpers.
#define GX ((int)get_global_id(0))
#define GY ((int)get_global_id(1))
#define TWICE(x) ((x) + (x))

float load_at(__global const float* a, int w);

static float scale(float v) { return 2.0f * v + 1.0f; }

static int tile_pos(void) { return (int)(get_local_id(1) * get_local_size(0) + get_local_id(0)); }

static int via(int k) { return tile_pos() * k; }

float load_at(__global const float* a, int w) { return scale(a[GY * w + GX]) + (float)via(3); }

__kernel void helpers(__global const float* a, __global float* b, int w, int h) {
  if (GX >= w || GY >= h) return;
  b[GY * w + GX] = load_at(a, w) + 0.5f * (float)TWICE(tile_pos()) + (float)max(tile_pos(), 7);
}

__kernel void helpers_other(__global const float* a, __global float* b, int w) {
  b[get_global_id(0)] = load_at(a, w);
}
