// Residency of the application's buffers: each buffer's state (its byte-range sets: dop/range_set.hpp), and the
// transitions of the protocol (docs/intercept.md, "Residency"): flushes of stale bytes before the application's
// commands, dop's copy invalidated by the application's writes, fetches before and bookkeeping after a dop launch.
#include "residency.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

namespace dop::intercept {

// ---------------------------------------------------------------------------------------------------------------
// Buffer state
// ---------------------------------------------------------------------------------------------------------------

namespace {

std::atomic<bool> g_states_made{false};

REAL(clEnqueueWriteBuffer);
REAL(clEnqueueReadBuffer);
REAL(clWaitForEvents);
REAL(clReleaseEvent);
REAL(clRetainCommandQueue);
REAL(clReleaseCommandQueue);

// Writes that completed are let go, so that a buffer flushed often keeps a short list.
void prune_flushes(BufferState& st) {
  auto done = [](cl_event e) {
    cl_int status = CL_QUEUED;
    return clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) == CL_SUCCESS &&
           (status == CL_COMPLETE || status < 0);
  };
  auto it = std::remove_if(st.flushes.begin(), st.flushes.end(), [&](cl_event e) {
    if (!done(e)) return false;
    real_clReleaseEvent(e);
    return true;
  });
  st.flushes.erase(it, st.flushes.end());
}

void wait_flushes(BufferState& st) {
  if (st.flushes.empty()) return;
  real_clWaitForEvents(cl_uint(st.flushes.size()), st.flushes.data());
  release_events(st.flushes);
}

void check(cl_int err, const char* what, const BufferState& st) {
  if (err != CL_SUCCESS)
    throw cl::Error(err, std::string(what) + " of an application buffer (" + std::to_string(st.size) + " bytes)");
}

}  // namespace

BufferState::BufferState(cl_mem m, size_t bytes, cl_mem_flags flags, bool aliased) : mem(m), size(bytes) {
  eager = aliased || (flags & CL_MEM_USE_HOST_PTR) != 0;
  spec.kind = ArgKind::buffer;
  spec.type = ElemType::u8;
  spec.count = size;
}

BufferState::~BufferState() {
  wait_flushes(*this);
  if (flush_queue) real_clReleaseCommandQueue(flush_queue);
}

std::unique_lock<std::mutex> when_idle(BufferState& st) {
  std::unique_lock<std::mutex> l(st.m);
  st.idle.wait(l, [&] { return st.busy == 0; });
  return l;
}

std::shared_ptr<BufferState> buffer_state(cl_mem m, bool create) {
  auto& t = tables();
  auto l = lock_tables(t);
  auto it = t.buffers.find(m);
  if (it == t.buffers.end()) return nullptr;
  if (!it->second.state && create) {
    it->second.state = std::make_shared<BufferState>(m, it->second.size, it->second.flags, it->second.aliased);
    g_states_made.store(true, std::memory_order_release);
  }
  return it->second.state;
}

bool any_buffer_state() { return g_states_made.load(std::memory_order_acquire); }

void release_events(std::vector<cl_event>& events) {
  for (cl_event e : events) real_clReleaseEvent(e);
  events.clear();
}

WaitList::WaitList(cl_uint n, const cl_event* list, const std::vector<cl_event>& extra) {
  if (list) all.assign(list, list + n);
  all.insert(all.end(), extra.begin(), extra.end());
}

void flush_stale(BufferState& st, cl_command_queue queue, size_t lo, size_t hi, std::vector<cl_event>& waits) {
  if (!st.stale.intersects(lo, hi)) return;
  prune_flushes(st);
  const auto* base = static_cast<const unsigned char*>(st.shadow.data());
  size_t flushed = 0;
  for (const auto& [b, e] : st.stale.within(lo, hi)) {
    cl_event ev = nullptr;
    check(real_clEnqueueWriteBuffer(queue, st.mem, CL_FALSE, b, e - b, base + b, 0, nullptr, &ev),
          "clEnqueueWriteBuffer (dop's results back)", st);
    st.flushes.push_back(ev);
    clRetainEvent(ev);
    waits.push_back(ev);
    st.stale.remove(b, e);
    flushed += e - b;
  }
  if (log_enabled())
    log_line("flushed=" + std::to_string(flushed) + " buffer_bytes=" + std::to_string(st.size) +
             " (dop's results written to the application's buffer)");
}

void flush_all(BufferState& st, cl_command_queue queue) {
  if (st.stale.empty()) return;
  if (!queue) queue = st.flush_queue;
  std::vector<cl_event> waits;
  flush_stale(st, queue, 0, st.size, waits);
  if (!waits.empty()) check(real_clWaitForEvents(cl_uint(waits.size()), waits.data()), "waiting for a write", st);
  release_events(waits);
}

void app_writes(BufferState& st, size_t lo, size_t hi, bool exact) {
  st.host_valid.remove(lo, hi);
  if (exact) st.stale.remove(lo, hi);
}

bool read_from_shadow(BufferState& st, size_t lo, size_t hi, void* dst) {
  if (lo >= hi || !st.stale.intersects(lo, hi) || !st.host_valid.covers(lo, hi)) return false;
  copy_bytes(dst, static_cast<const unsigned char*>(st.shadow.data()) + lo, hi - lo);
  return true;
}

std::vector<RangeSet::Range> read_stale_from_shadow(BufferState& st, size_t lo, size_t hi, void* dst) {
  const auto* base = static_cast<const unsigned char*>(st.shadow.data());
  for (const auto& [b, e] : st.stale.within(lo, hi))
    copy_bytes(static_cast<unsigned char*>(dst) + (b - lo), base + b, e - b);
  return st.stale.missing(lo, hi);
}

namespace {

void make_shadow(BufferState& st) {
  if (st.shadow.bytes == st.size) return;
  st.shadow.spec = &st.spec;  // first use: dop's copy of the whole buffer
  st.shadow.storage.resize((st.size + 7) / 8);
  st.shadow.bytes = st.size;
}

// Stale bytes are flushed on `queue` when the application's command that needs them has no queue of its own.
void keep_flush_queue(BufferState& st, cl_command_queue queue) {
  if (st.flush_queue == queue) return;
  real_clRetainCommandQueue(queue);
  if (st.flush_queue) real_clReleaseCommandQueue(st.flush_queue);
  st.flush_queue = queue;
}

}  // namespace

bool absorb_write(BufferState& st, cl_command_queue queue, size_t lo, size_t hi, const void* src) {
  if (!st.with_dop || st.eager || st.shadow.bytes != st.size || !src || lo >= hi || hi > st.size) return false;
  wait_flushes(st);  // writes from dop's copy still in flight may be reading these bytes
  copy_bytes(static_cast<unsigned char*>(st.shadow.data()) + lo, src, hi - lo);
  st.host_valid.add(lo, hi);
  st.stale.add(lo, hi);
  if (!st.flush_queue) keep_flush_queue(st, queue);
  if (log_enabled())
    log_line("absorbed=" + std::to_string(hi - lo) + " buffer_bytes=" + std::to_string(st.size) +
             " (the application's write kept in dop's copy)");
  return true;
}

void prepare_for_dop(const KernelBuffers& kb) {
  for (const auto& mb : kb.mems) {
    auto st = buffer_state(mb.first, true);
    if (!st) continue;
    auto l = when_idle(*st);
    if (st->eager) continue;
    make_shadow(*st);
    st->with_dop = true;
  }
}

size_t bytes_in(const RangeSet& r, size_t lo, size_t hi) {
  size_t n = 0;
  for (const auto& [b, e] : r.within(lo, hi)) n += e - b;
  return n;
}

size_t fetch_for_dop(BufferState& st, cl_command_queue queue, bool will_write, const LaunchBytes& bytes) {
  make_shadow(st);
  if (will_write) wait_flushes(st);
  size_t fetched = 0;
  auto* base = static_cast<unsigned char*>(st.shadow.data());
  auto fetch = [&](size_t lo, size_t hi) {
    for (const auto& [b, e] : st.host_valid.missing(lo, std::min(hi, st.size))) {
      check(real_clEnqueueReadBuffer(queue, st.mem, CL_TRUE, b, e - b, base + b, 0, nullptr, nullptr),
            "clEnqueueReadBuffer (the application's data for dop)", st);
      st.host_valid.add(b, e);
      fetched += e - b;
    }
  };
  if (bytes.whole) {
    fetch(0, st.size);
  } else {
    fetch(bytes.read.first, bytes.read.second);
    fetch(bytes.write.first, bytes.write.second);
  }
  return fetched;
}

void dop_wrote(BufferState& st, cl_command_queue queue, size_t lo, size_t hi) {
  st.stale.add(lo, hi);
  keep_flush_queue(st, queue);
  if (st.eager) flush_all(st, queue);
}

void ready_for_engine(BufferState& st) {
  make_shadow(st);
  wait_flushes(st);  // the engine writes dop's copy, and its GPU side reads the application's
}

RangeSet app_current(const BufferState& st) {
  RangeSet r;
  for (const auto& [b, e] : st.stale.missing(0, st.size)) r.add(b, e);
  return r;
}

size_t engine_left(BufferState& st, cl_command_queue queue, const RangeSet& host, const RangeSet& gpu) {
  const RangeSet was_stale = st.stale;
  st.host_valid = host;
  st.stale.clear();
  for (const auto& [b, e] : gpu.missing(0, st.size))
    for (const auto& [hb, he] : host.within(b, e)) st.stale.add(hb, he);
  size_t made = bytes_in(st.stale, 0, st.size);
  for (const auto& [b, e] : was_stale.within(0, st.size)) made -= bytes_in(st.stale, b, e);
  if (st.stale.empty()) return made;
  keep_flush_queue(st, queue);
  if (st.eager) flush_all(st, queue);
  return made;
}

bool dop_failed(BufferState& st) {
  const bool lost = !st.stale.empty();
  st.host_valid.clear();
  if (!lost) return true;
  st.stale.clear();  // nothing can restore them: the caller returns the error
  return false;
}

void flush_and_drop_all(cl_command_queue queue) {
  std::vector<std::shared_ptr<BufferState>> all;
  {
    auto& t = tables();
    auto l = lock_tables(t);
    for (auto& [m, b] : t.buffers)
      if (b.state) all.push_back(b.state);
  }
  for (auto& st : all) {
    auto l = when_idle(*st);
    flush_all(*st, queue);
    st->host_valid.clear();
    st->with_dop = false;
  }
}

bool app_copies_current(const KernelBuffers& kb) {
  if (!any_buffer_state()) return true;  // dop never ran with a buffer: the application's copies are all current
  if (!kb.known) return false;
  for (const auto& mb : kb.mems) {
    auto st = buffer_state(mb.first, false);
    if (!st) continue;
    std::unique_lock<std::mutex> l(st->m, std::try_to_lock);  // held by a dop launch for its whole run: not current
    if (!l.owns_lock() || st->busy > 0 || !st->stale.empty()) return false;
  }
  return true;
}

void before_real_kernel(cl_command_queue queue, const KernelBuffers& kb, std::vector<cl_event>& waits) {
  if (!any_buffer_state()) return;  // dop never ran with a buffer: nothing can be stale
  if (!kb.known) {
    flush_and_drop_all(queue);
    return;
  }
  for (const auto& [mem, flags] : kb.mems) {
    auto st = buffer_state(mem, false);
    if (!st) continue;
    auto l = when_idle(*st);
    flush_stale(*st, queue, 0, st->size, waits);
    st->with_dop = false;
    if (!(flags & CL_MEM_READ_ONLY)) app_writes(*st, 0, st->size, false);
  }
}

}  // namespace dop::intercept
