// The engine's inside (internal to dop_runtime): Executor::Impl and the parts it is built from: the sides it drives,
// the work list and rates its per-device drivers share, warm-start records, SVM memory, and one launch's state as
// the steps of Executor::Impl::launch hand it on. Each part's code lives in the file named beside it.
//
// Co-execution of one kernel on a CPU sub-device and a GPU with dynamic, adaptive work distribution.
//
// Work is split into units: slabs of work-groups along the slowest dimension (all work-groups for 1D launches),
// so that every chunk is a rectangular sub-range launched with a global offset through the range form. The CPU
// driver thread claims units from the front of the work list and the GPU driver thread from the back, each keeping
// two chunks in flight; chunk sizes adapt to each device's measured rate so that a chunk takes about
// target_chunk_ms, and shrink at the end so that both devices finish together.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "dop/executor.hpp"
#include "dop/guard.hpp"
#include "dop/range_form.hpp"
#include "engine/resident.hpp"

namespace dop::engine {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// True when nothing in the source can observe how the NDRange is cut into work-groups (range_form.cpp).
bool workgroup_independent(const std::string& src);

// One device as the executor drives it: a (sub-)device with its context and queue, its kernels built at their first
// use, and in copy modes its buffers (devices.cpp; its pinned staging memory: staging.cpp).
struct Side {
  std::string id;
  cl::DeviceHandle sub;  // owns a sub-device; empty for a root device
  cl_device_id device = nullptr;
  cl::Context ctx;
  cl::Queue queue;
  // Kernels built for this device, [0] the plain form and [1] the malleable one, by build options (Impl's
  // kernel_options): one per form, unless a 3D kernel ran at several sizes (its full size is a build constant).
  // Kept for later launches.
  struct Built {
    cl::Program program;
    cl::Kernel kernel;
  };
  std::map<std::string, Built> built[2];
  cl::Kernel kernel;  // the launch's, one of `built` (resolve_devices)
  bool malleable = false;
  // Copy mode: device buffers by argument index, reused across launches and rebinds (made anew when a launch needs
  // more bytes or other flags). Where the device's memory is host memory, a buffer lives in `host` (guard-paged,
  // dop/guard.hpp) rather than in the implementation's allocation, so that an overrun stops at the guard page.
  struct DeviceBuffer {
    std::unique_ptr<GuardedBlock> host;  // before buf: released after it
    cl::Buffer buf;
    size_t bytes = 0;
    cl_mem_flags flags = 0;
  };
  std::map<size_t, DeviceBuffer> gpu_buffers;
  // Copy mode: page-locked host memory of this context (CL_MEM_ALLOC_HOST_PTR, mapped once), by argument index:
  // inputs are staged into `pinned_in` and DMA'd from there; the GPU's outputs are read into `pinned_out`.
  struct Pinned {
    cl::Buffer buf;
    void* ptr = nullptr;
    size_t bytes = 0;
  };
  std::map<size_t, Pinned> pinned_in, pinned_out;
  bool pinned_failed = false;  // the implementation refused pinned memory: copy from pageable memory instead
  // ... what it refused, for LaunchResult::note: the argument's index, the bytes asked and the error
  size_t pinned_refused_arg = 0, pinned_refused_bytes = 0;
  std::string pinned_refusal;

  Side() = default;
  Side(const Side&) = delete;
  Side& operator=(const Side&) = delete;
  ~Side() { release_pinned(); }
  void release_pinned();
  // Pinned host memory of at least `bytes` for argument i, or nullptr where the implementation has none to give.
  unsigned char* pinned(std::map<size_t, Pinned>& m, size_t i, size_t bytes);
};

// A copy split into pieces, so that DMA of one piece overlaps the host-side copy of the next. Also a segment of a
// buffer to copy (bytes [offset, offset + bytes) of argument arg).
struct Piece {
  size_t arg, offset, bytes;
};
std::vector<Piece> make_pieces(const std::vector<Piece>& segments, unsigned threads);  // staging.cpp
// The bytes a chunk may read or write of one buffer, as one range (empty where it touches none). staging.cpp
ByteRange chunk_need(const ArgRanges& r);
// Tests (ExecutorOptions::poison_gpu_buffers): bytes [lo, hi) of a GPU buffer overwritten with garbage (0xA5) on
// `queue`, so that a read of what was never made current shows.
void poison(cl_command_queue queue, cl_mem buf, size_t lo, size_t hi, const std::string& arg_name);

// The first call on every thread the engine starts (set_engine_thread_hook's hook). driver.cpp
void thread_started();

// Runs f(k) for k in [0, n) on up to `threads` threads (the caller's among them), pieces claimed in order. The
// first exception is rethrown after every thread has stopped.
template <typename F>
void for_pieces(size_t n, unsigned threads, F f) {
  std::atomic<size_t> next{0};
  std::exception_ptr err;
  std::mutex err_m;
  auto work = [&] {
    for (size_t k; (k = next.fetch_add(1)) < n;) {
      try {
        f(k);
      } catch (...) {
        std::lock_guard<std::mutex> l(err_m);
        if (!err) err = std::current_exception();
        next = n;
      }
    }
  };
  std::vector<std::thread> ts;
  for (unsigned t = 1; t < std::min<size_t>(threads, n); ++t)
    ts.emplace_back([&] {
      thread_started();
      work();
    });
  work();
  for (auto& t : ts) t.join();
  if (err) std::rethrow_exception(err);
}

// The shared work list: units [front, back) are unclaimed. The CPU claims from the front, the GPU from the back.
class WorkList {
 public:
  explicit WorkList(size_t units) : front_(0), back_(units) {}
  // Returns [begin, end) with end - begin <= n, or an empty range when the list is exhausted.
  std::pair<size_t, size_t> take_front(size_t n) {
    std::lock_guard<std::mutex> l(m_);
    const size_t take = std::min(n, back_ - front_);
    front_ += take;
    return {front_ - take, front_};
  }
  std::pair<size_t, size_t> take_back(size_t n) {
    std::lock_guard<std::mutex> l(m_);
    const size_t take = std::min(n, back_ - front_);
    back_ -= take;
    return {back_, back_ + take};
  }
  size_t remaining() {
    std::lock_guard<std::mutex> l(m_);
    return back_ - front_;
  }
  size_t front() {
    std::lock_guard<std::mutex> l(m_);
    return front_;
  }
  // Returns units [b, e), the last ones take_back gave, to the list (the GPU gave up before running them).
  bool untake_back(size_t b, size_t e) {
    std::lock_guard<std::mutex> l(m_);
    if (back_ != b) return false;
    back_ = e;
    return true;
  }

 private:
  std::mutex m_;
  size_t front_, back_;
};

// Thrown by a chunk's `before` step when the device gives up the chunk (and the rest) to the other device.
struct GiveUp {};

// Measured throughput (units per ms) of both devices, shared between the driver threads for end-game sizing.
struct Rates {
  std::mutex m;
  double cpu = 0, gpu = 0;
  bool cpu_active = false, gpu_active = false;
  bool cpu_parked = false, gpu_parked = false;  // declined the tail, waiting for the other device

  // The give-up rule. Under dynamic distribution the GPU gives up staging (whole inputs, or a sliced chunk) when
  // the CPU, at its measured rate, would finish `units_left` before `bytes_left` more bytes had arrived at
  // `bytes_per_ms`: the copies would only take memory bandwidth from the CPU.
  bool cpu_finishes_first(size_t units_left, size_t bytes_left, double bytes_per_ms) {
    double cpu_rate;
    {
      std::lock_guard<std::mutex> l(m);
      cpu_rate = cpu_active ? cpu : 0;
    }
    return cpu_rate > 0 && bytes_per_ms > 0 && double(units_left) / cpu_rate < double(bytes_left) / bytes_per_ms;
  }
};

// Fine-grain buffer SVM of one context (MemoryMode::svm): every device of the context and the host use the same
// bytes, at the same time, without mapping. Keeps the context alive as long as an allocation may (memory.cpp).
class SvmMemory : public ArgMemory {
 public:
  SvmMemory(cl::Context ctx, cl_svm_mem_flags flags) : ctx_(std::move(ctx)), flags_(flags) {}
  void* allocate(std::size_t bytes) override;
  void deallocate(void* p, std::size_t) noexcept override;

 private:
  cl::Context ctx_;
  cl_svm_mem_flags flags_;
};

// Page-locked host memory of one GPU context (MemoryMode::pinned): each allocation a CL_MEM_ALLOC_HOST_PTR buffer,
// mapped once for the host's use and unmapped when freed, so that copies between it and the context's buffers
// are DMA from and to host memory in place. Keeps the context and a queue of its own alive as long as an
// allocation may (memory.cpp). owns() says whether a pointer lies in one of its allocations.
class PinnedMemory : public ArgMemory {
 public:
  PinnedMemory(cl::Context ctx, cl_device_id device);
  void* allocate(std::size_t bytes) override;
  void deallocate(void* p, std::size_t) noexcept override;
  bool owns(const void* p) const;

 private:
  struct Block {
    cl::Buffer buf;
    void* mapped = nullptr;
    std::size_t bytes = 0;
  };
  cl::Context ctx_;
  cl::Queue queue_;
  mutable std::mutex m_;
  std::map<const void*, Block> blocks_;  // by the pointer handed out
};

// Warm starts (ExecutorOptions::warm_start), one record per warm_key: the learned CPU share, the devices' last
// rates, and the launch times of the three ways to run (both devices from the learned share, the CPU alone, the GPU
// alone). The policy is in warm.cpp.
struct Warm {
  enum class Way { both, cpu_alone, gpu_alone };
  double share = -1;                  // -1: not measured yet
  double cpu_rate = 0, gpu_rate = 0;  // units per ms of chunk time; 0: not measured yet
  int launches = 0;                   // warm launches, for the periodic recheck
  int both_runs = 0;                  // warm launches that ran both devices
  bool measured_warm = false;         // the share includes a warm launch's
  bool alone_tried = false;           // the device that had run no chunk was timed alone (untried)
  double ms[3] = {0, 0, 0};           // total_ms by Way: the second run's, then averaged
  int runs[3] = {0, 0, 0};            // launches timed by Way
  bool known() const { return cpu_rate > 0 && gpu_rate > 0; }
  Way untried(const ExecutorOptions& o) const;
  Way choose(double units, const ExecutorOptions& o, bool& learning);
  Way fastest(std::initializer_list<Way> ways, bool& learning) const;
  void learn(double balanced, double cpu_r, double gpu_r, bool warm_launch, Way way, double total_ms);
};

// One launch in progress: what the steps of Executor::Impl::launch hand on to each other, in the order they fill it.
struct Launch {
  Launch(std::vector<ArgData>& a, const Config& cfg, double share, size_t units)
      : args(a), static_share(share), wl(units) {
    res.config = cfg;
  }
  std::vector<ArgData>& args;
  const double static_share;  // >= 0: a static split (launch_static); < 0: dynamic distribution
  LaunchResult res;

  // resolve_devices: the sides that run (built lazily, outside the timed region).
  Side* cpu = nullptr;
  Side* gpu = nullptr;

  // plan_memory: the mode actually used, and which buffers go to the GPU slice by slice.
  MemoryMode mode = MemoryMode::automatic;
  bool resident = false;
  bool in_place = false;  // both devices work on the host's bytes (zero-copy buffers, or the SVM they live in)
  // MemoryMode::pinned, by argument: its host memory is the GPU context's page-locked memory, so the GPU's DMA
  // reads it (read-only inputs) and writes it (outputs not merged) in place, without staging.
  std::vector<char> direct;
  std::atomic<size_t> sent_in_place{0};  // bytes the GPU's DMA read so (LaunchResult::h2d_in_place_bytes)
  std::vector<char> sliced;
  std::optional<FootprintEvaluator> footprint;  // per launch: the scalars and the launch are evaluated once
  // ExecutorOptions::data (held locked for the launch): the resident buffers, and each buffer argument's entry.
  DeviceData::Impl* data = nullptr;
  std::vector<DeviceData::Impl::Entry*> entries;
  // ... and for sliced ones (both devices running), the bytes each device's chunks may have written, and the bytes
  // staged to the GPU before its chunks began (what they stage is counted into DeviceData::moved afterwards).
  std::vector<RangeSet> cpu_wrote, gpu_wrote;
  size_t h2d_before_chunks = 0;

  // bind_buffers (timed from t0): host-side buffers and what goes to the GPU; keep_initial (run_devices, where both
  // devices run): the initial contents of what the GPU may write.
  Clock::time_point t0;
  std::vector<cl::Buffer> cpu_bufs, gpu_host_bufs;
  std::vector<cl_mem> cpu_mems, gpu_mems;
  std::vector<Piece> inputs;
  std::vector<const unsigned char*> initial;
  std::vector<std::vector<uint64_t>> snapshot;
  std::vector<std::unique_ptr<unsigned char[]>> first_contents;  // resident sliced buffers: where the CPU may write
  unsigned copy_threads = 1;  // threads for host-side copies (run_devices: by the cores the launch leaves idle)
  // stage_slices: what the GPU has of each sliced buffer, and the staging rate of this launch's chunks so far.
  std::vector<ByteRange> staged;
  size_t chunk_bytes_staged = 0;
  double chunk_staging_ms = 0;

  // plan_chunks, warm_start, run_devices: the work list, the rates, first chunks and minimums.
  WorkList wl;
  Rates rates;
  size_t cpu_first = 0, gpu_first = 0, cpu_min = 1, gpu_min = 1;
  bool dynamic_both = false;
  bool run_cpu = false, run_gpu = false;
  double cpu_seed = 0, gpu_seed = 0;
  Warm* learned = nullptr;
  Warm::Way way = Warm::Way::both;
};

}  // namespace dop::engine

namespace dop {

struct Executor::Impl {
  using Clock = engine::Clock;
  using Launch = engine::Launch;
  using Piece = engine::Piece;
  using Rates = engine::Rates;
  using Side = engine::Side;
  using Warm = engine::Warm;
  using WorkList = engine::WorkList;

  Spec spec;
  std::string source;
  cl::Selection sel;
  ExecutorOptions opt;
  std::mutex launch_mutex;
  std::map<int, std::unique_ptr<Side>> cpu_sides;  // by core count, made at first use
  std::unique_ptr<Side> gpu;                       // made at first use; runs the plain and the malleable form
  // MemoryMode::svm: one context for every side (the CPU's sub-devices at the core counts of the grid, and the
  // GPU), made at the first launch or make_args, and the fine-grain SVM of that context.
  cl::Context shared_ctx;
  std::shared_ptr<engine::SvmMemory> svm;
  // MemoryMode::pinned: page-locked host memory of the GPU side's context, made at the first make_args or launch.
  std::shared_ptr<engine::PinnedMemory> pinned_memory;
  // Programs the launch in progress built (resolve_devices counts them into LaunchResult).
  struct BuildTally {
    int built = 0, from_cache = 0;
    double ms = 0;
  } tally;

  std::vector<size_t> local;   // the spec's local size, or one chosen when the spec leaves it open
  size_t split_dim = 0;        // units are slabs of work-groups along this (slowest) dimension
  std::string kernel_options;  // the spec's build options and the range form's (range_form_options), for use_kernel
  size_t units = 0;            // work-groups along split_dim
  size_t groups_per_unit = 1;
  std::string local_note;
  size_t fine = 1;  // units per spec work-group along split_dim (CPU work-groups are that much finer)
  std::vector<size_t> cpu_local;
  std::map<std::string, Warm> warm;  // by warm_key

  // executor.cpp: construction, rebinding, the launch as its sequence of steps, the model's decision.
  Impl(const Spec& s, const std::string& src, const cl::Selection& d, ExecutorOptions o);
  void rebind(const Spec& s);
  void check_limits() const;
  LaunchResult launch(std::vector<ArgData>& args, const Config& cfg, double static_share = -1);
  pred::Decision decide(const std::vector<ArgData>& args) const;

  // range_form.cpp: units, work-group sizes and the CPU's finer work-groups for the spec.
  void geometry();

  // devices.cpp: sides (contexts, queues, CPU sub-devices, the GPU), their kernels built at first use, kernel
  // arguments, and the configuration resolved into sides.
  std::unique_ptr<Side> make_side(const std::string& id, cl_device_id device, const cl::Context& ctx);
  void use_kernel(Side& s, bool malleable);
  struct CpuDevices {
    std::vector<cl::DeviceHandle> subs;
    std::vector<cl_device_id> devices;
  };
  CpuDevices cpu_devices(const std::vector<int>& counts) const;
  cl::Context cpu_context(const std::vector<int>& counts, CpuDevices& d, const std::vector<cl_device_id>& extra);
  std::vector<int> level_counts() const;
  std::string cpu_side_id(int c) const;
  Side& cpu_side(int cores);
  Side& gpu_side();
  void set_args(Side& s, std::vector<ArgData>& args, const std::vector<cl_mem>& mems, int mod, int alloc);
  void resolve_devices(Launch& l);

  // memory.cpp: MemoryMode::svm's shared context and memory, MemoryMode::pinned's memory, and the launch's memory
  // plan.
  engine::SvmMemory& shared();
  std::shared_ptr<ArgMemory> arg_memory();
  void plan_memory(Launch& l);

  // staging.cpp: transfers to the GPU (device buffers, host-side buffers, pinned staging of inputs and slices).
  void prepare_gpu_buffers(Launch& l);
  bool gpu_in_host_memory() const;
  void bind_buffers(Launch& l);
  void keep_initial(Launch& l);
  cl::Event send_piece(Launch& l, const Piece& p);
  bool stage_inputs(Launch& l, bool may_give_up);
  cl::Event stage_slices(Launch& l, size_t b, size_t e);

  // driver.cpp: chunks, the per-device driver, the first chunks, and the two drivers run together.
  void chunk_geometry(size_t b, size_t e, bool whole, std::vector<size_t>& offset, std::vector<size_t>& global,
                      std::vector<size_t>& chunk_local) const;
  std::vector<std::tuple<size_t, size_t, bool>> chunk_pieces(size_t b, size_t e, bool is_cpu) const;
  void drive(Side& s, bool is_cpu, WorkList& wl, Rates& rates, size_t first_chunk, size_t min_chunk,
             Clock::time_point t0, DeviceStats& st, bool static_chunks, double seed_rate,
             const std::function<cl::Event(size_t, size_t)>& before = {});
  void plan_chunks(Launch& l);
  void run_devices(Launch& l);

  // readback.cpp: outputs back to host memory (in-place buffers synchronised, the GPU's read back and merged).
  void collect(Launch& l);
  void read_back(Launch& l, const std::vector<Piece>& outputs, const std::vector<char>& merge_arg);
  std::vector<Piece> gpu_outputs(Launch& l, std::vector<char>& merge_arg);
  static void merge(size_t size, unsigned char* host, const unsigned char* gpu, const unsigned char* initial,
                    size_t bytes);

  // resident.cpp: a launch's steps with resident buffers (ExecutorOptions::data).
  std::vector<ArgRanges> unit_ranges(Launch& l, size_t b, size_t e) const;
  void resident_before(Launch& l);
  cl::Event resident_cpu_chunk(Launch& l, size_t b, size_t e);
  void resident_gpu_chunk(Launch& l, const std::vector<ArgRanges>& need);
  void resident_after(Launch& l);
  void resident_failed(Launch& l);

  // warm.cpp: the warm-start record's key, starting a launch from it, and learning from a launch.
  std::string warm_key(const LaunchResult& res, const std::vector<ArgData>& args) const;
  void warm_start(Launch& l);
  void learn(Launch& l);
};

}  // namespace dop
