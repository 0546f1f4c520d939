// Guard pages behind argument memory and the signal handler that names the launch (dop/guard.hpp).
#include "dop/guard.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "dop/spec.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define DOP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DOP_ASAN 1
#endif
#endif

namespace dop {

namespace {

constexpr std::size_t kPage = 4096;

std::size_t page_size() {
  static const std::size_t p = [] {
    const long s = ::sysconf(_SC_PAGESIZE);
    return s > 0 ? std::size_t(s) : kPage;
  }();
  return p;
}

std::size_t round_up(std::size_t x, std::size_t a) { return (x + a - 1) / a * a; }

// The inaccessible region after each guarded allocation. Work-items run in parallel and in any order, so the first
// access past a buffer's end is not always in the page right after it (y[idx[i]] with large idx): 1 MiB of address
// space (no memory) makes the overruns of a launch meet the region, not whatever is mapped after it.
std::size_t guard_bytes() { return round_up(std::size_t(1) << 20, page_size()); }

// The layout of one guarded allocation: `body` bytes (rounded) ending at the guard region, after `pages` of mapping.
struct Layout {
  std::size_t body, pages;
};
Layout layout(std::size_t bytes) {
  const std::size_t body = round_up(std::max<std::size_t>(bytes, 1), kGuardAlign);
  return {body, round_up(body, page_size())};
}

// Guard regions of the launches alive now, with their preformatted messages (the handler only reads them).
struct Slot {
  std::atomic<bool> used{false};
  std::atomic<std::uintptr_t> lo{0}, hi{0};  // [lo, hi): the guard region
  char msg[512] = {};
  std::size_t len = 0;
};
constexpr int kSlots = 256;
Slot g_slots[kSlots];
std::atomic<int> g_report_fd{-1};
struct sigaction g_old_segv, g_old_bus;

void write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w <= 0) return;
    p += w;
    n -= std::size_t(w);
  }
}

// Keeps errno across the handler's writes: an earlier handler it hands the fault on to may resume the interrupted code.
struct SavedErrno {
  int value = errno;
  ~SavedErrno() { errno = value; }
};

void on_fault(int sig, siginfo_t* info, void* ctx) {
  const SavedErrno saved;
  const auto addr = reinterpret_cast<std::uintptr_t>(info ? info->si_addr : nullptr);
  bool guarded = false;  // some launch is guarded now
  for (auto& s : g_slots) {
    if (!s.used.load(std::memory_order_acquire)) continue;
    guarded = true;
    if (addr < s.lo.load(std::memory_order_acquire) || addr >= s.hi.load(std::memory_order_acquire)) continue;
    const int fd = g_report_fd.load();
    if (fd >= 0) write_all(fd, s.msg, s.len);  // first: the supervisor records it even if stderr blocks
    write_all(STDERR_FILENO, s.msg, s.len);
    ::signal(sig, SIG_DFL);  // returning re-runs the access: the process dies of the signal
    return;
  }
  if (guarded) {  // a fault during a guarded launch, outside every guard region: say so before handing it on
    char msg[] = "dop: memory fault at 0x0000000000000000 during a launch, in none of its buffers' guard regions\n";
    const std::size_t last_digit = sizeof "dop: memory fault at 0x" - 1 + 15;
    for (std::size_t d = 0; d < 16; ++d) msg[last_digit - d] = "0123456789abcdef"[(addr >> (4 * d)) & 15];
    const int fd = g_report_fd.load();
    if (fd >= 0) write_all(fd, msg, sizeof msg - 1);
    write_all(STDERR_FILENO, msg, sizeof msg - 1);
  }
  const struct sigaction& old = sig == SIGBUS ? g_old_bus : g_old_segv;
  if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction) return old.sa_sigaction(sig, info, ctx);
  if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)
    return old.sa_handler(sig);
  ::signal(sig, SIG_DFL);
}

void install_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_old_segv);
    sigaction(SIGBUS, &sa, &g_old_bus);
  });
}

}  // namespace

namespace {

bool guard_pages_wanted() {
  static const bool on = [] {
    const char* e = std::getenv("DOP_GUARD_PAGES");
    return !(e && std::strcmp(e, "0") == 0);
  }();
  return on;
}

// Large buffers (8 MiB and more) live in transparent huge pages, each starting at its own offset within a huge page
// (a colour: 33 pages times a counter modulo 8). Where the THP mode is "madvise" (the common default) nothing else
// gives them huge pages. Why both: fdtd2 large's CPU launch (two arrays of 2,025 MiB) took 63-337 ms (medians) in
// different processes on the H100 host with 4 KiB pages, by how physically contiguous the process's memory came out;
// 319-353 ms in every process with huge pages at equal offsets (ex[i] and hz[i] then share their physical address
// bits below 2 MiB: the same cache sets and DRAM banks); 64-75 ms in every process with huge pages at staggered
// offsets (docs/results.md, "fdtd2: where the arrays lie"). DOP_HUGE_PAGES=0: 4 KiB pages, as before; =aligned: huge
// pages at equal offsets, the slow state, for experiments. A refusal only loses the hint.
enum class HugePages { off, staggered, aligned };
HugePages huge_pages_mode() {
  static const HugePages m = [] {
    const char* e = std::getenv("DOP_HUGE_PAGES");
    if (e && std::strcmp(e, "0") == 0) return HugePages::off;
    if (e && std::strcmp(e, "aligned") == 0) return HugePages::aligned;
    return HugePages::staggered;
  }();
  return m;
}

constexpr std::size_t kHugeMin = std::size_t(8) << 20;
constexpr std::size_t kHuge = std::size_t(2) << 20;

// `total` bytes of PROT_NONE mapping starting `colour` bytes past a huge-page boundary.
void* map_at_colour(std::size_t total, std::size_t colour) {
  const std::size_t over = total + kHuge + colour;
  if (over < total) return MAP_FAILED;
  char* raw = static_cast<char*>(::mmap(nullptr, over, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (raw == MAP_FAILED) return MAP_FAILED;
  char* base = reinterpret_cast<char*>(round_up(reinterpret_cast<std::uintptr_t>(raw), kHuge)) + colour;
  if (base > raw) ::munmap(raw, std::size_t(base - raw));
  if (raw + over > base + total) ::munmap(base + total, std::size_t(raw + over - (base + total)));
  return base;
}

// `bytes` (rounded) ending at an inaccessible region of guard_bytes(): all of it mapped inaccessible, then the body
// made accessible (the region costs address space only).
void* map_guarded(std::size_t bytes) {
  const Layout l = layout(bytes);
  if (l.pages < l.body || l.pages + guard_bytes() < l.pages) throw std::bad_alloc();
  const HugePages mode = l.pages >= kHugeMin ? huge_pages_mode() : HugePages::off;
  static std::atomic<unsigned> next_colour{0};
  void* base = MAP_FAILED;
  if (mode == HugePages::off)
    base = ::mmap(nullptr, l.pages + guard_bytes(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  else
    base = map_at_colour(l.pages + guard_bytes(),
                         mode == HugePages::aligned ? 0 : (next_colour.fetch_add(1) % 8) * 33 * page_size());
  if (base == MAP_FAILED) throw std::bad_alloc();
  if (l.pages > 0 && ::mprotect(base, l.pages, PROT_READ | PROT_WRITE) != 0) {
    ::munmap(base, l.pages + guard_bytes());
    throw std::bad_alloc();
  }
#ifdef MADV_HUGEPAGE
  if (mode != HugePages::off) ::madvise(base, l.pages, MADV_HUGEPAGE);
#endif
  return static_cast<char*>(base) + l.pages - l.body;
}
void unmap_guarded(void* p, std::size_t bytes) noexcept {
  const Layout l = layout(bytes);
  ::munmap(static_cast<char*>(p) + l.body - l.pages, l.pages + guard_bytes());
}
void* page_aligned_new(std::size_t bytes) {
  return ::operator new(round_up(std::max<std::size_t>(bytes, 1), kPage), std::align_val_t(kPage));
}

}  // namespace

bool guard_pages_enabled() {
#if DOP_ASAN
  return false;
#else
  return guard_pages_wanted();
#endif
}

void* guarded_allocate(std::size_t bytes) {
  return guard_pages_enabled() ? map_guarded(bytes) : page_aligned_new(bytes);
}

void guarded_deallocate(void* p, std::size_t bytes) noexcept {
  if (!p) return;
  if (!guard_pages_enabled()) return ::operator delete(p, std::align_val_t(kPage));
  unmap_guarded(p, bytes);
}

GuardedBlock::GuardedBlock(std::size_t bytes) : bytes_(bytes), mapped_(guard_pages_wanted()) {
  data_ = mapped_ ? map_guarded(bytes) : page_aligned_new(bytes);
}

GuardedBlock::~GuardedBlock() {
  if (mapped_)
    unmap_guarded(data_, bytes_);
  else
    ::operator delete(data_, std::align_val_t(kPage));
}

LaunchGuard::LaunchGuard(const Spec& spec, const std::vector<ArgData>& args, const std::string& what)
    : kernel_(spec.kernel_name), file_(spec.path.empty() ? spec.name : spec.path), what_(what) {
  if (!guard_pages_enabled()) return;
  install_handler();
  for (const ArgSpec& a : spec.args) {
    names_.push_back(a.name);
    sizes_.push_back(a.bytes());
  }
  for (size_t i = 0; i < args.size() && i < spec.args.size(); ++i) {
    const ArgData& d = args[i];
    if (spec.args[i].kind != ArgKind::buffer || d.storage.empty() || d.storage.get_allocator().memory) continue;
    watch(i, d.data(), d.storage.capacity() * sizeof(uint64_t), "");
  }
}

void LaunchGuard::watch(size_t i, const GuardedBlock& block, const std::string& where) {
  if (guard_pages_enabled() && i < names_.size()) watch(i, block.data(), block.bytes(), " in " + where);
}

void LaunchGuard::watch(size_t i, const void* data, std::size_t bytes, const std::string& where) {
  // The guard region follows the allocation's rounded body (guarded_allocate); the bytes between the data's end and
  // it are this buffer's own, so only the region is watched.
  const std::uintptr_t guard = reinterpret_cast<std::uintptr_t>(data) + layout(bytes).body;
  if (guard % page_size() != 0) return;
  int k = 0;
  for (; k < kSlots; ++k) {
    bool expected = false;
    if (g_slots[k].used.compare_exchange_strong(expected, true)) break;
  }
  if (k == kSlots) return;  // the handler still stops the process (the default action), without the names
  Slot& s = g_slots[k];
  s.lo.store(0);
  s.hi.store(0);
  const std::string msg = "dop: " + what_ + ": kernel '" + kernel_ + "' of " + file_ +
                          " accessed memory past the end of args[" + std::to_string(i) + "] '" + names_[i] + "' (" +
                          std::to_string(sizes_[i]) + " bytes)" + where +
                          ": the buffer is too small for the launch; stopped\n";
  s.len = std::min(msg.size(), sizeof s.msg - 1);
  std::memcpy(s.msg, msg.data(), s.len);
  s.hi.store(guard + guard_bytes(), std::memory_order_release);
  s.lo.store(guard, std::memory_order_release);
  slots_.push_back(k);
}

LaunchGuard::~LaunchGuard() {
  for (int k : slots_) {
    g_slots[k].lo.store(0);
    g_slots[k].hi.store(0);
    g_slots[k].used.store(false, std::memory_order_release);
  }
}

void set_guard_report_fd(int fd) { g_report_fd.store(fd); }

}  // namespace dop
