// dop OpenCL host layer: discovery with roles, RAII handles, device fission, profiling and errors that name
// what went wrong. Runtime tier: needs only the OpenCL headers and an ICD loader.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dop::cl {

// ---------------------------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------------------------

/// Symbolic name of an OpenCL error code ("CL_INVALID_WORK_GROUP_SIZE" for -54); "CL_UNKNOWN_ERROR(<n>)" if unknown.
std::string error_name(cl_int code);

/// An OpenCL call failed. what() reads "<call>: <CL_SYMBOLIC_NAME> (<code>)[: <context>]".
class Error : public std::runtime_error {
 public:
  Error(cl_int code, std::string call, std::string context = {});
  cl_int code() const noexcept { return code_; }
  const std::string& call() const noexcept { return call_; }
  std::string name() const { return error_name(code_); }

 private:
  cl_int code_;
  std::string call_;
};

/// A program failed to build. Carries the source file name (or "<source>") and the full build log per device.
class BuildError : public Error {
 public:
  BuildError(cl_int code, std::string file, std::string log);
  const std::string& file() const noexcept { return file_; }
  const std::string& log() const noexcept { return log_; }

 private:
  std::string file_;
  std::string log_;
};

/// Throws dop::cl::Error if code != CL_SUCCESS.
void check(cl_int code, const char* call, const std::string& context = {});

// ---------------------------------------------------------------------------------------------------------------
// RAII handles: move-only, retain on copy via share(), release on destruction.
// ---------------------------------------------------------------------------------------------------------------

template <typename T, cl_int (*Retain)(T), cl_int (*Release)(T)>
class Handle {
 public:
  Handle() = default;
  /// Takes ownership of an already-retained handle.
  explicit Handle(T h) noexcept : h_(h) {}
  Handle(const Handle& o) : h_(o.h_) {
    if (h_) Retain(h_);
  }
  Handle& operator=(const Handle& o) {
    if (this != &o) {
      reset();
      h_ = o.h_;
      if (h_) Retain(h_);
    }
    return *this;
  }
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  ~Handle() { reset(); }
  void reset() noexcept {
    if (h_) Release(h_);
    h_ = nullptr;
  }
  T get() const noexcept { return h_; }
  explicit operator bool() const noexcept { return h_ != nullptr; }

 private:
  T h_ = nullptr;
};

/// Finishes a queue before releasing it: nothing queued is lost, and no implementation thread is still completing
/// its commands when the objects they use go away (PoCL 3.1's pthread device crashed without this).
inline cl_int finish_and_release_queue(cl_command_queue q) {
  clFinish(q);
  return clReleaseCommandQueue(q);
}

using Context = Handle<cl_context, clRetainContext, clReleaseContext>;
using Queue = Handle<cl_command_queue, clRetainCommandQueue, finish_and_release_queue>;
using Buffer = Handle<cl_mem, clRetainMemObject, clReleaseMemObject>;
using Program = Handle<cl_program, clRetainProgram, clReleaseProgram>;
using Kernel = Handle<cl_kernel, clRetainKernel, clReleaseKernel>;
using Event = Handle<cl_event, clRetainEvent, clReleaseEvent>;
/// A device handle: releasing a root device is a no-op in OpenCL, releasing a sub-device frees it.
using DeviceHandle = Handle<cl_device_id, clRetainDevice, clReleaseDevice>;

// ---------------------------------------------------------------------------------------------------------------
// Discovery
// ---------------------------------------------------------------------------------------------------------------

enum class Role { cpu, gpu, other };
const char* role_name(Role r);

struct DeviceInfo {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  std::string id;              ///< selection id: "<platform-key>:<index within platform>", e.g. "pocl:0", "nvidia:0"
  std::string platform_key;    ///< short platform key: pocl, nvidia, amd, intel, ... (lower-case, from name/vendor)
  std::string platform_name;   ///< CL_PLATFORM_NAME
  std::string name;            ///< CL_DEVICE_NAME
  std::string vendor;          ///< CL_DEVICE_VENDOR
  std::string driver_version;  ///< CL_DRIVER_VERSION
  std::string version;         ///< CL_DEVICE_VERSION, e.g. "OpenCL 3.0 CUDA"
  cl_device_type type = 0;
  Role role = Role::other;
  cl_uint compute_units = 0;
  cl_ulong global_mem_bytes = 0;
  cl_ulong local_mem_bytes = 0;
  cl_ulong max_alloc_bytes = 0;
  size_t max_work_group_size = 0;
  bool host_unified_memory = false;  ///< shares memory with the host (integrated GPU or CPU)
  bool fission_by_counts = false;    ///< supports CL_DEVICE_PARTITION_BY_COUNTS
  cl_uint max_sub_devices = 0;
  /// CL_DEVICE_SVM_CAPABILITIES (coarse/fine-grain buffer, fine-grain system, atomics); 0 before OpenCL 2.0.
  cl_device_svm_capabilities svm = 0;

  /// Stable identity across runs and machines of the same make: "platform|device|vendor|driver".
  std::string identity() const;
};

/// All devices of all platforms, in platform then device order. Never throws for a machine without OpenCL
/// platforms: returns an empty list.
std::vector<DeviceInfo> discover();

/// The pair of devices dop uses. gpu is empty for a CPU-only machine.
struct Selection {
  std::optional<DeviceInfo> cpu;
  std::optional<DeviceInfo> gpu;
};

/// Picks the CPU and GPU devices.
/// cpu_spec / gpu_spec: a device id ("pocl:0"), a platform key ("nvidia" = its first device), "none", or empty.
/// Empty specs fall back to the environment (DOP_CPU, DOP_GPU), then to the default: the first CPU-type device
/// for the cpu role; the first GPU-type device for the gpu role, or else a second CPU-type device (so that
/// POCL_DEVICES="pthread pthread" exercises co-execution), or none.
/// Throws std::invalid_argument naming the spec and listing the available ids when a spec matches nothing.
Selection select_devices(const std::vector<DeviceInfo>& devices, const std::string& cpu_spec = {},
                         const std::string& gpu_spec = {});

// ---------------------------------------------------------------------------------------------------------------
// Contexts, queues, programs, buffers
// ---------------------------------------------------------------------------------------------------------------

Context create_context(const std::vector<cl_device_id>& devices);
/// In-order queue with profiling enabled.
Queue create_queue(const Context& ctx, cl_device_id device, bool profiling = true);

/// Builds a program for the given devices. On failure throws BuildError with every device's build log and
/// `file` (used only in messages: pass the kernel's file name).
Program build_program(const Context& ctx, const std::vector<cl_device_id>& devices, const std::string& source,
                      const std::string& options = {}, const std::string& file = "<source>");
Kernel create_kernel(const Program& program, const std::string& name);
/// Names of the kernels in a built program.
std::vector<std::string> kernel_names(const Program& program);

Buffer create_buffer(const Context& ctx, cl_mem_flags flags, size_t bytes, void* host_ptr = nullptr);

/// Typed clSetKernelArg with an error that names the argument index and kernel.
void set_arg(const Kernel& k, cl_uint index, size_t size, const void* value);
template <typename T>
void set_arg(const Kernel& k, cl_uint index, const T& value) {
  set_arg(k, index, sizeof(T), &value);
}
/// clSetKernelArgSVMPointer with an error that names the argument index and kernel.
void set_arg_svm(const Kernel& k, cl_uint index, const void* ptr);
std::string kernel_name(const Kernel& k);

/// Enqueues an NDRange; `local` may be empty (implementation chooses). Returns the event.
Event enqueue_ndrange(const Queue& q, const Kernel& k, const std::vector<size_t>& global,
                      const std::vector<size_t>& local = {}, const std::vector<size_t>& offset = {},
                      const std::vector<cl_event>& wait = {});

void finish(const Queue& q);

// ---------------------------------------------------------------------------------------------------------------
// Profiling
// ---------------------------------------------------------------------------------------------------------------

struct EventTimes {
  cl_ulong queued = 0, submit = 0, start = 0, end = 0;  ///< device timestamps in ns
  double run_ms() const { return double(end - start) * 1e-6; }
  double total_ms() const { return double(end - queued) * 1e-6; }
};
/// Waits for the event and reads its profiling info (the queue must have profiling enabled).
EventTimes event_times(const Event& e);

// ---------------------------------------------------------------------------------------------------------------
// Device fission
// ---------------------------------------------------------------------------------------------------------------

/// "coarse+fine+atomics"-style summary of an SVM capability mask; "none" for 0.
std::string svm_name(cl_device_svm_capabilities caps);

/// A sub-device with exactly `cores` compute units (CL_DEVICE_PARTITION_BY_COUNTS), from a process-wide pool (one
/// per parent and core count, created on first use, never destroyed). Throws std::invalid_argument
/// when cores is 0 or exceeds the device's compute units, and dop::cl::Error (naming the device) when the device
/// cannot be partitioned by counts.
DeviceHandle create_sub_device(const DeviceInfo& parent, cl_uint cores);

// ---------------------------------------------------------------------------------------------------------------
// Raw info queries
// ---------------------------------------------------------------------------------------------------------------
std::string device_string(cl_device_id d, cl_device_info what);
std::string platform_string(cl_platform_id p, cl_platform_info what);
template <typename T>
T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  check(clGetDeviceInfo(d, what, sizeof(T), &v, nullptr), "clGetDeviceInfo");
  return v;
}

}  // namespace dop::cl
