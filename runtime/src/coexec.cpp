// Co-execution of one kernel on a CPU sub-device and a GPU with dynamic, adaptive work distribution.
//
// Work is split into units: slabs of work-groups along the slowest dimension (all work-groups for 1D launches),
// so that every chunk is a rectangular sub-range launched with a global offset through the range form. The CPU
// driver thread claims units from the front of the work list and the GPU driver thread from the back, each keeping
// two chunks in flight; chunk sizes adapt to each device's measured rate so that a chunk takes about
// target_chunk_ms, and shrink at the end so that both devices finish together.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <tuple>
#include <cctype>

#include "dop/runtime.hpp"

namespace dop {

// ---------------------------------------------------------------------------------------------------------------
// Memory modes
// ---------------------------------------------------------------------------------------------------------------

MemoryMode parse_memory_mode(const std::string& s) {
  if (s == "auto") return MemoryMode::automatic;
  if (s == "zero-copy") return MemoryMode::zero_copy;
  if (s == "copy") return MemoryMode::copy;
  if (s == "resident") return MemoryMode::resident;
  if (s == "svm") return MemoryMode::svm;
  throw std::invalid_argument("memory mode '" + s + "' must be auto, zero-copy, copy, resident or svm");
}

const char* memory_mode_name(MemoryMode m) {
  switch (m) {
    case MemoryMode::zero_copy:
      return "zero-copy";
    case MemoryMode::copy:
      return "copy";
    case MemoryMode::resident:
      return "resident";
    case MemoryMode::svm:
      return "svm";
    default:
      return "auto";
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Range form
// ---------------------------------------------------------------------------------------------------------------

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

std::string range_form_options(const std::vector<size_t>& global, size_t split_dim,
                               const std::vector<size_t>& offset, bool constant_size) {
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

// ---------------------------------------------------------------------------------------------------------------
// Executor
// ---------------------------------------------------------------------------------------------------------------

namespace {

using Clock = std::chrono::steady_clock;

// True when nothing in the source can observe how the NDRange is cut into work-groups: no barriers or fences, no
// local memory, no work-group or sub-group functions, no local ids or sizes, no group ids or counts, no includes.
// A conservative scan of every identifier, comments and strings included.
bool workgroup_independent(const std::string& src) {
  if (src.find("#include") != std::string::npos) return false;
  static const char* const kObserve[] = {"barrier",        "mem_fence",       "read_mem_fence",
                                         "write_mem_fence", "local",           "__local",
                                         "get_local_id",   "get_local_size",  "get_group_id",
                                         "get_num_groups", "get_enqueued_local_size", "get_local_linear_id",
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
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// One device as the executor drives it: a (sub-)device with its context, queue and built kernel.
struct Side {
  std::string id;
  cl::DeviceHandle sub;  // owns a sub-device; empty for a root device
  cl_device_id device = nullptr;
  cl::Context ctx;
  cl::Queue queue;
  cl::Program program;
  cl::Kernel kernel;
  bool malleable = false;
  std::map<size_t, cl::Buffer> gpu_buffers;  // copy mode: device buffers by argument index, reused across launches
  // Copy mode: page-locked host memory of this context (CL_MEM_ALLOC_HOST_PTR, mapped once), by argument index:
  // inputs are staged into `pinned_in` and DMA'd from there; the GPU's outputs are read into `pinned_out`.
  struct Pinned {
    cl::Buffer buf;
    void* ptr = nullptr;
  };
  std::map<size_t, Pinned> pinned_in, pinned_out;
  bool pinned_failed = false;  // the implementation refused pinned memory: copy from pageable memory instead

  Side() = default;
  Side(const Side&) = delete;
  Side& operator=(const Side&) = delete;
  ~Side() { release_pinned(); }
  void release_pinned() {
    for (auto* m : {&pinned_in, &pinned_out}) {
      for (auto& [i, p] : *m)
        if (p.ptr) clEnqueueUnmapMemObject(queue.get(), p.buf.get(), p.ptr, 0, nullptr, nullptr);
      m->clear();
    }
    if (queue) clFinish(queue.get());
    pinned_failed = false;
  }

  // Pinned host memory of `bytes` for argument i, or nullptr where the implementation has none to give.
  unsigned char* pinned(std::map<size_t, Pinned>& m, size_t i, size_t bytes) {
    if (pinned_failed) return nullptr;
    Pinned& p = m[i];
    if (!p.ptr) {
      try {
        p.buf = cl::create_buffer(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes);
        cl_int err = CL_SUCCESS;
        p.ptr = clEnqueueMapBuffer(queue.get(), p.buf.get(), CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, nullptr,
                                   nullptr, &err);
        if (err != CL_SUCCESS) p.ptr = nullptr;
      } catch (const cl::Error&) {
        p.ptr = nullptr;
      }
      if (!p.ptr) {
        m.erase(i);
        pinned_failed = true;
        return nullptr;
      }
    }
    return static_cast<unsigned char*>(p.ptr);
  }
};

// A copy split into pieces, so that DMA of one piece overlaps the host-side copy of the next. Also a segment of a
// buffer to copy (bytes [offset, offset + bytes) of argument arg).
struct Piece {
  size_t arg, offset, bytes;
};
std::vector<Piece> make_pieces(const std::vector<Piece>& segments, unsigned threads) {
  size_t total = 0;
  for (const auto& g : segments) total += g.bytes;
  constexpr size_t kPage = 4096, kMin = size_t(1) << 20, kMax = size_t(16) << 20;
  const size_t piece = std::clamp(total / (size_t(threads) * 4 + 1), kMin, kMax) / kPage * kPage;
  std::vector<Piece> out;
  for (const auto& g : segments)
    for (size_t off = 0; off < g.bytes; off += piece) out.push_back({g.arg, g.offset + off, std::min(piece, g.bytes - off)});
  return out;
}

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
  for (unsigned t = 1; t < std::min<size_t>(threads, n); ++t) ts.emplace_back(work);
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
};

// Fine-grain buffer SVM of one context (MemoryMode::svm): every device of the context and the host use the same
// bytes, at the same time, without mapping. Keeps the context alive as long as an allocation may.
class SvmMemory : public ArgMemory {
 public:
  SvmMemory(cl::Context ctx, cl_svm_mem_flags flags) : ctx_(std::move(ctx)), flags_(flags) {}
  void* allocate(std::size_t bytes) override {
    // Alignment 0: that of the largest OpenCL type, the most the specification lets an implementation guarantee.
    void* p = clSVMAlloc(ctx_.get(), flags_, bytes, 0);
    if (!p)
      throw cl::Error(CL_OUT_OF_RESOURCES, "clSVMAlloc",
                      std::to_string(bytes) + " bytes of fine-grain buffer SVM were refused");
    return p;
  }
  void deallocate(void* p, std::size_t) noexcept override { clSVMFree(ctx_.get(), p); }

 private:
  cl::Context ctx_;
  cl_svm_mem_flags flags_;
};

}  // namespace

std::string svm_unavailable(const cl::Selection& sel) {
  if (!sel.cpu && !sel.gpu) return "no device is selected";
  if (sel.cpu && sel.gpu && sel.cpu->platform != sel.gpu->platform)
    return "the CPU (" + sel.cpu->id + ", " + sel.cpu->platform_name + ") and the GPU (" + sel.gpu->id + ", " +
           sel.gpu->platform_name +
           ") are devices of different platforms, and an SVM allocation belongs to one context of one platform";
  for (const auto* d : {&sel.cpu, &sel.gpu})
    if (*d && !((*d)->svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER))
      return "device " + (*d)->id + " has SVM capabilities '" + cl::svm_name((*d)->svm) +
             "'; dop needs fine-grain buffer SVM, so that both devices and the host work on one allocation at once "
             "without mapping it";
  return {};
}

struct Executor::Impl {
  Spec spec;
  std::string source;
  cl::Selection sel;
  ExecutorOptions opt;
  std::mutex launch_mutex;
  std::map<int, std::unique_ptr<Side>> cpu_sides;  // by core count
  std::unique_ptr<Side> gpu_plain, gpu_malleable;
  // MemoryMode::svm: one context for every side (the CPU's sub-devices at the core counts of the grid, and the
  // GPU), made at the first launch or make_args, and the fine-grain SVM of that context.
  cl::Context shared_ctx;
  std::shared_ptr<SvmMemory> svm;

  std::vector<size_t> local;  // the spec's local size, or one chosen when the spec leaves it open
  size_t split_dim = 0;       // units are slabs of work-groups along this (slowest) dimension
  size_t units = 0;           // work-groups along split_dim
  size_t groups_per_unit = 1;
  std::string local_note;
  size_t fine = 1;             // units per spec work-group along split_dim (CPU work-groups are that much finer)
  std::vector<size_t> cpu_local;
  // Warm starts (ExecutorOptions::warm_start), by warm_key: the learned CPU share, the devices' last rates, and
  // the launch times of the three ways to run (both devices from the learned share, the CPU alone, the GPU alone).
  struct Warm {
    enum class Way { both, cpu_alone, gpu_alone };
    double share = -1;                  // -1: not measured yet
    double cpu_rate = 0, gpu_rate = 0;  // units per ms of chunk time; 0: not measured yet
    int launches = 0;                   // warm launches, for the periodic recheck
    int both_runs = 0;                  // warm launches that ran both devices
    bool measured_warm = false;         // the share includes a warm launch's
    double ms[3] = {0, 0, 0};  // average total_ms by Way; 0: not measured
    bool known() const { return cpu_rate > 0 && gpu_rate > 0; }
    // How the next warm launch runs: a device whose share rounds to nothing sits out; after a warm launch on both,
    // each way the learned share makes plausible (a device's share under `explore`) is tried once; then the fastest
    // way measured, except that every `recheck`-th launch runs both, so that the share and its time stay current.
    Way choose(double units, const ExecutorOptions& o) {
      ++launches;
      if (share * units < 0.5) return Way::gpu_alone;
      if ((1 - share) * units < 0.5) return Way::cpu_alone;
      if (both_runs < 1 || (o.warm_recheck > 0 && launches % o.warm_recheck == 0)) return Way::both;
      if (share >= 1 - o.warm_explore && ms[int(Way::cpu_alone)] == 0) return Way::cpu_alone;
      if (share <= o.warm_explore && ms[int(Way::gpu_alone)] == 0) return Way::gpu_alone;
      Way best = Way::both;
      for (Way w : {Way::cpu_alone, Way::gpu_alone})
        if (ms[int(w)] > 0 && ms[int(w)] < ms[int(best)]) best = w;
      return best;
    }
    // What a launch measured: the balanced share (replacing the learned one when that came from cold launches
    // only, whose probe chunks distort it, or when they disagree by more than 0.25, a sign that the earlier
    // launches paid for something this one did not, such as a first compilation), the rates, and the time of the
    // way it ran (warm launches only).
    void learn(double balanced, double cpu_r, double gpu_r, bool warm_launch, Way way, double total_ms) {
      if (balanced >= 0) {
        const bool keep = share >= 0 && (measured_warm || !warm_launch) && std::abs(balanced - share) <= 0.25;
        share = keep ? 0.5 * (share + balanced) : balanced;
        measured_warm = measured_warm || warm_launch;
      }
      if (cpu_r > 0) cpu_rate = cpu_r;
      if (gpu_r > 0) gpu_rate = gpu_r;
      if (!warm_launch) return;
      double& m = ms[int(way)];
      m = m > 0 ? 0.5 * (m + total_ms) : total_ms;
      if (way == Way::both) ++both_runs;
    }
  };
  std::map<std::string, Warm> warm;

  Impl(const Spec& s, const std::string& src, const cl::Selection& d, ExecutorOptions o)
      : spec(s), source(src), sel(d), opt(std::move(o)) {
    if (!sel.cpu && !sel.gpu) throw std::invalid_argument("no device to run '" + spec.name + "' on");
    if (opt.memory == MemoryMode::svm) {
      const std::string why = svm_unavailable(sel);
      if (!why.empty()) throw std::invalid_argument("memory mode svm for '" + spec.name + "': " + why);
    }
    geometry();
  }

  // Another launch of the same kernel: contexts, sub-devices, programs and queues are kept when the build does not
  // depend on what changed (range_form_options); buffers sized for the old launch are dropped.
  void rebind(const Spec& s) {
    const auto old_split = spec.global.size() - 1;
    const bool same_build = s.kernel_name == spec.kernel_name && s.build_options == spec.build_options &&
                            s.global.size() == spec.global.size() &&
                            range_form_options(s.global, s.global.size() - 1) ==
                                range_form_options(spec.global, old_split);
    if (!same_build)
      throw std::invalid_argument("rebind of '" + spec.name + "' to '" + s.name +
                                  "': another kernel, build options or work dimension; make a new executor");
    for (auto* g : {&gpu_plain, &gpu_malleable})
      if (*g) {
        (*g)->release_pinned();
        (*g)->gpu_buffers.clear();
      }
    spec = s;
    local_note.clear();
    warm.clear();
    geometry();
  }

  // What a learned share holds for: the configuration as resolved, the memory mode, the launch shape and the scalar
  // arguments (they may change the work per unit: a loop bound, a matrix width).
  std::string warm_key(const LaunchResult& res, const std::vector<ArgData>& args) const {
    std::string k = std::to_string(res.cpu_cores) + "/" + std::to_string(res.gpu_alloc) +
                    (res.gpu_throttled ? "m" : "") + "/" + memory_mode_name(res.memory);
    for (size_t d = 0; d < spec.global.size(); ++d) k += "/" + std::to_string(spec.global[d]) + "x" + std::to_string(local[d]);
    char hex[20];
    for (size_t i = 0; i < spec.args.size(); ++i)
      if (spec.args[i].kind == ArgKind::scalar)
        for (uint64_t w : args[i].storage) std::snprintf(hex, sizeof hex, ":%llx", (unsigned long long)w), k += hex;
    return k;
  }

  void geometry() {
    groups_per_unit = 1;
    fine = 1;
    local = spec.local;
    if (local.empty()) {  // the kernel does not depend on its work-group size: choose one that divides global
      local.assign(spec.global.size(), 1);
      for (size_t l = 64; l >= 1; --l)
        if (spec.global[0] % l == 0) {
          local[0] = l;
          break;
        }
      local_note = "local size chosen by dop";
    }
    split_dim = spec.global.size() - 1;
    units = spec.global[split_dim] / local[split_dim];
    for (size_t d = 0; d < spec.global.size(); ++d)
      if (d != split_dim) groups_per_unit *= spec.global[d] / local[d];
    // Few work-groups (a matrix-vector kernel of 4096 rows in groups of 256 has 16) leave the work list too
    // coarse to balance two devices, and a CPU share of them leaves cores idle. A kernel that cannot observe its
    // work-groups runs on the CPU in finer ones: `fine` CPU groups per spec group along the split dimension.
    cpu_local = local;
    const size_t target_groups = 16 * size_t(sel.cpu ? sel.cpu->compute_units : 1);
    if (!spec.local.empty() && workgroup_independent(source)) {
      while (units * groups_per_unit * fine < target_groups && local[split_dim] % (2 * fine) == 0 &&
             local[split_dim] / (2 * fine) >= 8)
        fine *= 2;
    }
    cpu_local[split_dim] = local[split_dim] / fine;
    units *= fine;
    if (fine > 1) local_note = "CPU work-groups of " + std::to_string(cpu_local[split_dim]) + " along dimension " +
                               std::to_string(split_dim) + " (the kernel does not observe its work-groups)";
  }

  // A built kernel on one device of a context (shared by several sides) with its own queue.
  std::unique_ptr<Side> make_side(const std::string& id, cl_device_id device, const cl::Context& ctx,
                                  const cl::Program& program, bool malleable) {
    auto s = std::make_unique<Side>();
    s->id = id;
    s->device = device;
    s->ctx = ctx;
    s->program = program;
    s->queue = cl::create_queue(ctx, device, true);
    s->kernel = cl::create_kernel(program, spec.kernel_name);
    s->malleable = malleable;
    cl_uint nargs = 0;
    cl::check(clGetKernelInfo(s->kernel.get(), CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, nullptr), "clGetKernelInfo");
    const size_t want = spec.args.size() + (malleable ? 2 : 0);
    if (nargs != want)
      throw SpecError(spec.path + ": kernel '" + spec.kernel_name + "'" + (malleable ? " (malleable form)" : "") +
                      " has " + std::to_string(nargs) + " arguments, the spec gives " + std::to_string(want));
    return s;
  }

  cl::Program build(const cl::Context& ctx, const std::vector<cl_device_id>& devices, bool malleable) {
    const std::string& body = malleable ? opt.malleable_source : source;
    const std::string file = spec.kernel_file.empty() ? spec.name : spec.kernel_file;
    return cl::build_program(ctx, devices, range_form_prelude() + body,
                             spec.build_options + range_form_options(spec.global, split_dim),
                             malleable ? file + " (malleable form)" : file);
  }

  // CPU core counts as devices: a sub-device per count below the whole device (whose own handle is empty).
  // `counts` sorted and unique.
  struct CpuDevices {
    std::vector<cl::DeviceHandle> subs;
    std::vector<cl_device_id> devices;
  };
  CpuDevices cpu_devices(const std::vector<int>& counts) const {
    const int total = int(sel.cpu->compute_units);
    CpuDevices d;
    d.subs.resize(counts.size());
    for (size_t i = 0; i < counts.size(); ++i) {
      if (counts[i] < total) d.subs[i] = cl::create_sub_device(*sel.cpu, cl_uint(counts[i]));
      d.devices.push_back(d.subs[i] ? d.subs[i].get() : sel.cpu->device);
    }
    return d;
  }
  // One context for the CPU's `counts` (and `extra` devices of its platform after them). A platform that refuses
  // a device and its sub-devices in one context gets the whole CPU as a sub-device too.
  cl::Context cpu_context(const std::vector<int>& counts, CpuDevices& d, const std::vector<cl_device_id>& extra) {
    auto with_extra = [&] {
      std::vector<cl_device_id> all = d.devices;
      all.insert(all.end(), extra.begin(), extra.end());
      return all;
    };
    try {
      return cl::create_context(with_extra());
    } catch (const cl::Error&) {
      const int total = int(sel.cpu->compute_units);
      if (counts.back() != total || d.subs.back()) throw;
      d.subs.back() = cl::create_sub_device(*sel.cpu, cl_uint(total));
      d.devices.back() = d.subs.back().get();
      return cl::create_context(with_extra());
    }
  }
  std::vector<int> level_counts(int extra_count) const {
    const int total = int(sel.cpu->compute_units);
    std::vector<int> counts;
    if (extra_count > 0) counts.push_back(extra_count);
    for (double l : opt.cpu_levels)
      if (l > 0) counts.push_back(std::clamp(int(std::lround(l * total)), 1, total));
    for (const auto& [c, side] : cpu_sides) counts.push_back(c);
    std::sort(counts.begin(), counts.end());
    counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
    return counts;
  }
  std::string cpu_side_id(int c) const {
    return c < int(sel.cpu->compute_units) ? sel.cpu->id + "/" + std::to_string(c) : sel.cpu->id;
  }

  // Every CPU core count of the grid (and the one asked for) as sub-devices of ONE context, built once: one
  // compilation per workload instead of one per core count.
  Side& cpu_side(int cores) {
    if (opt.memory == MemoryMode::svm) return shared_cpu_side(cores);
    auto it = cpu_sides.find(cores);
    if (it != cpu_sides.end()) return *it->second;
    const std::vector<int> counts = level_counts(cores);
    CpuDevices d = cpu_devices(counts);
    cl::Context ctx = cpu_context(counts, d, {});
    cl::Program program = build(ctx, d.devices, false);
    std::map<int, std::unique_ptr<Side>> sides;
    for (size_t i = 0; i < counts.size(); ++i) {
      auto s = make_side(cpu_side_id(counts[i]), d.devices[i], ctx, program, false);
      s->sub = d.subs[i];
      sides[counts[i]] = std::move(s);
    }
    cpu_sides = std::move(sides);  // buffers are per launch, so replacing earlier sides loses nothing
    return *cpu_sides.at(cores);
  }
  Side& gpu_side(bool malleable) {
    if (opt.memory == MemoryMode::svm) shared();
    auto& s = malleable ? gpu_malleable : gpu_plain;
    if (!s) {
      cl::Context ctx = shared_ctx ? shared_ctx : cl::create_context({sel.gpu->device});
      s = make_side(sel.gpu->id, sel.gpu->device, ctx, build(ctx, {sel.gpu->device}, malleable), malleable);
    }
    return *s;
  }

  // MemoryMode::svm: the CPU's sub-devices at the grid's core counts and the GPU in one context, their plain
  // program built once for all of them, and that context's fine-grain SVM (with cross-device atomics where every
  // device has them). Made once: an SVM allocation lives in one context, so its devices cannot change later.
  SvmMemory& shared() {
    if (svm) return *svm;
    std::vector<int> counts;
    CpuDevices d;
    const std::vector<cl_device_id> gpu_dev = sel.gpu ? std::vector<cl_device_id>{sel.gpu->device}
                                                      : std::vector<cl_device_id>{};
    if (sel.cpu) {
      counts = level_counts(0);
      d = cpu_devices(counts);
      shared_ctx = cpu_context(counts, d, gpu_dev);
    } else {
      shared_ctx = cl::create_context(gpu_dev);
    }
    std::vector<cl_device_id> all = d.devices;
    all.insert(all.end(), gpu_dev.begin(), gpu_dev.end());
    cl::Program program = build(shared_ctx, all, false);
    for (size_t i = 0; i < counts.size(); ++i) {
      auto s = make_side(cpu_side_id(counts[i]), d.devices[i], shared_ctx, program, false);
      s->sub = d.subs[i];
      cpu_sides[counts[i]] = std::move(s);
    }
    if (sel.gpu) gpu_plain = make_side(sel.gpu->id, sel.gpu->device, shared_ctx, program, false);
    bool atomics = true;
    for (const auto* dev : {&sel.cpu, &sel.gpu})
      if (*dev && !((*dev)->svm & CL_DEVICE_SVM_ATOMICS)) atomics = false;
    svm = std::make_shared<SvmMemory>(
        shared_ctx, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER | (atomics ? CL_MEM_SVM_ATOMICS : 0));
    return *svm;
  }
  Side& shared_cpu_side(int cores) {
    shared();
    auto it = cpu_sides.find(cores);
    if (it != cpu_sides.end()) return *it->second;
    std::string have;
    for (const auto& [c, side] : cpu_sides) have += (have.empty() ? "" : ", ") + std::to_string(c);
    throw std::invalid_argument("memory mode svm: the CPU's sub-devices share one context with the GPU, made for the "
                                "core counts of ExecutorOptions::cpu_levels (" + have + "); " +
                                std::to_string(cores) + " cores is not among them");
  }

  // Arguments whose buffers live where this executor runs them in place (its SVM in svm mode).
  std::shared_ptr<ArgMemory> arg_memory() {
    if (opt.memory != MemoryMode::svm) return nullptr;
    shared();
    return svm;
  }

  // Launch geometry of units [b, e) in spec work-groups (`whole`) or CPU ones, with the range form's extra
  // dimension for kernels of fewer than 3.
  void chunk_geometry(size_t b, size_t e, bool whole, std::vector<size_t>& offset, std::vector<size_t>& global,
                      std::vector<size_t>& chunk_local) const {
    const size_t unit_items = cpu_local[split_dim];
    global = spec.global;
    chunk_local = whole ? local : cpu_local;
    offset.assign(spec.global.size(), 0);
    offset[split_dim] = b * unit_items;
    global[split_dim] = (e - b) * unit_items;
    range_form_geometry(spec.global, split_dim, global, chunk_local, offset);
  }
  // Pieces of a chunk and whether each runs in spec work-groups: the CPU always runs its own; the GPU runs the
  // spec's where the chunk covers whole ones, CPU-sized ones for a partial group at either end.
  std::vector<std::tuple<size_t, size_t, bool>> chunk_pieces(size_t b, size_t e, bool is_cpu) const {
    if (fine == 1) return {{b, e, true}};
    if (is_cpu) return {{b, e, false}};
    const size_t hb = std::min(e, (b + fine - 1) / fine * fine), te = std::max(hb, e / fine * fine);
    std::vector<std::tuple<size_t, size_t, bool>> p;
    if (b < hb) p.emplace_back(b, hb, false);
    if (hb < te) p.emplace_back(hb, te, true);
    if (te < e) p.emplace_back(te, e, false);
    return p;
  }

  // Buffers are `mems`, or in svm mode (`mems` empty) the arguments' own SVM pointers.
  void set_args(Side& s, std::vector<ArgData>& args, const std::vector<cl_mem>& mems, int mod, int alloc) {
    for (size_t i = 0; i < spec.args.size(); ++i) {
      const ArgSpec& a = spec.args[i];
      const cl_uint idx = static_cast<cl_uint>(i);
      if (a.kind == ArgKind::buffer && mems.empty())
        cl::set_arg_svm(s.kernel, idx, args[i].data());
      else if (a.kind == ArgKind::buffer)
        cl::set_arg(s.kernel, idx, sizeof(cl_mem), &mems[i]);
      else if (a.kind == ArgKind::scalar)
        cl::set_arg(s.kernel, idx, a.bytes(), args[i].data());
      else
        cl::set_arg(s.kernel, idx, a.bytes(), nullptr);
    }
    if (s.malleable) {
      cl::set_arg(s.kernel, static_cast<cl_uint>(spec.args.size()), mod);
      cl::set_arg(s.kernel, static_cast<cl_uint>(spec.args.size() + 1), alloc);
    }
  }

  // Drives one device: claims chunks, keeps two in flight, adapts chunk sizes. Returns via stats. `before`, when
  // given, enqueues what a chunk of units [b, e) needs first (its input slices) and returns the first such event:
  // the chunk's measured time then includes its copies.
  // `seed_rate` > 0 (a warm start): the device's rate is known from earlier launches, and its first claim is
  // `first_chunk` when that is not 0, then adaptive.
  void drive(Side& s, bool is_cpu, WorkList& wl, Rates& rates, size_t first_chunk, size_t min_chunk,
             Clock::time_point t0, DeviceStats& st, bool static_chunks, double seed_rate,
             const std::function<cl::Event(size_t, size_t)>& before = {}) {
    struct InFlight {
      cl::Event first, last;  // a chunk's first enqueue (copy or kernel; only when it has several) and last one
      size_t n;
    };
    std::deque<InFlight> inflight;
    double rate = seed_rate;  // units per ms of kernel time
    bool warm_first = seed_rate > 0 && first_chunk > 0;
    std::vector<size_t> offset, global, chunk_local;
    const bool fixed = static_chunks;
    size_t inflight_units = 0;
    // Units to claim next; 0 means "not now": the other device would finish everything left sooner than this
    // device would finish its queued work plus one more chunk (it would steal the tail and make both wait).
    auto plan = [&]() -> size_t {
      if (fixed) return std::exchange(first_chunk, 0);  // static split: exactly one chunk
      if (std::exchange(warm_first, false)) return first_chunk;  // warm start: the learned share, less the tail
      const double remaining = double(wl.remaining());
      std::lock_guard<std::mutex> l(rates.m);
      const bool other_active = is_cpu ? rates.gpu_active : rates.cpu_active;
      // The CPU alone takes what is left in one chunk: there is nothing to balance, and every enqueue costs it a
      // synchronisation of all its cores. (The GPU keeps its chunks: they overlap its copies with its kernels.)
      if (is_cpu && !other_active) return static_cast<size_t>(std::max(1.0, remaining));
      if (rate <= 0) return first_chunk;
      double n = std::max(double(min_chunk), rate * opt.target_chunk_ms);
      const double other = is_cpu ? rates.gpu : rates.cpu;
      const bool other_parked = is_cpu ? rates.gpu_parked : rates.cpu_parked;
      if (other_active && other <= 0) {
        // The other device has not reported a rate yet (a GPU still receiving its inputs): take at most a quarter
        // of what is left, so that this device's share grows geometrically instead of emptying the list at once.
        n = std::min(n, std::max(1.0, std::ceil(remaining / 4)));
      }
      if (other_active && other > 0) {
        // End game: no more than this device's share of what is left at the two rates.
        n = std::min(n, std::max(double(min_chunk), std::ceil(rate * remaining / (rate + other))));
        n = std::min(n, remaining);
        if (!other_parked && (double(inflight_units) + n) / rate > remaining / other) return 0;
      }
      return static_cast<size_t>(std::max(1.0, n));
    };
    auto set_parked = [&](bool v) {
      std::lock_guard<std::mutex> l(rates.m);
      (is_cpu ? rates.cpu_parked : rates.gpu_parked) = v;
    };
    bool gave_up = false;
    for (;;) {
      while (!gave_up && inflight.size() < 2) {
        size_t want = plan();
        if (want == 0) break;
        // The GPU claims whole spec work-groups where it can: finer ones would leave its compute units idle.
        if (!is_cpu && fine > 1 && !fixed) want = std::max(fine, want / fine * fine);
        const auto [b, e] = is_cpu ? wl.take_front(want) : wl.take_back(want);
        if (b == e) break;
        InFlight f{{}, {}, e - b};
        if (before) {
          try {
            f.first = before(b, e);
          } catch (const GiveUp&) {  // the chunk went back to the list, for the other device
            gave_up = true;
            break;
          }
        }
        const auto pieces = chunk_pieces(b, e, is_cpu);
        for (const auto& [pb, pe, whole] : pieces) {
          chunk_geometry(pb, pe, whole, offset, global, chunk_local);
          // The queue is in order: on the GPU in copy mode the first chunk runs after the input copies.
          cl::Event ev = cl::enqueue_ndrange(s.queue, s.kernel, global, chunk_local, offset);
          if (pieces.size() > 1 && !f.first) f.first = ev;
          f.last = std::move(ev);
          st.work_groups += (pe - pb) * groups_per_unit / (whole ? fine : 1);
          st.work_items += (pe - pb) * cpu_local[split_dim] * (spec.global_items() / spec.global[split_dim]);
        }
        cl::check(clFlush(s.queue.get()), "clFlush");
        inflight.push_back(std::move(f));
        inflight_units += e - b;
        st.chunks++;
      }
      if (inflight.empty()) {
        // Done when the list is empty; decided under the rates lock, so that a device giving a chunk back sees
        // whether this one is still there to take it.
        bool done = gave_up;
        {
          std::lock_guard<std::mutex> l(rates.m);
          if (wl.remaining() == 0) {
            (is_cpu ? rates.cpu_active : rates.gpu_active) = false;
            done = true;
          }
        }
        if (done) break;
        // Declined the tail: wait while the other device works; take over if it stops with work left.
        set_parked(true);
        bool other_active;
        {
          std::lock_guard<std::mutex> l(rates.m);
          other_active = is_cpu ? rates.gpu_active : rates.cpu_active;
        }
        if (!other_active) {
          set_parked(false);
          std::lock_guard<std::mutex> l(rates.m);
          (is_cpu ? rates.gpu : rates.cpu) = 0;  // nothing to yield to any more
          continue;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        continue;
      }
      set_parked(false);
      const auto t = cl::event_times(inflight.front().last);
      const cl_ulong start =
          inflight.front().first ? std::min(t.start, cl::event_times(inflight.front().first).start) : t.start;
      const double run = double(t.end - start) * 1e-6;
      const double kms = std::max(run, 1e-3);
      st.busy_ms += run;
      const double r = double(inflight.front().n) / kms;
      rate = rate <= 0 ? r : 0.5 * rate + 0.5 * r;
      {
        std::lock_guard<std::mutex> l(rates.m);
        (is_cpu ? rates.cpu : rates.gpu) = rate;
      }
      inflight_units -= inflight.front().n;
      inflight.pop_front();
    }
    st.finish_ms = ms_since(t0);
    std::lock_guard<std::mutex> l(rates.m);
    (is_cpu ? rates.cpu_active : rates.gpu_active) = false;
  }

  LaunchResult launch(std::vector<ArgData>& args, const Config& cfg, double static_share = -1) {
    if (args.size() != spec.args.size())
      throw std::invalid_argument("launch of '" + spec.name + "': " + std::to_string(args.size()) +
                                  " arguments given, the spec has " + std::to_string(spec.args.size()));
    LaunchResult res;
    res.config = cfg;
    const bool use_cpu = cfg.cpu > 0, use_gpu = cfg.gpu > 0;
    if (use_cpu && !sel.cpu) throw std::invalid_argument("configuration " + to_string(cfg) + " needs a CPU device");
    if (use_gpu && !sel.gpu)
      throw std::invalid_argument("configuration " + to_string(cfg) +
                                  " needs a GPU device, and none is selected (`dop devices` lists them; without a "
                                  "GPU, POCL_DEVICES=\"pthread pthread\" gives PoCL a second device for the GPU role)");
    if (!use_cpu && !use_gpu) throw std::invalid_argument("configuration " + to_string(cfg) + " uses no device");

    // Resolve the configuration into devices (built lazily, outside the timed region).
    Side* cpu = nullptr;
    Side* gpu = nullptr;
    if (use_cpu) {
      const int total = int(sel.cpu->compute_units);
      res.cpu_cores = std::clamp(int(std::lround(cfg.cpu * total)), 1, total);
      cpu = &cpu_side(res.cpu_cores);
      res.cpu.device = cpu->id;
      res.cpu.units = res.cpu_cores;
    }
    if (use_gpu) {
      res.gpu_alloc = std::clamp(int(std::lround(cfg.gpu * 8)), 1, 8);
      const bool throttle = res.gpu_alloc < 8;
      if (throttle && opt.malleable_source.empty()) {
        res.note = "GPU ran unthrottled (" + std::to_string(res.gpu_alloc) + "/8 asked): " +
                   (opt.malleable_note.empty() ? std::string("no malleable form") : opt.malleable_note);
        res.gpu_alloc = 8;
      }
      const bool use_malleable = res.gpu_alloc < 8 || (opt.malleable_at_full && !opt.malleable_source.empty());
      gpu = &gpu_side(use_malleable);
      res.gpu_throttled = use_malleable;
      res.gpu.device = gpu->id;
      res.gpu.units = res.gpu_alloc;
    }
    if (!local_note.empty()) res.note += (res.note.empty() ? "" : "; ") + local_note;

    MemoryMode mode = opt.memory;
    if (mode == MemoryMode::automatic)
      mode = (!gpu || sel.gpu->host_unified_memory) ? MemoryMode::zero_copy : MemoryMode::copy;
    res.memory = mode;
    const bool resident = mode == MemoryMode::resident;
    // In place: both devices work on the host's bytes (zero-copy buffers over them, or the SVM they live in).
    const bool in_place = mode == MemoryMode::zero_copy || mode == MemoryMode::svm;
    if (mode == MemoryMode::svm)
      for (size_t i = 0; i < spec.args.size(); ++i)
        if (spec.args[i].kind == ArgKind::buffer && args[i].storage.get_allocator().memory != svm)
          throw std::invalid_argument("launch of '" + spec.name + "': argument '" + spec.args[i].name +
                                      "' is not in this executor's shared virtual memory (memory mode svm): make "
                                      "the arguments with Executor::make_args or Executor::place");
    const size_t unit_items = cpu_local[split_dim];
    // Copy mode with a footprint: buffers whose every access is bounded go to the GPU slice by slice, as its chunks
    // need them, and come back only where it may have written.
    std::vector<char> sliced(spec.args.size(), 0);
    std::optional<FootprintEvaluator> footprint;  // per launch: the scalars and the launch are evaluated once
    if (gpu && mode == MemoryMode::copy && !opt.footprint.empty()) {
      footprint.emplace(opt.footprint, spec, args, local);
      const auto whole = (*footprint)(0, units * unit_items);
      for (size_t i = 0; i < spec.args.size(); ++i) sliced[i] = whole[i].read && whole[i].write;
      if (std::find(sliced.begin(), sliced.end(), 1) == sliced.end()) footprint.reset();  // nothing to slice
    }
    if (gpu && !in_place) {
      for (size_t i = 0; i < spec.args.size(); ++i) {
        const ArgSpec& a = spec.args[i];
        if (a.kind != ArgKind::buffer) continue;
        auto& b = gpu->gpu_buffers[i];
        if (!b) b = cl::create_buffer(gpu->ctx, a.access == Access::read ? CL_MEM_READ_ONLY : CL_MEM_READ_WRITE,
                                      a.bytes());
        if (opt.poison_gpu_buffers) {
          const cl_uchar garbage = 0xA5;
          cl::check(clEnqueueFillBuffer(gpu->queue.get(), b.get(), &garbage, 1, 0, a.bytes(), 0, nullptr, nullptr),
                    "clEnqueueFillBuffer", "argument '" + a.name + "'");
        }
        if (resident)  // resident data: on the GPU before the timed region
          cl::check(clEnqueueWriteBuffer(gpu->queue.get(), b.get(), CL_FALSE, 0, a.bytes(), args[i].data(), 0,
                                         nullptr, nullptr),
                    "clEnqueueWriteBuffer", "argument '" + a.name + "'");
      }
      cl::finish(gpu->queue);
    }

    const auto t0 = Clock::now();
    // Host-side buffers: CPU (and zero-copy GPU) use the host memory in place.
    std::vector<cl::Buffer> cpu_bufs(spec.args.size()), gpu_host_bufs(spec.args.size());
    // In svm mode there are none: kernels get the arguments' SVM pointers (set_args with empty lists).
    const size_t n_mems = mode == MemoryMode::svm ? 0 : spec.args.size();
    std::vector<cl_mem> cpu_mems(n_mems, nullptr), gpu_mems(n_mems, nullptr);
    // Copy mode: what goes to the GPU (argument, bytes), and the initial contents of what it may write (for the
    // merge; the staged input copy where the memory is pinned, else a copy of its own).
    std::vector<Piece> inputs;
    std::vector<const unsigned char*> initial(spec.args.size(), nullptr);
    std::vector<std::vector<uint64_t>> snapshot(spec.args.size());
    const bool both_sides = cpu && gpu;
    for (size_t i = 0; i < spec.args.size(); ++i) {
      const ArgSpec& a = spec.args[i];
      if (a.kind != ArgKind::buffer || mode == MemoryMode::svm) continue;  // SVM: pointers, no buffers
      const cl_mem_flags acc = a.access == Access::read ? CL_MEM_READ_ONLY : CL_MEM_READ_WRITE;
      if (cpu) {
        cpu_bufs[i] = cl::create_buffer(cpu->ctx, acc | CL_MEM_USE_HOST_PTR, a.bytes(), args[i].data());
        cpu_mems[i] = cpu_bufs[i].get();
      }
      if (gpu && mode == MemoryMode::zero_copy) {
        gpu_host_bufs[i] = cl::create_buffer(gpu->ctx, acc | CL_MEM_USE_HOST_PTR, a.bytes(), args[i].data());
        gpu_mems[i] = gpu_host_bufs[i].get();
      } else if (gpu) {
        gpu_mems[i] = gpu->gpu_buffers.at(i).get();
        if (!resident && !sliced[i]) inputs.push_back({i, 0, a.bytes()});
        if (a.access != Access::read && both_sides) {
          if (unsigned char* p = resident ? nullptr : gpu->pinned(gpu->pinned_in, i, a.bytes())) {
            initial[i] = p;
          } else {
            snapshot[i].assign(args[i].storage.begin(), args[i].storage.end());
            initial[i] = reinterpret_cast<const unsigned char*>(snapshot[i].data());
          }
        }
      }
    }
    WorkList wl(units);
    Rates rates;
    rates.cpu_active = cpu != nullptr;
    rates.gpu_active = gpu != nullptr;
    // Under dynamic distribution the GPU gives up staging (whole inputs, or a sliced chunk) when the CPU, at its
    // measured rate, would finish `units_left` before `bytes_left` more bytes had arrived at `bytes_per_ms`: the
    // copies would only take memory bandwidth from the CPU.
    auto cpu_finishes_first = [&](size_t units_left, size_t bytes_left, double bytes_per_ms) {
      double cpu_rate;
      {
        std::lock_guard<std::mutex> l(rates.m);
        cpu_rate = rates.cpu_active ? rates.cpu : 0;
      }
      return cpu_rate > 0 && bytes_per_ms > 0 && double(units_left) / cpu_rate < double(bytes_left) / bytes_per_ms;
    };
    // Threads for host-side copies: the GPU driver thread, plus the cores this configuration leaves idle.
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    const unsigned idle_cores =
        sel.cpu ? unsigned(std::max(0, int(sel.cpu->compute_units) - (cpu ? res.cpu_cores : 0))) : hw;
    const unsigned copy_threads = std::clamp(std::min(idle_cores, hw), 1u, 8u);
    // One piece of an input to the GPU: copied into its pinned staging memory (allocated before the copy threads
    // start, so the lookup is read-only) where there is some, and its DMA enqueued at once.
    auto send_piece = [&](const Piece& p) {
      const unsigned char* src = static_cast<const unsigned char*>(args[p.arg].data()) + p.offset;
      const auto pin = gpu->pinned_in.find(p.arg);
      if (pin != gpu->pinned_in.end()) {
        unsigned char* dst = static_cast<unsigned char*>(pin->second.ptr) + p.offset;
        std::memcpy(dst, src, p.bytes);
        src = dst;
      }
      cl_event ev = nullptr;
      cl::check(clEnqueueWriteBuffer(gpu->queue.get(), gpu_mems[p.arg], CL_FALSE, p.offset, p.bytes, src, 0, nullptr,
                                     &ev),
                "clEnqueueWriteBuffer", "argument '" + spec.args[p.arg].name + "'");
      return cl::Event(ev);
    };
    // Inputs to the GPU, run by its driver thread while the CPU already computes: each piece is copied into pinned
    // memory (by several threads) and its DMA enqueued at once, so the link works while the next piece is copied.
    // Staging stops as soon as the work list is empty: the CPU took everything, and the GPU needs no inputs (with
    // every core computing, the copy threads get little CPU time, and waiting for them would only add latency).
    // Under dynamic distribution the GPU also gives up when, at the CPU's measured rate, the CPU would finish what
    // is left before the rest of the inputs would be staged at the rate seen so far: the copies would only take
    // memory bandwidth from the CPU. Returns false when the GPU gave up.
    auto stage_inputs = [&](bool may_give_up) -> bool {
      if (inputs.empty()) return true;
      const auto ts = Clock::now();
      const auto pieces = make_pieces(inputs, copy_threads);
      std::vector<cl::Event> events(pieces.size());
      size_t total_bytes = 0;
      for (const auto& g : inputs) {
        gpu->pinned(gpu->pinned_in, g.arg, g.bytes);  // allocate before the threads
        total_bytes += g.bytes;
      }
      std::atomic<size_t> staged{0};
      std::atomic<bool> gave_up{false};
      for_pieces(pieces.size(), copy_threads, [&](size_t k) {
        const size_t left = wl.remaining();
        if (left == 0 || gave_up) return;
        if (may_give_up && cpu && staged > 0 &&
            cpu_finishes_first(left, total_bytes - staged, double(staged) / ms_since(ts))) {
          gave_up = true;
          return;
        }
        events[k] = send_piece(pieces[k]);
        staged += pieces[k].bytes;
      });
      cl::check(clFlush(gpu->queue.get()), "clFlush");
      // Claim no work before the inputs have arrived: work claimed while the copy runs would sit queued behind
      // it while the CPU, already running, runs out of work and waits.
      for (auto& e : events) {
        if (!e) continue;  // not staged: nothing was left to run
        cl_event ev = e.get();
        cl::check(clWaitForEvents(1, &ev), "clWaitForEvents", "input copies to " + gpu->id);
      }
      res.h2d_ms += ms_since(ts);
      res.h2d_bytes += staged;
      return !gave_up;
    };
    // Sliced buffers reach the GPU chunk by chunk: before a chunk of units [b, e) is enqueued, the bytes it may read
    // or write that the GPU does not have yet are staged (through pinned memory, by the idle cores) and their DMA
    // enqueued ahead of the kernel. The GPU claims from the back of the work list, so what it has stays one range.
    std::vector<ByteRange> staged(spec.args.size());
    std::function<cl::Event(size_t, size_t)> stage_chunk;
    size_t chunk_bytes_staged = 0;  // staging rate of this launch's chunks so far
    double chunk_staging_ms = 0;
    const bool may_give_up_chunks = cpu && static_share < 0;
    if (footprint)
      stage_chunk = [&](size_t b, size_t e) {
        const auto need = (*footprint)(b * unit_items, e * unit_items);
        const std::vector<ByteRange> before_chunk = staged;
        std::vector<Piece> segments;
        for (size_t i = 0; i < spec.args.size(); ++i) {
          if (!sliced[i]) continue;
          ByteRange n = need[i].read.value_or(ByteRange{}), w = need[i].write.value_or(ByteRange{});
          if (n.empty()) n = w;
          else if (!w.empty()) n = {std::min(n.lo, w.lo), std::max(n.hi, w.hi)};
          if (n.empty()) continue;
          ByteRange& have = staged[i];
          if (have.empty()) {
            segments.push_back({i, size_t(n.lo), size_t(n.hi - n.lo)});
            have = n;
            continue;
          }
          if (n.lo < have.lo) segments.push_back({i, size_t(n.lo), size_t(have.lo - n.lo)});
          if (n.hi > have.hi) segments.push_back({i, size_t(have.hi), size_t(n.hi - have.hi)});
          have = {std::min(have.lo, n.lo), std::max(have.hi, n.hi)};
        }
        if (segments.empty()) return cl::Event{};
        const auto ts = Clock::now();
        const auto pieces = make_pieces(segments, copy_threads);
        for (const auto& g : segments) gpu->pinned(gpu->pinned_in, g.arg, spec.args[g.arg].bytes());
        std::vector<cl::Event> events(pieces.size());
        // Under dynamic distribution the GPU gives the chunk up, as it gives up whole inputs, when at the CPU's
        // measured rate the CPU would finish the chunk and what is left before the chunk's inputs had arrived at the
        // staging rate measured so far (this launch's): the copies would only take memory bandwidth from the CPU.
        size_t total = 0;
        for (const auto& g : segments) total += g.bytes;
        std::atomic<size_t> sent{0};
        std::atomic<bool> give_up{false};
        const size_t left = wl.remaining() + (e - b);
        for_pieces(pieces.size(), copy_threads, [&](size_t k) {
          if (give_up) return;
          const double bw = chunk_bytes_staged > 0 ? double(chunk_bytes_staged) / chunk_staging_ms
                            : sent > 0 ? double(sent) / ms_since(ts) : 0;
          if (may_give_up_chunks && cpu_finishes_first(left, total - sent, bw)) {
            give_up = true;
            return;
          }
          events[k] = send_piece(pieces[k]);
          sent += pieces[k].bytes;
        });
        if (give_up) {
          {
            std::lock_guard<std::mutex> l(rates.m);
            if (rates.cpu_active && wl.untake_back(b, e)) {
              res.h2d_bytes += sent;
              res.h2d_ms += ms_since(ts);
              staged = before_chunk;  // what arrived of this chunk's bytes is not used
              throw GiveUp{};
            }
          }
          // The CPU has finished: nobody else would run the chunk, so its inputs go after all.
          for_pieces(pieces.size(), copy_threads, [&](size_t k) {
            if (!events[k]) events[k] = send_piece(pieces[k]), sent += pieces[k].bytes;
          });
        }
        res.h2d_bytes += sent;
        res.h2d_ms += ms_since(ts);
        chunk_bytes_staged += total;
        chunk_staging_ms += ms_since(ts);
        return std::move(events.front());
      };
    if (cpu) set_args(*cpu, args, cpu_mems, 8, 8);
    if (gpu) set_args(*gpu, args, gpu_mems, 8, res.gpu_alloc);

    // First chunks: a device alone takes everything in one chunk; together, each starts with a small probe chunk
    // (the GPU's large enough to fill it) and adapts from its measured rate.
    size_t cpu_first = gpu ? std::max<size_t>(1, units / 64) : units;
    size_t gpu_first = units;
    if (static_share >= 0) {  // static split: one chunk each, nothing left to adapt
      cpu_first = static_cast<size_t>(std::lround(static_share * double(units)));
      gpu_first = units - cpu_first;
      if (!cpu && cpu_first > 0) throw std::invalid_argument("a static split with a CPU share needs a CPU device");
      if (!gpu && gpu_first > 0) throw std::invalid_argument("a static split with a GPU share needs a GPU device");
    } else if (cpu) {
      const size_t fill_groups = size_t(sel.gpu->compute_units) * 4;
      gpu_first = std::clamp<size_t>((fill_groups + groups_per_unit - 1) / groups_per_unit * fine, units / 64,
                                     units / 4);
      gpu_first = std::max<size_t>(gpu_first, 1);
    }

    // Chunk minimums: a work-group runs on one CPU core, so a CPU chunk gives every core of the sub-device at least
    // one; a GPU chunk gives every compute unit one.
    auto units_for = [&](size_t groups) { return std::max<size_t>(1, (groups + groups_per_unit - 1) / groups_per_unit); };
    const size_t cpu_min = cpu ? units_for(size_t(res.cpu_cores)) : 1;
    const size_t gpu_min = gpu ? units_for(size_t(sel.gpu->compute_units)) * fine : 1;
    // The first CPU chunk fills the cores, but takes no more than a quarter of the work: the GPU's rate is unknown.
    if (static_share < 0 && cpu && gpu) cpu_first = std::min(std::max(cpu_first, cpu_min), (units + 3) / 4);

    // Warm start: both rates and the share at which the devices finish together are known from earlier launches.
    // The GPU claims its share less the tail in one chunk (one copy, one enqueue, as a static split would); the CPU
    // claims adaptively from the start; a device whose share rounds to nothing sits the launch out.
    const bool dynamic_both = cpu && gpu && static_share < 0;
    Warm* learned = nullptr;
    Warm::Way way = Warm::Way::both;
    bool run_cpu = cpu != nullptr, run_gpu = gpu != nullptr;
    double cpu_seed = 0, gpu_seed = 0;
    if (dynamic_both && opt.warm_start) {
      learned = &warm[warm_key(res, args)];
      if (learned->known()) {
        const double s = learned->share;
        way = learned->choose(double(units), opt);
        res.warm = true;
        res.start_cpu_share = s;
        run_cpu = way != Warm::Way::gpu_alone;
        run_gpu = way != Warm::Way::cpu_alone;
        cpu_seed = learned->cpu_rate;
        gpu_seed = learned->gpu_rate;
        gpu_first = size_t((1 - s) * double(units) * (1 - std::clamp(opt.warm_tail, 0.0, 1.0)));
        if (fine > 1) gpu_first = gpu_first / fine * fine;
        cpu_first = 0;
        std::lock_guard<std::mutex> l(rates.m);
        rates.cpu = cpu_seed;
        rates.gpu = gpu_seed;
        rates.cpu_active = run_cpu;
        rates.gpu_active = run_gpu;
      }
    }
    std::exception_ptr cpu_err, gpu_err;
    std::thread gpu_thread;
    if (run_gpu)
      gpu_thread = std::thread([&] {
        try {
          if (stage_inputs(static_share < 0)) {
            drive(*gpu, false, wl, rates, gpu_first, gpu_min, t0, res.gpu, static_share >= 0, gpu_seed, stage_chunk);
          } else {
            std::lock_guard<std::mutex> l(rates.m);
            rates.gpu_active = false;  // the CPU takes the rest, without the cap for an unknown partner
          }
        } catch (...) {
          gpu_err = std::current_exception();
          std::lock_guard<std::mutex> l(rates.m);
          rates.gpu_active = false;
        }
      });
    if (run_cpu) {
      try {
        drive(*cpu, true, wl, rates, cpu_first, cpu_min, t0, res.cpu, static_share >= 0, cpu_seed);
      } catch (...) {
        cpu_err = std::current_exception();
        std::lock_guard<std::mutex> l(rates.m);
        rates.cpu_active = false;  // a parked GPU driver must not wait for it
      }
    }
    if (gpu_thread.joinable()) gpu_thread.join();
    if (cpu_err) std::rethrow_exception(cpu_err);
    if (gpu_err) std::rethrow_exception(gpu_err);
    if (wl.remaining() != 0)
      throw std::runtime_error("launch of '" + spec.name + "': " + std::to_string(wl.remaining()) +
                               " work units were not run");

    // Outputs back to host memory. CPU first (a no-op for in-place buffers), then the GPU's writes on top.
    auto sync_in_place = [&](Side& s, std::vector<cl::Buffer>& bufs) {
      for (size_t i = 0; i < spec.args.size(); ++i) {
        const ArgSpec& a = spec.args[i];
        if (a.kind != ArgKind::buffer || a.access == Access::read || !bufs[i]) continue;
        cl_int err = CL_SUCCESS;
        void* p = clEnqueueMapBuffer(s.queue.get(), bufs[i].get(), CL_TRUE, CL_MAP_READ, 0, a.bytes(), 0, nullptr,
                                     nullptr, &err);
        cl::check(err, "clEnqueueMapBuffer", "argument '" + a.name + "'");
        cl::check(clEnqueueUnmapMemObject(s.queue.get(), bufs[i].get(), p, 0, nullptr, nullptr),
                  "clEnqueueUnmapMemObject");
      }
      cl::finish(s.queue);
    };
    if (cpu) sync_in_place(*cpu, cpu_bufs);
    if (gpu && mode == MemoryMode::zero_copy) sync_in_place(*gpu, gpu_host_bufs);
    // The GPU's writes come back only if it ran anything; they are merged only if the CPU ran something too
    // (otherwise the GPU's copy is the whole result). Reads go into pinned memory piece by piece; every core is
    // free by now, so several threads copy (or merge) each piece into host memory as soon as it has arrived.
    // Resident data: the timed region ends here, with every result where its device computed it.
    if (resident) res.total_ms = ms_since(t0);
    if (gpu && !in_place && res.gpu.work_groups > 0) {
      const auto ts = Clock::now();
      const bool both = cpu && res.cpu.work_groups > 0;
      // The GPU ran units [boundary, units), the CPU [0, boundary). A sliced buffer comes back only over the bytes
      // the GPU may have written; it is merged only where the CPU may have written there too (the GPU received
      // those bytes' initial contents, so elsewhere its copy is the result).
      const size_t boundary = wl.front();
      std::vector<ArgRanges> gpu_w, cpu_w;
      if (footprint) {
        gpu_w = (*footprint)(boundary * unit_items, units * unit_items);
        if (both) cpu_w = (*footprint)(0, boundary * unit_items);
      }
      std::vector<Piece> outputs;
      std::vector<char> merge_arg(spec.args.size(), both);
      for (size_t i = 0; i < spec.args.size(); ++i) {
        if (spec.args[i].kind != ArgKind::buffer || spec.args[i].access == Access::read) continue;
        if (!sliced[i]) {
          outputs.push_back({i, 0, spec.args[i].bytes()});
          continue;
        }
        // Every byte the GPU wrote lies in a chunk's write range, and it received each of those before the chunk.
        ByteRange w = gpu_w.at(i).write.value_or(ByteRange{});
        w = {std::max(w.lo, staged[i].lo), std::min(w.hi, staged[i].hi)};
        if (w.empty()) continue;
        outputs.push_back({i, size_t(w.lo), size_t(w.hi - w.lo)});
        const ByteRange c = both ? cpu_w.at(i).write.value_or(ByteRange{}) : ByteRange{};
        merge_arg[i] = !c.empty() && c.lo < w.hi && w.lo < c.hi;
      }
      const unsigned threads = std::min(hw, 8u);
      const auto pieces = make_pieces(outputs, threads);
      std::vector<unsigned char*> dst(spec.args.size(), nullptr);
      std::vector<std::vector<uint64_t, PageAlignedAllocator<uint64_t>>> staging(spec.args.size());
      for (const Piece& g : outputs) {
        const size_t i = g.arg;
        dst[i] = gpu->pinned(gpu->pinned_out, i, spec.args[i].bytes());
        if (!dst[i] && merge_arg[i]) {
          staging[i].resize(args[i].storage.size());
          dst[i] = reinterpret_cast<unsigned char*>(staging[i].data());
        } else if (!dst[i]) {
          dst[i] = static_cast<unsigned char*>(args[i].data());  // read straight into host memory
        }
      }
      std::vector<cl::Event> events(pieces.size());
      for (size_t k = 0; k < pieces.size(); ++k) {
        const Piece& p = pieces[k];
        cl_event ev = nullptr;
        cl::check(clEnqueueReadBuffer(gpu->queue.get(), gpu_mems[p.arg], CL_FALSE, p.offset, p.bytes,
                                      dst[p.arg] + p.offset, 0, nullptr, &ev),
                  "clEnqueueReadBuffer", "argument '" + spec.args[p.arg].name + "'");
        events[k] = cl::Event(ev);
      }
      cl::check(clFlush(gpu->queue.get()), "clFlush");
      std::atomic<int64_t> merge_ns{0};
      for_pieces(pieces.size(), threads, [&](size_t k) {
        const Piece& p = pieces[k];
        cl_event ev = events[k].get();
        cl::check(clWaitForEvents(1, &ev), "clWaitForEvents", "output copies from " + gpu->id);
        unsigned char* host = static_cast<unsigned char*>(args[p.arg].data()) + p.offset;
        const unsigned char* got = dst[p.arg] + p.offset;
        if (got == host) return;
        if (!merge_arg[p.arg]) {
          std::memcpy(host, got, p.bytes);
          return;
        }
        const auto tm = Clock::now();
        merge(type_size(spec.args[p.arg].type), host, got, initial[p.arg] + p.offset, p.bytes);
        merge_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - tm).count();
      });
      for (const auto& g : outputs) res.d2h_bytes += g.bytes;
      res.d2h_ms = ms_since(ts);
      res.merge_ms = double(merge_ns.load()) / 1e6 / double(std::min<size_t>(threads, pieces.size()));
    }
    if (!resident) res.total_ms = ms_since(t0);

    // What this launch teaches: the share at which both devices would have finished together (the GPU's part of
    // the time includes reading its outputs back), averaged into the learned one, and the devices' last rates.
    if (dynamic_both) {
      const size_t cpu_units = wl.front();
      res.balanced_cpu_share =
          learn_cpu_share(double(cpu_units), res.cpu.finish_ms, double(units - cpu_units),
                          res.gpu.finish_ms + (resident ? 0.0 : res.d2h_ms));
      if (learned) {
        // A device left out measured nothing about the balance; a launch that left one out by choice says how
        // fast the other is alone.
        const bool alone = way != Warm::Way::both;  // only a warm launch leaves a device out by choice
        std::lock_guard<std::mutex> l(rates.m);
        learned->learn(alone ? -1 : res.balanced_cpu_share, rates.cpu, rates.gpu, res.warm, way, res.total_ms);
      }
    }
    return res;
  }

  pred::Decision decide(const std::vector<ArgData>& args) const {
    if (!opt.model || !opt.model->predictor)
      throw std::logic_error("auto launch of '" + spec.name + "': the executor has no model (ExecutorOptions::model)");
    pred::LaunchShape shape;
    shape.work_dim = unsigned(spec.global.size());
    for (size_t d = 0; d < spec.global.size(); ++d) {
      shape.global[d] = spec.global[d];
      shape.local[d] = local[d];
    }
    const pred::ArgValues values = integer_scalars(spec, args);
    const std::string id = opt.model->kernel_id.empty() ? spec.kernel_file + ":" + spec.kernel_name : opt.model->kernel_id;
    try {
      return opt.model->predictor->decide(id, opt.model->code, shape, values);
    } catch (const pred::ModelError& e) {
      throw pred::ModelError(std::string(e.what()) + " (kernel '" + spec.kernel_name + "' of " + spec.path + ")");
    }
  }

  // Elements the GPU changed (its copy differs from the initial contents) replace the host's, over `bytes`
  // bytes of elements of `size` bytes.
  static void merge(size_t size, unsigned char* host, const unsigned char* gpu, const unsigned char* initial,
                    size_t bytes) {
    auto loop = [&](auto tag) {
      using T = decltype(tag);
      for (size_t i = 0; i + sizeof(T) <= bytes; i += sizeof(T)) {
        T g, i0;
        std::memcpy(&g, gpu + i, sizeof(T));
        std::memcpy(&i0, initial + i, sizeof(T));
        if (g != i0) std::memcpy(host + i, &g, sizeof(T));
      }
    };
    switch (size) {
      case 1: loop(uint8_t{}); break;
      case 2: loop(uint16_t{}); break;
      case 4: loop(uint32_t{}); break;
      default: loop(uint64_t{}); break;
    }
  }
};

Executor::Executor(const Spec& spec, const std::string& source, const cl::Selection& devices, ExecutorOptions options)
    : impl_(std::make_unique<Impl>(spec, source, devices, std::move(options))) {}
Executor::~Executor() = default;

void Executor::rebind(const Spec& spec) {
  std::lock_guard<std::mutex> lock(impl_->launch_mutex);
  impl_->rebind(spec);
}

LaunchResult Executor::launch(std::vector<ArgData>& args, const Config& config) {
  std::lock_guard<std::mutex> lock(impl_->launch_mutex);
  return impl_->launch(args, config);
}

std::vector<ArgData> Executor::make_args() {
  std::lock_guard<std::mutex> lock(impl_->launch_mutex);
  return dop::make_args(impl_->spec, impl_->arg_memory());
}

std::vector<ArgData> Executor::place(const std::vector<ArgData>& args) {
  std::lock_guard<std::mutex> lock(impl_->launch_mutex);
  return copy_args(args, impl_->arg_memory());
}

LaunchResult Executor::launch_static(std::vector<ArgData>& args, const Config& config, double cpu_share) {
  if (!(cpu_share >= 0 && cpu_share <= 1))
    throw std::invalid_argument("static CPU share " + std::to_string(cpu_share) + " is not in [0,1]");
  std::lock_guard<std::mutex> lock(impl_->launch_mutex);
  return impl_->launch(args, config, cpu_share);
}

pred::Decision Executor::decide(const std::vector<ArgData>& args) {
  std::lock_guard<std::mutex> lock(impl_->launch_mutex);
  return impl_->decide(args);
}

void Executor::forget_warm_starts() {
  std::lock_guard<std::mutex> lock(impl_->launch_mutex);
  impl_->warm.clear();
}

double learn_cpu_share(double cpu_units, double cpu_ms, double gpu_units, double gpu_ms) {
  if (gpu_units <= 0) return 1;
  if (cpu_units <= 0) return 0;
  const double c = cpu_units / std::max(cpu_ms, 1e-6), g = gpu_units / std::max(gpu_ms, 1e-6);
  return c / (c + g);
}

LaunchResult Executor::launch_auto(std::vector<ArgData>& args) {
  std::lock_guard<std::mutex> lock(impl_->launch_mutex);
  const auto t = Clock::now();
  const pred::Decision d = impl_->decide(args);
  const double us = ms_since(t) * 1e3;
  LaunchResult r = impl_->launch(args, Config{d.config.cpu, d.config.gpu});
  r.automatic = true;
  r.predicted = d.predicted;
  r.decide_us = us;
  return r;
}

std::vector<size_t> Executor::local_size() const {
  std::lock_guard<std::mutex> lock(impl_->launch_mutex);
  return impl_->local;
}

const Spec& Executor::spec() const { return impl_->spec; }
int Executor::cpu_cores_total() const { return impl_->sel.cpu ? int(impl_->sel.cpu->compute_units) : 0; }

}  // namespace dop
