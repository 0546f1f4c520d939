// Launch-time checks (dop/bounds.hpp): buffers against the launch's footprint, sizes against a device's limits,
// argument kinds against the kernel's.
#include "dop/bounds.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <mutex>
#include <set>

namespace dop {

namespace {

std::string field(size_t i) { return "args[" + std::to_string(i) + "]"; }
std::string dims(const std::vector<size_t>& v) {
  std::string s = "[";
  for (size_t d = 0; d < v.size(); ++d) s += (d ? "," : "") + std::to_string(v[d]);
  return s + "]";
}

}  // namespace

namespace {

// Once per process for each spec, kernel and argument: a __local argument whose size dop cannot check.
void warn_local_unchecked(const Spec& spec, size_t i, const std::string& why) {
  static std::mutex m;
  static std::set<std::string> warned;
  const ArgSpec& a = spec.args[i];
  {
    const std::lock_guard<std::mutex> lock(m);
    if (!warned.insert(spec.origin() + '\n' + spec.kernel_name + '\n' + std::to_string(i)).second) return;
  }
  std::fprintf(stderr,
               "dop: warning: %s: %s.count: the size of __local argument '%s' (%s bytes) is not checked against what "
               "kernel '%s' indexes: %s; an index past it is not caught\n",
               spec.origin().c_str(), field(i).c_str(), a.name.c_str(), std::to_string(a.bytes()).c_str(),
               spec.kernel_name.c_str(), why.c_str());
}

}  // namespace

void check_footprint_bounds(const Spec& spec, const std::vector<ArgData>& args, const Footprint& fp,
                            const std::vector<size_t>& local) {
  std::vector<size_t> inner(spec.global.size());
  for (size_t d = 0; d < spec.global.size(); ++d) {
    const size_t l = d < local.size() ? local[d] : 1;
    inner[d] = spec.global[d] > l ? l - 1 : 0;
  }
  // A buffer against what the work-items certainly touch: an access behind a condition (`if (o < n)` on a value the
  // footprint does not bound by it) may reach further without ever running there (docs/features.md, "Memory
  // footprint": `may`); an overrun there stops at a guard page. A __local argument has no guard page: against every
  // access.
  // (On every launch: the second evaluation only for a spec with __local arguments.)
  const auto certain = footprint_extents(fp, spec, args, local, inner, /*certain=*/true);
  const bool has_local =
      std::any_of(spec.args.begin(), spec.args.end(), [](const ArgSpec& a) { return a.kind == ArgKind::local; });
  const auto every = has_local ? footprint_extents(fp, spec, args, local, inner) : decltype(certain)();
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const ArgSpec& a = spec.args[i];
    const auto& reach = a.kind == ArgKind::local ? every : certain;
    if (a.kind == ArgKind::local) {
      const auto it = fp.args.find(a.name);
      std::string unchecked;
      if (local.empty())
        unchecked = "the spec leaves the work-group size to the implementation";
      else if (fp.empty())
        unchecked = "the kernel has no memory footprint here (no bundle of it, and no analysis in this build)";
      else if (it == fp.args.end())
        unchecked = "the kernel's memory footprint does not list it (a bundle made before dop checked __local sizes)";
      else if (it->second.whole)
        unchecked = "its accesses are not bounded (" + it->second.why + ")";
      else if (!reach[i])
        unchecked = "its footprint cannot be evaluated for this launch";
      if (!unchecked.empty()) {
        warn_local_unchecked(spec, i, unchecked);
        continue;
      }
    }
    if (a.kind == ArgKind::scalar || !reach[i] || reach[i]->empty()) continue;
    const ByteRange r = *reach[i];
    const int64_t have = int64_t(a.bytes());
    // Only the end: a negative offset is usually guarded (`if (i > 0) ... A[i - 1]`) at the start of the range.
    if (r.hi <= have) continue;
    const bool per_group = a.kind == ArgKind::local;
    const std::string launch =
        "the launch (global " + dims(spec.global) + (local.empty() ? "" : ", local " + dims(local)) + ")";
    throw LaunchError(spec.origin() + ": " + field(i) + ".count: " + (per_group ? "__local argument '" : "buffer '") +
                      a.name + "' is too small: " + launch + " needs " + std::to_string(r.hi) + " bytes of it" +
                      (per_group ? " per work-group" : "") + ", it has " + std::to_string(have) + " (" +
                      std::to_string(a.count) + " " + type_name(a.type) + "; kernel '" + spec.kernel_name +
                      "', by its memory footprint)");
  }
}

void check_device_limits(const Spec& spec, const std::vector<size_t>& local, cl_device_id device) {
  const std::string dev = cl::device_string(device, CL_DEVICE_NAME);
  auto fail = [&](const std::string& fld, const std::string& msg) {
    throw LaunchError(spec.origin() + ": " + fld + ": " + msg + " (device " + dev + ")");
  };
  // Global size: implementations count ids and work-groups per dimension in 32 bits (PoCL asserts beyond).
  unsigned __int128 items = 1;
  for (size_t d = 0; d < spec.global.size(); ++d) {
    if (spec.global[d] > std::numeric_limits<uint32_t>::max())
      fail("global[" + std::to_string(d) + "]",
           std::to_string(spec.global[d]) + " work-items is more than 2^32-1, the most one dimension can have");
    items *= spec.global[d];
  }
  if (items > std::numeric_limits<size_t>::max()) fail("global", "the number of work-items overflows size_t");

  if (!local.empty()) {
    const auto max_dims = cl::device_value<cl_uint>(device, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS);
    std::vector<size_t> max_items(max_dims);
    cl::check(
        clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(size_t) * max_dims, max_items.data(), nullptr),
        "clGetDeviceInfo", "CL_DEVICE_MAX_WORK_ITEM_SIZES");
    size_t group = 1;
    for (size_t d = 0; d < local.size(); ++d) {
      if (d < max_items.size() && local[d] > max_items[d])
        fail("local[" + std::to_string(d) + "]", std::to_string(local[d]) +
                                                     " is more than the device's maximum work-group size in "
                                                     "dimension " +
                                                     std::to_string(d) + ", " + std::to_string(max_items[d]));
      group *= local[d];
    }
    const auto max_group = cl::device_value<size_t>(device, CL_DEVICE_MAX_WORK_GROUP_SIZE);
    if (group > max_group)
      fail("local", "a work-group of " + std::to_string(group) + " work-items is more than the device's maximum, " +
                        std::to_string(max_group));
  }

  const auto local_mem = cl::device_value<cl_ulong>(device, CL_DEVICE_LOCAL_MEM_SIZE);
  const auto max_alloc = cl::device_value<cl_ulong>(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  const auto global_mem = cl::device_value<cl_ulong>(device, CL_DEVICE_GLOBAL_MEM_SIZE);
  unsigned __int128 local_total = 0, global_total = 0;
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const ArgSpec& a = spec.args[i];
    const unsigned __int128 bytes = (unsigned __int128)a.count * type_size(a.type);
    if (a.kind == ArgKind::local) {
      local_total += bytes;
      if (local_total > local_mem)
        fail(field(i) + ".count", "__local argument '" + a.name + "' brings the local memory of a work-group to " +
                                      std::to_string(uint64_t(std::min<unsigned __int128>(local_total, UINT64_MAX))) +
                                      " bytes, more than the device's " + std::to_string(local_mem));
    } else if (a.kind == ArgKind::buffer) {
      global_total += bytes;
      if (bytes > max_alloc)
        fail(field(i) + ".count",
             "buffer '" + a.name + "' of " + std::to_string(uint64_t(std::min<unsigned __int128>(bytes, UINT64_MAX))) +
                 " bytes is more than the device's largest allocation, " + std::to_string(max_alloc));
      if (global_total > global_mem)
        fail(field(i) + ".count", "the buffers up to '" + a.name + "' need " +
                                      std::to_string(uint64_t(std::min<unsigned __int128>(global_total, UINT64_MAX))) +
                                      " bytes, more than the device's memory, " + std::to_string(global_mem));
    }
  }
}

void check_kernel_args(const Spec& spec, cl_kernel kernel) {
  cl_uint n = 0;
  if (clGetKernelInfo(kernel, CL_KERNEL_NUM_ARGS, sizeof n, &n, nullptr) != CL_SUCCESS) return;
  // A malleable form has dop's own parameters after the kernel's (its callers check the count with them).
  n = std::min(n, cl_uint(spec.args.size()));
  std::vector<KernelParam> params(n);
  for (cl_uint i = 0; i < n; ++i) {
    cl_kernel_arg_address_qualifier q = 0;
    if (clGetKernelArgInfo(kernel, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof q, &q, nullptr) != CL_SUCCESS)
      return;  // not reported (a program built without -cl-kernel-arg-info): clSetKernelArg is the check
    params[i].kind = q == CL_KERNEL_ARG_ADDRESS_LOCAL     ? ArgKind::local
                     : q == CL_KERNEL_ARG_ADDRESS_PRIVATE ? ArgKind::scalar
                                                          : ArgKind::buffer;
    char type[64] = {};  // "float", "uint"; longer names (typedefs, structs) are not the spec's types anyway
    size_t len = 0;
    if (params[i].kind == ArgKind::scalar &&
        clGetKernelArgInfo(kernel, i, CL_KERNEL_ARG_TYPE_NAME, sizeof type, type, &len) == CL_SUCCESS &&
        len <= sizeof type)
      params[i].type = type;
  }
  try {
    check_signature(spec, params);
  } catch (const SpecError& e) {
    throw LaunchError(e.what());
  }
}

void set_spec_arg(const Spec& spec, size_t i, const cl::Kernel& kernel, size_t size, const void* value) {
  try {
    cl::set_arg(kernel, cl_uint(i), size, value);
  } catch (const cl::Error& e) {
    const ArgSpec& a = spec.args[i];
    throw LaunchError(spec.origin() + ": " + field(i) + ": kernel '" + spec.kernel_name + "' refused " +
                      kind_name(a.kind) + " '" + a.name + "' (" + type_name(a.type) + ", " + std::to_string(size) +
                      " bytes): " + e.what() + "; does the kernel take a " + kind_name(a.kind) +
                      " of this type there?");
  }
}

}  // namespace dop
