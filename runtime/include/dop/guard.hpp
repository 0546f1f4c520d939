// Guard pages behind dop's own host memory for arguments (dop/spec.hpp: ArgData), and the launch they name: a kernel
// that runs past the end of a buffer the footprint check (dop/bounds.hpp) could not bound stops at once with a
// message naming the launch and the argument, instead of corrupting the heap. No OpenCL (library dop_spec).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dop {

struct ArgData;
struct Spec;

/// Whether host allocations have guard pages: not under AddressSanitizer (its redzones do that job, and its own
/// SIGSEGV handler reports), nor with DOP_GUARD_PAGES=0 in the environment.
bool guard_pages_enabled();

/// Host memory for argument data: `bytes` rounded up to kGuardAlign, placed so that it ends where an inaccessible
/// region of 1 MiB (address space only) begins, its start aligned to kGuardAlign and to the largest power of two (at
/// most a page) that divides its rounded size: whole pages for sizes of whole pages, so that OpenCL implementations use
/// it in place (CL_MEM_USE_HOST_PTR) as they would page-aligned memory. kGuardAlign (128 bytes) is OpenCL's largest
/// type (long16) and PoCL's CL_DEVICE_MEM_BASE_ADDR_ALIGN: a zero-copy CPU device then reads and writes these bytes
/// themselves, so an overrun meets the guard region, not someone else's memory (work-items run in any order, so
/// the first access past the end may lie well past it: y[idx[i]]; beyond 1 MiB it may still meet other memory). Without
/// guard pages: operator new, page-aligned. Allocations of 8 MiB and more are advised into transparent huge pages,
/// each mapping at its own offset within a huge page, so that equal buffers do not share cache sets and DRAM banks
/// (DOP_HUGE_PAGES=0: 4 KiB pages; =aligned: huge pages at equal offsets, for experiments). Throws std::bad_alloc.
inline constexpr std::size_t kGuardAlign = 128;
void* guarded_allocate(std::size_t bytes);
void guarded_deallocate(void* p, std::size_t bytes) noexcept;

/// Host memory that a device's own buffer lives in (CL_MEM_USE_HOST_PTR), where the device's memory is host memory
/// (a CPU device, a GPU with CL_DEVICE_HOST_UNIFIED_MEMORY): laid out as guarded_allocate's, and ending at a guard
/// region also under AddressSanitizer (only kernels touch it, and the implementation's code is not instrumented), so
/// that a kernel running past the buffer faults instead of writing into the implementation's memory. Without guard
/// pages (DOP_GUARD_PAGES=0): page-aligned operator new. Throws std::bad_alloc.
class GuardedBlock {
 public:
  explicit GuardedBlock(std::size_t bytes);
  ~GuardedBlock();
  GuardedBlock(const GuardedBlock&) = delete;
  GuardedBlock& operator=(const GuardedBlock&) = delete;
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  bool mapped_ = false;
};

/// While alive, a fault in the guard region behind one of `args`' buffers (or in the unused bytes before it: none)
/// writes "dop: <what>: kernel '<k>' of <spec> accessed memory past the end of argument '<a>' ..." to stderr (and to
/// the descriptor of set_guard_report_fd) and the process dies of the signal (SIGSEGV or SIGBUS), never continuing
/// over corrupted memory. A fault elsewhere while a launch is guarded writes "dop: memory fault at 0x... during a
/// launch, in none of its buffers' guard regions" first; faults go on to the handler installed before dop's (or
/// the default action).
/// Thread-safe; up to 256 buffers of the launches alive at once are named (an overrun of more is still stopped, by
/// the signal's default action or the earlier handler, without the names).
class LaunchGuard {
 public:
  LaunchGuard(const Spec& spec, const std::vector<ArgData>& args, const std::string& what);
  ~LaunchGuard();
  LaunchGuard(const LaunchGuard&) = delete;
  LaunchGuard& operator=(const LaunchGuard&) = delete;
  /// Also watches `block`, a device's own buffer of argument i (`where` names it in the message: "the GPU's copy").
  void watch(size_t i, const GuardedBlock& block, const std::string& where);

 private:
  void watch(size_t i, const void* data, std::size_t bytes, const std::string& where);
  std::string kernel_, file_, what_;
  std::vector<std::string> names_;
  std::vector<std::size_t> sizes_;
  std::vector<int> slots_;
};

/// Also writes the guard message to `fd` (-1: only stderr): a sweep worker reports it to its supervisor.
void set_guard_report_fd(int fd);

}  // namespace dop
