// Structs in global memory (16 bytes each). p[i].x, p[i].m, p[i].y: 4-byte accesses 16 bytes apart -> stride;
// p[i].x += ... is a load and a store -> stride 4 (x load, x store, m load, y store).
// Particle q = p[i] loads a whole 16-byte struct, 16 bytes apart -> continuous 1. q.y is a private variable.
// Float: +=, *, + = 3.
typedef struct { float x, y, z; float m; } Particle;

__kernel void particles(__global Particle* p, float dt) {
  int i = get_global_id(0);
  p[i].x += p[i].m * dt;
  Particle q = p[i];
  p[i].y = q.y + 1.0f;
}
