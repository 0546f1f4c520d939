// Workload specs (docs/spec.md): a kernel, its arguments with deterministic initialisation, the launch shape, which
// buffers are outputs, and an optional CPU reference. Runtime tier, without OpenCL (library dop_spec): a plain run of
// a spec on one device is dop/run_single.hpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "dop/guard.hpp"

namespace dop {

/// A spec (or its data) is malformed. what() names the file and the field ("spec.json: args[2].count: ...").
class SpecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class ElemType { i8, u8, i16, u16, i32, u32, i64, u64, f32, f64 };
/// OpenCL C spelling: char uchar short ushort int uint long ulong float double.
const char* type_name(ElemType t);
/// Parses an OpenCL C type name; throws SpecError for anything else.
ElemType parse_type(const std::string& name);
size_t type_size(ElemType t);
bool is_float(ElemType t);

enum class ArgKind { buffer, scalar, local };
/// "buffer", "scalar", "local": the spec's spelling, for messages.
const char* kind_name(ArgKind k);
enum class Access { read, write, read_write };

/// Deterministic initialisation of a buffer (docs/spec.md gives the exact generator so that other tools can
/// reproduce the data bit for bit).
struct Init {
  enum class Fill { zero, constant, random, index, permutation, random_index } fill = Fill::zero;
  uint64_t seed = 0;
  double value = 0;            ///< constant
  double min = 0, max = 1;     ///< random: uniform in [min, max) for floats, [min, max] for integers
  double start = 0, step = 1;  ///< index: start + i*step
  uint64_t bound = 0;          ///< random_index: uniform integers in [0, bound)
};

struct ArgSpec {
  std::string name;
  ArgKind kind = ArgKind::buffer;
  ElemType type = ElemType::f32;
  size_t count = 0;  ///< elements (buffer, local)
  double value = 0;  ///< scalar value (integers are exact up to 2^53)
  Access access = Access::read_write;
  bool output = false;  ///< compared by --validate and against the reference
  Init init;
  size_t bytes() const { return kind == ArgKind::scalar ? type_size(type) : count * type_size(type); }
};

struct Tolerance {
  double rel = 1e-5;  ///< float outputs: |got - want| <= abs + rel * |want|
  double abs = 1e-6;
};

struct Spec {
  std::string path;         ///< where it was loaded from ("" if built in memory)
  std::string name;         ///< workload name (unique within a set)
  std::string kernel_file;  ///< resolved path of the .cl file (relative paths are relative to the spec's folder)
  std::string kernel_name;
  std::string build_options;
  std::vector<size_t> global;  ///< 1-3 dims
  std::vector<size_t> local;   ///< empty: the implementation chooses
  std::vector<ArgSpec> args;
  std::string reference;  ///< name of a registered CPU reference, "" for none
  Tolerance tolerance;
  /// Free-form key/values carried into datasets (e.g. synthetic parameters); strings only.
  std::map<std::string, std::string> meta;
  /// false: the scalars are raw bytes typed by their size alone (a launch the interposer intercepted), so a kernel's
  /// scalar type is compared by size, not by name (check_signature). Not part of the file format.
  bool typed_scalars = true;

  /// What messages name: the spec's file, or its name when it was built in memory.
  std::string origin() const { return path.empty() || path == "<spec>" ? name : path; }
  size_t work_dim() const { return global.size(); }
  size_t global_items() const;
  size_t work_groups() const;  ///< 0 if local is empty
  /// Bytes of the buffers the kernel reads (access read or read_write: a device must receive them) and of those it
  /// writes (write or read_write: they come back). A buffer whose spec gives no access is read_write (the default),
  /// so it counts in both, as the runtime treats it.
  size_t in_bytes() const;
  size_t out_bytes() const;
};

/// Parses a spec from JSON text. `path` is used in messages and to resolve the kernel file. Checks everything that
/// can be checked without the kernel source: types, sizes, 1-3 dims, local divides global, outputs are buffers.
Spec parse_spec(const std::string& json_text, const std::string& path = "<spec>");
Spec load_spec(const std::string& path);
/// Serialises a spec (kernel_file relative to `relative_to` when given).
std::string spec_to_json(const Spec& s, const std::string& relative_to = {});

/// One parameter of a kernel as the kernel declares it: its kind, and for a scalar its type as OpenCL C spells it
/// ("float", "uint"; "" when unknown, or a name that is not one of the spec's types, such as a typedef).
struct KernelParam {
  ArgKind kind = ArgKind::buffer;
  std::string type;
};

/// The spec's arguments against the kernel's parameters: their number, each one's kind (buffer, scalar, local), and
/// each scalar's type where the kernel's is one of the spec's types (an int given for a float would pass its bits;
/// by size alone when the spec's scalars are untyped bytes, Spec::typed_scalars).
/// Throws SpecError naming the spec's file, the argument and both sides. No OpenCL: the runtime reads the
/// parameters from the built kernel (check_kernel_args, dop/bounds.hpp), the spec fuzzer from its kernels' source.
void check_signature(const Spec& spec, const std::vector<KernelParam>& params);

/// Where the bytes of buffer arguments live, when not in ordinary host memory: an executor's shared virtual memory
/// (Executor::make_args in MemoryMode::svm). Allocations are aligned for every OpenCL type and readable and
/// writable by the host.
class ArgMemory {
 public:
  virtual ~ArgMemory() = default;
  /// Throws (std::bad_alloc or an error naming the allocation) when it cannot allocate.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* p, std::size_t bytes) noexcept = 0;
};

/// Allocator of argument data. Host buffers handed to OpenCL with CL_MEM_USE_HOST_PTR must be aligned for the
/// implementation to use them in place (zero-copy) instead of copying: in host memory they come from
/// guarded_allocate (dop/guard.hpp: aligned for OpenCL, pages for sizes of whole pages, and ending at a guard page
/// that stops an overrun). With an ArgMemory it allocates there instead (aligned as that memory aligns, without a
/// guard page). The memory travels with the data: a copy of an ArgData is allocated where the original is, and
/// assigning to one keeps its memory (only the bytes are copied).
template <typename T>
struct PageAlignedAllocator {
  using value_type = T;
  using propagate_on_container_copy_assignment = std::false_type;
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;
  static constexpr std::size_t kAlign = 4096;
  PageAlignedAllocator() = default;
  explicit PageAlignedAllocator(std::shared_ptr<ArgMemory> m) noexcept : memory(std::move(m)) {}
  template <typename U>
  PageAlignedAllocator(const PageAlignedAllocator<U>& o) noexcept : memory(o.memory) {}
  /// Bytes allocated in an ArgMemory for n elements: whole pages, at least one.
  static std::size_t rounded(std::size_t n) {
    return std::max<std::size_t>((n * sizeof(T) + kAlign - 1) / kAlign * kAlign, kAlign);
  }
  T* allocate(std::size_t n) {
    if (n > SIZE_MAX / sizeof(T) - kAlign) throw std::bad_alloc();
    if (memory) return static_cast<T*>(memory->allocate(rounded(n)));
    return static_cast<T*>(guarded_allocate(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (memory)
      memory->deallocate(p, rounded(n));
    else
      guarded_deallocate(p, n * sizeof(T));
  }
  template <typename U>
  bool operator==(const PageAlignedAllocator<U>& o) const noexcept {
    return memory == o.memory;
  }
  template <typename U>
  bool operator!=(const PageAlignedAllocator<U>& o) const noexcept {
    return memory != o.memory;
  }
  std::shared_ptr<ArgMemory> memory;  ///< nullptr: host memory (operator new)
};

/// Host data of one argument. Buffers keep their bytes page-aligned; as<T>() gives typed access.
struct ArgData {
  const ArgSpec* spec = nullptr;
  std::vector<uint64_t, PageAlignedAllocator<uint64_t>> storage;  ///< raw bytes (size rounded up to 8)
  size_t bytes = 0;
  void* data() { return storage.data(); }
  const void* data() const { return storage.data(); }
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(storage.data());
  }
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(storage.data());
  }
};

/// Allocates and initialises every argument (buffers per their Init, scalars to their value, locals empty). Buffers
/// are allocated in `memory` when given (scalars always in host memory).
std::vector<ArgData> make_args(const Spec& spec, const std::shared_ptr<ArgMemory>& memory = nullptr);
/// A copy of `args` with the buffers allocated in `memory` (host memory when null; scalars always there).
std::vector<ArgData> copy_args(const std::vector<ArgData>& args, const std::shared_ptr<ArgMemory>& memory);
/// Fills one buffer per an Init (exposed for tests and tools that build inputs themselves). Large buffers are
/// filled by several threads; the values do not depend on how many (the generator is counter-based).
void fill_buffer(ArgData& a, const Init& init);
/// Restores the buffers a kernel may write from `initial`, for repeated runs without regenerating the inputs:
/// read_write buffers always, write-only buffers when `outputs` is set. Both must come from make_args of the same
/// spec.
void reset_writable(std::vector<ArgData>& args, const std::vector<ArgData>& initial, bool outputs = true);
/// memcpy for host data: sizes of 1 MiB and more are copied by several threads (one per MiB, at most one per hardware
/// thread), so that a large copy gets the memory bandwidth of several cores rather than one's.
void copy_bytes(void* dst, const void* src, size_t bytes);

/// A CPU reference: given the initialised arguments, overwrite the output buffers with the expected results.
using ReferenceFn = std::function<void(const Spec& spec, std::vector<ArgData>& args)>;
/// Registers a reference under a name (a spec's "reference" field). Thread-safe; re-registering replaces.
void register_reference(const std::string& name, ReferenceFn fn);
/// The reference for a name, or nullptr. A function registered under "<prefix>:" (e.g. "synthetic:") answers every
/// name "<prefix>:<anything>" that has no registration of its own, so that a family registers one function.
const ReferenceFn* find_reference(const std::string& name);

/// Result of comparing the output buffers of two argument sets.
struct Comparison {
  bool ok = true;
  size_t mismatches = 0;   ///< over all outputs
  double max_abs_err = 0;  ///< floats
  std::string first;       ///< first mismatch: "C[17]: got 1.5, want 2"
};
Comparison compare_outputs(const Spec& spec, const std::vector<ArgData>& got, const std::vector<ArgData>& want);

/// The integer scalar arguments' values by name, read from `args` (as made by make_args, maybe changed since): the
/// symbols of size expressions (features, footprints, models).
std::map<std::string, int64_t> integer_scalars(const Spec& spec, const std::vector<ArgData>& args);
/// The same of the spec's own scalar values (as make_args would store them; no buffer allocated): what a sweep's
/// launch of it passes, written to datasets (the `args` column).
std::map<std::string, int64_t> integer_scalars(const Spec& spec);

/// Reads the kernel source named by the spec; throws SpecError naming the spec and the file.
std::string read_kernel_source(const Spec& spec);

/// Runs the registered reference of a spec on freshly initialised args; throws SpecError if it has none.
std::vector<ArgData> run_reference(const Spec& spec);

}  // namespace dop
