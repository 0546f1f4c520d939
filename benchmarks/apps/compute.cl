/* All-pairs gravitational accelerations (benchmarks/apps/compute.c): one long compute-bound launch. pos.w is the
 * mass; SOFTENING2 comes from the build options. */
#ifndef SOFTENING2
#error "build with -DSOFTENING2=..."
#endif

__kernel void accelerations(__global const float4* pos, __global float4* acc, int n) {
  const int i = get_global_id(0);
  if (i >= n) return;
  const float4 p = pos[i];
  float ax = 0.0f, ay = 0.0f, az = 0.0f;
  for (int j = 0; j < n; ++j) {
    const float4 q = pos[j];
    const float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
    const float d2 = dx * dx + dy * dy + dz * dz + SOFTENING2;
    const float inv = rsqrt(d2);
    const float s = q.w * inv * inv * inv;
    ax += s * dx;
    ay += s * dy;
    az += s * dz;
  }
  acc[i] = (float4)(ax, ay, az, 0.0f);
}
