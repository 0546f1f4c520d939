// Launch-time checks (docs/spec.md, "Errors"): a spec's buffers against what its launch touches (the kernel's memory
// footprint), its sizes against a device's limits, and its argument kinds against the kernel's. Each refuses before
// anything is enqueued, naming the spec's file and field. Runtime tier (OpenCL).
#pragma once

#include <string>
#include <vector>

#include "dop/cl.hpp"
#include "dop/footprint.hpp"
#include "dop/spec.hpp"

namespace dop {

/// A launch that cannot run as its spec says: a buffer smaller than the launch touches, a size beyond a device's
/// limits, an argument of another kind than the kernel's. what() names the spec's file, the field and the numbers.
class LaunchError : public SpecError {
 public:
  using SpecError::SpecError;
};

/// The buffers and __local arguments of a launch (global size and `local`, scalars from `args`) against the kernel's
/// footprint: throws LaunchError naming the argument, the bytes the launch touches and the bytes it has, when a
/// bounded argument is too small for the first work-group (only work-item 0 along a dimension that has one
/// work-group; a __local argument's bytes are per work-group). The footprint over-approximates (docs/features.md:
/// conditions and the interval arithmetic only widen it), so a buffer is checked only against the accesses the
/// first work-group certainly makes up to their highest byte (footprint_extents' `certain`: not `may`, guards such
/// as `if (i < n)` taken as bounds); a buffer slightly too small, an overrun behind a condition, or one the footprint
/// does not bound, is not refused here: dop's own host memory has a guard page behind it (dop/guard.hpp). A __local
/// argument has no such guard, so it is checked against every access; one the footprint does not bound (or any,
/// without a footprint or a work-group size) is warned about on stderr, once per process for each spec, kernel and
/// argument.
void check_footprint_bounds(const Spec& spec, const std::vector<ArgData>& args, const Footprint& fp,
                            const std::vector<size_t>& local);

/// The spec's sizes against one device's limits (`local`: the work-group size the launch uses, empty when the
/// implementation chooses): global sizes (at most 2^32-1 per dimension, the product within size_t), the work-group
/// size (CL_DEVICE_MAX_WORK_ITEM_SIZES, CL_DEVICE_MAX_WORK_GROUP_SIZE), the __local arguments together
/// (CL_DEVICE_LOCAL_MEM_SIZE), each buffer (CL_DEVICE_MAX_MEM_ALLOC_SIZE) and all of them (CL_DEVICE_GLOBAL_MEM_SIZE).
/// Throws LaunchError naming the device and the field.
void check_device_limits(const Spec& spec, const std::vector<size_t>& local, cl_device_id device);

/// Added to the build options of every program dop builds from a spec, so that the implementation reports the
/// kernel's parameters to check_kernel_args (PoCL reports nothing without it).
inline constexpr const char* kArgInfoOption = " -cl-kernel-arg-info";

/// The spec's arguments against the built kernel's parameters (check_signature, dop/spec.hpp): their number, kinds
/// (buffer, scalar, local) and scalar types, where the implementation reports them (CL_KERNEL_ARG_ADDRESS_QUALIFIER,
/// CL_KERNEL_ARG_TYPE_NAME; nothing is checked where it does not). Parameters past the spec's arguments (a malleable
/// form's own) are the caller's to count. Throws LaunchError naming the argument.
void check_kernel_args(const Spec& spec, cl_kernel kernel);

/// Sets argument i of `kernel` as `spec` says (`value`: a cl_mem, a scalar's bytes, nullptr for a local), turning an
/// OpenCL refusal into a LaunchError that names the spec's file and argument (a scalar given for a buffer is
/// CL_INVALID_ARG_SIZE where the implementation does not report the kernel's argument kinds).
void set_spec_arg(const Spec& spec, size_t i, const cl::Kernel& kernel, size_t size, const void* value);

}  // namespace dop
