// The interposer's inside (internal to libdop_intercept.so): the re-entrancy guard, the real entry points, the log,
// the tables of what the application created (tables.cpp), and dop's side: devices, configuration and executors
// (launch.cpp). Residency of the application's buffers is in residency.hpp.
#pragma once

#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_2_0_APIS
#include <CL/cl.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "dop/cl.hpp"
#include "dop/kernel_forms.hpp"
#include "dop/runtime.hpp"
#include "dop/spec.hpp"

#define DOP_EXPORT extern "C" __attribute__((visibility("default")))

namespace dop::intercept {

// ---------------------------------------------------------------------------------------------------------------
// Re-entrancy guard and the real entry points
// ---------------------------------------------------------------------------------------------------------------

extern thread_local int t_inside;  // > 0 while this thread runs dop code: its OpenCL calls are forwarded untouched
struct Inside {
  Inside() { ++t_inside; }
  ~Inside() { --t_inside; }
  Inside(const Inside&) = delete;
  Inside& operator=(const Inside&) = delete;
};

template <typename F>
F real_fn(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}
// REAL(name): a function-local static pointer to the next definition of `name` (the ICD loader's).
#define REAL(name) static const auto real_##name = ::dop::intercept::real_fn<decltype(&::name)>(#name)

bool log_enabled();
void log_line(const std::string& s);

/// dop's devices and configuration (DOP_CONFIG, DOP_MODEL, ...), read once: at the application's first successful
/// clBuildProgram, so that its first launch does not pay for it (launch.cpp); and the forms of the program's kernels
/// that a bundle names or the forms cache holds (`source`: null for a program not made from source), at each such
/// build (forms.hpp), with what they say of the model's size expressions (ProgramInfo::model_args). Never throws.
void prepare_dop(cl_program program, const std::string* source, const std::string& options);

// ---------------------------------------------------------------------------------------------------------------
// Tables (tables.cpp)
// ---------------------------------------------------------------------------------------------------------------

// Under DOP_CONFIG=auto, what a kernel's forms say of the model's size expressions, found when its program is built
// (prepare_dop, for the kernels whose forms it resolves), so that the kernel's first launch does not look them up.
struct ModelArgs {
  std::string kernel;
  size_t args = 0;     // the arguments the forms name
  uint64_t names = 0;  // bit i: argument i's name is in one of the model's size expressions (decide.cpp)
};

struct ProgramInfo {
  std::shared_ptr<const std::string> source;  // null: not created from source (binary, IL, built-in, linked)
  std::string options;
  bool built = false;                 // by clBuildProgram (clCompileProgram/clLinkProgram are not followed)
  size_t source_hash = 0;             // of `source`, once: launches key their executors by it
  std::vector<ModelArgs> model_args;  // of its latest build
};

struct ArgInfo {
  enum class Kind { unset, mem, scalar, local, unsupported } kind = Kind::unset;
  cl_mem mem = nullptr;
  std::vector<unsigned char> bytes;  // scalar value
  size_t size = 0;
  std::string why;  // unsupported: what it is
};

struct KernelInfo {
  cl_program program = nullptr;
  std::string name;
  std::vector<ArgInfo> args;
  // From clGetKernelArgInfo when the implementation answers it (empty otherwise).
  std::vector<cl_kernel_arg_address_qualifier> quals;
  std::vector<std::string> type_names;
  std::string unsupported;  // e.g. clSetKernelExecInfo was used
  // Bit i: scalar argument i is read by the model's size expressions, so its value's power of two is part of the
  // launch class (decide.cpp); set at the kernel's first decision under DOP_CONFIG=auto.
  uint64_t class_scalars = 0;
  bool class_scalars_known = false;
  // The program's ModelArgs::names of the kernel, where its build found them (0 where the forms name another number
  // of arguments): its first decision takes those of its scalars, without its forms.
  uint64_t model_args = 0;
  bool model_args_known = false;
};

struct BufferState;  // residency.hpp

struct BufferInfo {
  size_t size = 0;
  cl_mem_flags flags = 0;
  bool aliased = false;  // a sub-buffer or an image over it exists: dop's results are never left stale in it
  std::shared_ptr<BufferState> state;  // dop's host copy and what is valid where; made at the first dop launch
  // What the application wrote from host memory since a kernel last used the buffer (note_host_write), and since when.
  size_t fed_bytes = 0;
  std::chrono::steady_clock::time_point fed_since{};
};

struct Tables {
  // Held exclusively (lock_tables) by everything but clSetKernelArg, which holds it shared for what its thread's memo
  // lacks (tables.cpp, SetArgMemo) and otherwise not at all: OpenCL does not allow one kernel's arguments to be set
  // from two threads at once, so it touches only its kernel's entry, and application threads that set their own
  // kernels' arguments do not wait for each other.
  std::shared_mutex m;
  std::unordered_map<cl_program, ProgramInfo> programs;
  std::unordered_map<cl_kernel, KernelInfo> kernels;
  std::unordered_map<cl_mem, BufferInfo> buffers;
  std::unordered_map<cl_mem, std::string> other_mems;  // images, pipes, sub-buffers: what they are
  std::unordered_set<cl_sampler> samplers;
};
Tables& tables();  // never destroyed: the application may call OpenCL from its own static destructors
/// The tables' lock held exclusively, for everything that may change them: the tables' generation changes with it,
/// so that what a thread's clSetKernelArg remembers of them (tables.cpp, SetArgMemo) is looked up again.
std::unique_lock<std::shared_mutex> lock_tables(Tables& t);

// The buffer arguments of a tracked kernel as they are set now: (buffer, its flags) each; `known` is false for a
// kernel the tables do not know, or one with an argument that aliases buffers dop does not follow (an SVM pointer,
// an image, a sub-buffer): its buffers cannot all be told.
struct KernelBuffers {
  bool known = false;
  std::vector<std::pair<cl_mem, cl_mem_flags>> mems;
  // The application's writes from host memory into these buffers since a kernel last used them (note_host_write):
  // their bytes, the buffers' bytes, and the earliest write's time. All 0 while no buffer of the process has such
  // writes (kernel_buffers then looks at nothing more).
  size_t fed_bytes = 0, bytes = 0;
  std::chrono::steady_clock::time_point fed_since{};
};
KernelBuffers kernel_buffers(cl_kernel k);
// The same for a kernel found in the tables (t.m held), into `kb` (its vector's capacity kept).
void kernel_buffers(const Tables& t, const KernelInfo& k, KernelBuffers& kb);

/// Whether any buffer holds writes from the host that no kernel has used yet (note_host_write): while none does, no
/// launch is fed from the host.
bool host_writes_pending();

/// The floor of log2 of `x` (0 for 0).
inline int log2_floor(uint64_t x) { return x ? 63 - __builtin_clzll(x) : 0; }
/// The power of two of a launch's work-items (log2_floor of their product): what a launch class keeps of the NDRange,
/// so that an NDRange that shrinks step by step meets its class again (decide.cpp, class_key). Inline: the launch
/// path's repeat check (native_again) reads it at every launch.
inline int items_class(cl_uint work_dim, const size_t* global) {
  uint64_t items = 1;
  for (cl_uint d = 0; d < work_dim; ++d) items *= global[d];
  return log2_floor(items);
}
/// The power of two of a scalar argument's value, `n` bytes at `bytes` (the floor of its log2, 0 for 0; little-endian,
/// up to 8 bytes): what a launch class keeps of a scalar the model's size expressions read (decide.cpp, class_key).
int scalar_class(const void* bytes, size_t n);

/// A count of the changes to what a known launch class's decision reads (decide.cpp, decide_known_class): a kernel's
/// arguments where the launch class or the buffers dop follows may change (a buffer of another size or flags, another
/// power of two of a scalar the model reads, another kind or size of argument), kernels and buffers made or dropped, a
/// class decided anew, a failure remembered, a kernel's classes forgotten, a queue released. Not host writes
/// (host_writes_pending) nor buffer states (any_buffer_state): a launch repeated from the thread's cache (native_again)
/// checks those itself.
uint64_t decision_epoch();
/// One such change was made (called after making it, with the lock that guards it still held).
void decision_inputs_changed();

/// The application writes `bytes` of the buffer `m` from host memory (clEnqueueWriteBuffer[Rect]): the launches
/// that use it next find their data fed from the host (KernelBuffers::fed_bytes). Untracked buffers are ignored.
void note_host_write(cl_mem m, size_t bytes);
/// A kernel is about to use these buffers: the writes noted for them are spent (and kb.fed_bytes is 0 after, so a
/// second call does nothing). Cheap when there are none.
void clear_host_writes(KernelBuffers& kb);

// The application releases a queue: its handle may come back as another queue's (queue_device's cache, state.cpp).
void forget_queue_devices();

// The application released (or made anew) a kernel: what dop decided for its launches goes with it (decide.cpp).
// Never called with dop's state locked.
void forget_launch_classes(cl_kernel k);

}  // namespace dop::intercept
