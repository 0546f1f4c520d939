// The work list's per-device driver (Dopia Algorithm 1, adaptive chunks): chunks and their geometry, claiming,
// two chunks in flight, rates and the end game; the first chunks and chunk minimums of a cold launch; and the two
// drivers run together (the GPU's in a thread of its own, after staging its inputs).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <stdexcept>

#include "engine/engine.hpp"

namespace dop {

namespace {
std::atomic<void (*)()> g_thread_hook{nullptr};
}  // namespace

void set_engine_thread_hook(void (*hook)()) { g_thread_hook = hook; }

void engine::thread_started() {
  if (void (*hook)() = g_thread_hook.load()) hook();
}

namespace {
// DOP_TEST_FAIL_CHUNK=cpu:N or gpu:N, for tests only (docs/intercept.md): the N-th chunk that device's driver claims
// in this process fails, once, as a device's enqueue error would (the chunk is claimed, its inputs staged, nothing of
// it run). Unset, malformed or N < 1: never.
void fail_chunk_for_tests(bool is_cpu) {
  static const long nth = [] {
    const char* e = std::getenv("DOP_TEST_FAIL_CHUNK");
    if (!e || !(std::strncmp(e, "cpu:", 4) == 0 || std::strncmp(e, "gpu:", 4) == 0)) return 0L;
    char* end = nullptr;
    const long n = std::strtol(e + 4, &end, 10);
    return *end == '\0' && n > 0 ? (e[0] == 'c' ? n : -n) : 0L;  // negative: the GPU's
  }();
  if (nth == 0 || (nth > 0) != is_cpu) return;
  static std::atomic<long> claimed{0};
  if (++claimed == std::labs(nth))
    throw cl::Error(CL_OUT_OF_RESOURCES, "clEnqueueNDRangeKernel",
                    std::string("DOP_TEST_FAIL_CHUNK: the ") + (is_cpu ? "CPU" : "GPU") + "'s chunk " +
                        std::to_string(std::labs(nth)) + " failed on purpose");
}
}  // namespace

using engine::Side;

// Launch geometry of units [b, e) in spec work-groups (`whole`) or CPU ones, with the range form's extra
// dimension for kernels of fewer than 3.
void Executor::Impl::chunk_geometry(size_t b, size_t e, bool whole, std::vector<size_t>& offset,
                                    std::vector<size_t>& global, std::vector<size_t>& chunk_local) const {
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
std::vector<std::tuple<size_t, size_t, bool>> Executor::Impl::chunk_pieces(size_t b, size_t e, bool is_cpu) const {
  if (fine == 1) return {{b, e, true}};
  if (is_cpu) return {{b, e, false}};
  const size_t hb = std::min(e, (b + fine - 1) / fine * fine), te = std::max(hb, e / fine * fine);
  std::vector<std::tuple<size_t, size_t, bool>> p;
  if (b < hb) p.emplace_back(b, hb, false);
  if (hb < te) p.emplace_back(hb, te, true);
  if (te < e) p.emplace_back(te, e, false);
  return p;
}

// Drives one device: claims chunks, keeps two in flight, adapts chunk sizes. Returns via stats. `before`, when
// given, enqueues what a chunk of units [b, e) needs first (its input slices) and returns the first such event:
// the chunk's measured time then includes its copies.
// `seed_rate` > 0 (a warm start): the device's rate is known from earlier launches, and its first claim is
// `first_chunk` when that is not 0, then adaptive.
void Executor::Impl::drive(Side& s, bool is_cpu, WorkList& wl, Rates& rates, size_t first_chunk, size_t min_chunk,
                           Clock::time_point t0, DeviceStats& st, bool static_chunks, double seed_rate,
                           const std::function<cl::Event(size_t, size_t)>& before) {
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
    if (fixed) return std::exchange(first_chunk, 0);           // static split: exactly one chunk
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
        } catch (const engine::GiveUp&) {  // the chunk went back to the list, for the other device
          gave_up = true;
          break;
        }
      }
      fail_chunk_for_tests(is_cpu);
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
  st.finish_ms = engine::ms_since(t0);
  std::lock_guard<std::mutex> l(rates.m);
  (is_cpu ? rates.cpu_active : rates.gpu_active) = false;
}

// First chunks and chunk minimums of a launch as if cold (warm_start may then start it from a learned share).
void Executor::Impl::plan_chunks(Launch& l) {
  Side* const cpu = l.cpu;
  Side* const gpu = l.gpu;
  const double static_share = l.static_share;
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
    gpu_first = std::clamp<size_t>((fill_groups + groups_per_unit - 1) / groups_per_unit * fine, units / 64, units / 4);
    gpu_first = std::max<size_t>(gpu_first, 1);
  }

  // Chunk minimums: a work-group runs on one CPU core, so a CPU chunk gives every core of the sub-device at least
  // one; a GPU chunk gives every compute unit one.
  auto units_for = [&](size_t groups) { return std::max<size_t>(1, (groups + groups_per_unit - 1) / groups_per_unit); };
  l.cpu_min = cpu ? units_for(size_t(l.res.cpu_cores)) : 1;
  l.gpu_min = gpu ? units_for(size_t(sel.gpu->compute_units)) * fine : 1;
  // The first CPU chunk fills the cores, but takes no more than a quarter of the work: the GPU's rate is unknown.
  if (static_share < 0 && cpu && gpu) cpu_first = std::min(std::max(cpu_first, l.cpu_min), (units + 3) / 4);
  l.cpu_first = cpu_first;
  l.gpu_first = gpu_first;
  l.dynamic_both = cpu && gpu && static_share < 0;
  l.run_cpu = cpu != nullptr;
  l.run_gpu = gpu != nullptr;
}

// The drivers of the devices that run, together: the GPU's in a thread of its own (staging its inputs first, and
// sliced buffers before each chunk), the CPU's in the caller's. The first error is rethrown once both stopped.
void Executor::Impl::run_devices(Launch& l) {
  const bool fixed = l.static_share >= 0;
  // Threads for host-side copies: the GPU driver thread, plus the cores this launch leaves idle: every core where
  // the CPU sits it out (a warm launch at a configuration of both devices may run the GPU alone; its staging with
  // one thread took fdtd2 large 774 ms against 222 at (0, 1): docs/results.md).
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const int busy = l.run_cpu ? l.res.cpu_cores : 0;
  const unsigned idle_cores = sel.cpu ? unsigned(std::max(0, int(sel.cpu->compute_units) - busy)) : hw;
  l.copy_threads = std::clamp(std::min(idle_cores, hw), 1u, 8u);
  if (l.run_cpu && l.run_gpu) keep_initial(l);
  // Sliced buffers reach the GPU chunk by chunk; resident ones also reach host memory chunk by chunk for the CPU.
  const bool sliced = std::find(l.sliced.begin(), l.sliced.end(), 1) != l.sliced.end();
  std::function<cl::Event(size_t, size_t)> stage_chunk, cpu_chunk;
  if (sliced) stage_chunk = [this, &l](size_t b, size_t e) { return stage_slices(l, b, e); };
  if (sliced && l.data) cpu_chunk = [this, &l](size_t b, size_t e) { return resident_cpu_chunk(l, b, e); };
  std::exception_ptr cpu_err, gpu_err;
  std::thread gpu_thread;
  if (l.run_gpu)
    gpu_thread = std::thread([&] {
      engine::thread_started();
      try {
        // A warm launch does not give its inputs up: the learned share, from earlier launches' finish times with
        // their copies, is a better estimate than one made from this launch's first milliseconds of staging.
        if (stage_inputs(l, !fixed && !l.res.warm)) {
          drive(*l.gpu, false, l.wl, l.rates, l.gpu_first, l.gpu_min, l.t0, l.res.gpu, fixed, l.gpu_seed, stage_chunk);
        } else {
          std::lock_guard<std::mutex> g(l.rates.m);
          l.rates.gpu_active = false;  // the CPU takes the rest, without the cap for an unknown partner
        }
      } catch (...) {
        gpu_err = std::current_exception();
        std::lock_guard<std::mutex> g(l.rates.m);
        l.rates.gpu_active = false;
      }
    });
  if (l.run_cpu) {
    try {
      drive(*l.cpu, true, l.wl, l.rates, l.cpu_first, l.cpu_min, l.t0, l.res.cpu, fixed, l.cpu_seed, cpu_chunk);
    } catch (...) {
      cpu_err = std::current_exception();
      std::lock_guard<std::mutex> g(l.rates.m);
      l.rates.cpu_active = false;  // a parked GPU driver must not wait for it
    }
  }
  if (gpu_thread.joinable()) gpu_thread.join();
  if (cpu_err) std::rethrow_exception(cpu_err);
  if (gpu_err) std::rethrow_exception(gpu_err);
  if (l.wl.remaining() != 0)
    throw std::runtime_error("launch of '" + spec.name + "': " + std::to_string(l.wl.remaining()) +
                             " work units were not run");
}

}  // namespace dop
