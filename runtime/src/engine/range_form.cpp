// The range form (a kernel run over a sub-range of its split dimension sees the builtins of its full launch) and
// the launch's geometry in work units: the split dimension, units of work-groups along it, and the CPU's finer
// work-groups for kernels that cannot observe theirs (the group-observation scan, workgroup_independent).
#include <cctype>
#include <string>
#include <vector>

#include "dop/bounds.hpp"  // kArgInfoOption
#include "engine/engine.hpp"

namespace dop {

std::string range_form_prelude() {
  // Helpers capture the real builtins before the macros below shadow them. Function-like macros are not expanded
  // recursively, and only where a name is followed by '(' — so kernels, helper functions and the malleable form
  // all see the builtins of the original full launch. Only the split dimension (DOP_SPLIT) is launched in
  // pieces; its full global size is either the global offset of an extra launch dimension (DOP_SIZE_DIM, for
  // kernels of fewer than 3 dimensions: then one build serves every problem size) or a constant (DOP_GS_SPLIT).
  return R"CL(/* dop range form: builtins as in the full launch */
#ifndef DOP_RANGE_FORM
#define DOP_RANGE_FORM 1
static inline size_t dop_real_group_id(uint d) { return get_group_id(d); }
static inline size_t dop_real_global_offset(uint d) { return get_global_offset(d); }
static inline size_t dop_real_global_size(uint d) { return get_global_size(d); }
static inline size_t dop_real_global_id(uint d) { return get_global_id(d); }
#ifdef DOP_SIZE_DIM
#define DOP_FULL_SPLIT_SIZE dop_real_global_offset(DOP_SIZE_DIM)
#else
#define DOP_FULL_SPLIT_SIZE ((size_t)(DOP_GS_SPLIT))
#endif
#define get_work_dim() ((uint)(DOP_WORK_DIM))
#define get_global_size(d) ((uint)(d) == (DOP_SPLIT) ? DOP_FULL_SPLIT_SIZE : (uint)(d) < (DOP_WORK_DIM) ? dop_real_global_size(d) : (size_t)1)
#define get_global_offset(d) ((size_t)((d) == 0 ? (DOP_GO0) : (d) == 1 ? (DOP_GO1) : (d) == 2 ? (DOP_GO2) : 0))
#define DOP_RANGE_GLOBAL_ID(d) ((uint)(d) < (DOP_WORK_DIM) ? dop_real_global_id(d) : (size_t)0)
#define get_global_id(d) DOP_RANGE_GLOBAL_ID(d)
#define get_num_groups(d) (get_global_size(d) / get_local_size(d))
#define get_group_id(d) ((uint)(d) < (DOP_WORK_DIM) ? dop_real_group_id(d) + (dop_real_global_offset(d) - get_global_offset(d)) / get_local_size(d) : (size_t)0)
#endif
#line 1
)CL";
}

std::string range_form_options(const std::vector<size_t>& global, size_t split_dim, const std::vector<size_t>& offset,
                               bool constant_size) {
  const size_t dims = global.size();
  std::string o = " -DDOP_WORK_DIM=" + std::to_string(dims) + " -DDOP_SPLIT=" + std::to_string(split_dim);
  if (dims < 3 && !constant_size)
    o += " -DDOP_SIZE_DIM=" + std::to_string(dims);
  else
    o += " -DDOP_GS_SPLIT=" + std::to_string(global.at(split_dim)) + "UL";
  for (size_t d = 0; d < 3; ++d)
    o += " -DDOP_GO" + std::to_string(d) + "=" + std::to_string(d < offset.size() ? offset[d] : 0) + "UL";
  return o;
}

void range_form_geometry(const std::vector<size_t>& full_global, size_t split_dim, std::vector<size_t>& global,
                         std::vector<size_t>& local, std::vector<size_t>& offset) {
  if (full_global.size() >= 3) return;
  global.push_back(1);
  local.push_back(1);
  offset.push_back(full_global.at(split_dim));
}

namespace engine {

// True when nothing in the source can observe how the NDRange is cut into work-groups: no barriers or fences, no
// local memory, no work-group or sub-group functions, no local ids or sizes, no group ids or counts, no includes.
// A conservative scan of every identifier, comments and strings included.
bool workgroup_independent(const std::string& src) {
  if (src.find("#include") != std::string::npos) return false;
  static const char* const kObserve[] = {"barrier",
                                         "mem_fence",
                                         "read_mem_fence",
                                         "write_mem_fence",
                                         "local",
                                         "__local",
                                         "get_local_id",
                                         "get_local_size",
                                         "get_group_id",
                                         "get_num_groups",
                                         "get_enqueued_local_size",
                                         "get_local_linear_id",
                                         "wait_group_events"};
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t i = 0; i < src.size();) {
    if (!ident(src[i]) || (i > 0 && ident(src[i - 1]))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < src.size() && ident(src[j])) ++j;
    const std::string w = src.substr(i, j - i);
    for (const char* k : kObserve)
      if (w == k) return false;
    if (w.find("work_group") != std::string::npos || w.find("sub_group") != std::string::npos) return false;
    i = j;
  }
  return true;
}

}  // namespace engine

std::vector<size_t> open_local_size(const std::vector<size_t>& global) {
  std::vector<size_t> local(global.size(), 1);
  for (size_t l = 64; !global.empty() && l > 1; --l)
    if (global[0] % l == 0) {
      local[0] = l;
      break;
    }
  return local;
}

void Executor::Impl::geometry() {
  groups_per_unit = 1;
  fine = 1;
  local = spec.local;
  if (local.empty()) {  // the kernel does not depend on its work-group size: choose one that divides global
    local = open_local_size(spec.global);
    local_note = "local size chosen by dop";
  }
  split_dim = spec.global.size() - 1;
  kernel_options = spec.build_options + range_form_options(spec.global, split_dim) + kArgInfoOption;  // once
  units = spec.global[split_dim] / local[split_dim];
  for (size_t d = 0; d < spec.global.size(); ++d)
    if (d != split_dim) groups_per_unit *= spec.global[d] / local[d];
  // Few work-groups (a matrix-vector kernel of 4096 rows in groups of 256 has 16) leave the work list too
  // coarse to balance two devices, and a CPU share of them leaves cores idle. A kernel that cannot observe its
  // work-groups runs on the CPU in finer ones: `fine` CPU groups per spec group along the split dimension.
  cpu_local = local;
  const size_t target_groups = 16 * size_t(sel.cpu ? sel.cpu->compute_units : 1);
  if (!spec.local.empty() && engine::workgroup_independent(source)) {
    while (units * groups_per_unit * fine < target_groups && local[split_dim] % (2 * fine) == 0 &&
           local[split_dim] / (2 * fine) >= 8)
      fine *= 2;
  }
  cpu_local[split_dim] = local[split_dim] / fine;
  units *= fine;
  if (fine > 1)
    local_note = "CPU work-groups of " + std::to_string(cpu_local[split_dim]) + " along dimension " +
                 std::to_string(split_dim) + " (the kernel does not observe its work-groups)";
}

}  // namespace dop
