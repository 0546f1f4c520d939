// Writes every work-item builtin, some through helper functions, 23 ints per work-item, so that the malleable form
// can be compared with the original in 1, 2 and 3 dimensions. Items whose linear id % 5 == 3 return early, and every
// other item returns from inside a nested loop: both must end only the current (virtual) item.
static size_t lin(void) {
  return ((get_global_id(2) - get_global_offset(2)) * get_global_size(1) + (get_global_id(1) - get_global_offset(1))) *
             get_global_size(0) +
         (get_global_id(0) - get_global_offset(0));
}

static void put_local(__global int* o) {
  for (uint d = 0; d < 3; ++d) o[3 + d] = (int)get_local_id(d);
}

static void put_ids(__global int* o) {
  for (uint d = 0; d < 3; ++d) o[d] = (int)get_global_id(d);
  put_local(o);
}

__kernel void builtins(__global int* out) {
  __global int* o = out + lin() * 23;
  if (lin() % 5 == 3) return;
  put_ids(o);
  for (uint d = 0; d < 3; ++d) {
    o[6 + d] = (int)get_group_id(d);
    o[9 + d] = (int)get_num_groups(d);
    o[12 + d] = (int)get_global_size(d);
    o[15 + d] = (int)get_local_size(d);
  }
  o[18] = (int)get_global_offset(0);
  o[19] = (int)(get_local_id(0) + get_local_size(0) * get_local_id(1));
  o[20] = (int)get_global_id(3);
  o[21] = (int)get_work_dim();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      if (i * 4 + j == (int)(lin() % 7)) {
        o[22] = 100 + i * 4 + j;
        return;
      }
  o[22] = -1;
}
