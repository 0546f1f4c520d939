// Residency of the application's buffers (internal to libdop_intercept.so): which bytes of each buffer are current
// in the application's own cl_mem (on its device) and in dop's host copy, MSI-style over those two memories (as
// StarPU's data handles do over theirs). A dop launch fetches only what its host copy lacks and leaves its results
// there; they reach the application's cl_mem only when something of the application's needs them: its read, map or
// copy of the buffer, its own kernel, a pass-through launch. A write of the application's invalidates dop's copy.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "dop/range_set.hpp"
#include "interpose.hpp"

namespace dop::intercept {

/// What dop holds of one application buffer. Invariant: every byte is current in the application's cl_mem or in
/// `shadow` (where `host_valid` says), and `stale` (bytes of the cl_mem that are not current) lies within
/// `host_valid`. Guarded by `m`; a dop launch holds it for its whole run.
struct BufferState {
  BufferState(cl_mem mem, size_t size, cl_mem_flags flags, bool aliased);
  ~BufferState();  // waits for the writes still reading the shadow
  BufferState(const BufferState&) = delete;
  BufferState& operator=(const BufferState&) = delete;

  std::mutex m;
  int busy = 0;                  // dop launches submitted that use the buffer and have not finished
  std::condition_variable idle;  // notified when busy drops to 0
  const cl_mem mem;              // the application's buffer (not retained: the state goes with its table entry)
  const size_t size;
  /// Never leave the application's copy stale: buffers over the application's host memory (CL_MEM_USE_HOST_PTR:
  /// it may look at that memory directly), and buffers with aliases dop does not follow (sub-buffers, images).
  bool eager = false;
  ArgSpec spec;    // a byte buffer of `size`, for `shadow`
  ArgData shadow;  // dop's host copy, page-aligned; allocated at the first dop launch
  RangeSet host_valid;
  RangeSet stale;
  /// The last kernel that used the buffer ran on dop's route: the application's writes go into dop's copy.
  bool with_dop = false;
  cl_command_queue flush_queue = nullptr;  // retained: the queue of the dop launch that made bytes stale
  std::vector<cl_event> flushes;           // non-blocking writes from `shadow` still in flight
};

/// How many bytes of [lo, hi) `r` holds.
size_t bytes_in(const RangeSet& r, size_t lo, size_t hi);

/// The state locked for a command of the application's: after the dop launches using the buffer have run.
std::unique_lock<std::mutex> when_idle(BufferState& st);

/// The state of a tracked buffer, made when `create`; null for a buffer the tables do not know.
std::shared_ptr<BufferState> buffer_state(cl_mem m, bool create);
/// Whether any buffer state was ever made (until then no buffer can lack dop's results: launches skip the protocol).
bool any_buffer_state();

/// Before a command of the application's (or a real kernel) uses bytes [lo, hi) of the buffer on `queue`: the stale
/// ones are written from dop's copy with non-blocking writes; their events are appended to `waits` (the caller puts
/// them in the command's wait list and releases them). Call with st.m held.
void flush_stale(BufferState& st, cl_command_queue queue, size_t lo, size_t hi, std::vector<cl_event>& waits);
/// Blocking: every stale byte written back now (on `queue`, or the queue of the launch that made it stale).
void flush_all(BufferState& st, cl_command_queue queue = nullptr);
/// The application's command writes [lo, hi): dop's copy of those bytes is no longer current. With `exact` every
/// byte of the range is written (write, fill, copy): the application's copy becomes current there without a flush;
/// otherwise call flush_stale for the range first. Call with st.m held.
void app_writes(BufferState& st, size_t lo, size_t hi, bool exact);
/// Reads [lo, hi) from dop's copy into `dst` when that copy is current there and the application's is not (the
/// result of a dop launch not yet flushed); false when the application's copy must serve. Call with st.m held.
bool read_from_shadow(BufferState& st, size_t lo, size_t hi, void* dst);

/// The application writes [lo, hi) from `src` (its write's wait list complete) to a buffer that lives with dop: the
/// last kernel that used it ran on dop's route, dop's copy exists and the buffer is not eager. The bytes go into
/// dop's copy (a host copy, by several threads for large writes: dop/spec.hpp copy_bytes) and the application's copy
/// becomes stale there, to be flushed when something of the application's needs them; the next dop launch finds its
/// inputs on the host, and sends the GPU only its part. Returns false, having done nothing, otherwise: the write goes
/// to the application's buffer. Call with st.m held.
bool absorb_write(BufferState& st, cl_command_queue queue, size_t lo, size_t hi, const void* src);
/// A host-fed class is about to try dop's way at its next launch (decide.cpp): these buffers get dop's copies (not
/// filled) and take the application's writes from now on, as after a dop launch. Eager buffers are left alone.
void prepare_for_dop(const KernelBuffers& kb);
/// For a read of [lo, hi) into `dst` (byte b at dst + b - lo): copies the bytes only dop's copy holds (dop's results
/// not yet flushed) from it, and returns the parts of [lo, hi) left for the application's copy to serve. Call with
/// st.m held.
std::vector<RangeSet::Range> read_stale_from_shadow(BufferState& st, size_t lo, size_t hi, void* dst);

/// The bytes of one buffer a dop launch may read and may write, [lo, hi) each (empty when lo >= hi), from the
/// kernel's footprint where it bounds the buffer for this launch; `whole`: it does not, every byte may be both.
struct LaunchBytes {
  bool whole = true;
  RangeSet::Range read{0, 0}, write{0, 0};
};

/// For a dop launch (st.m held by the caller): dop's copy made current where the launch may read or write it (all
/// of it for `whole`; a write range too, so that the bytes of it the kernel leaves alone are right when the range is
/// flushed), reading on `queue` only what it lacks (blocking); returns the bytes read. With `will_write`, also waits
/// for flushes still reading the copy.
size_t fetch_for_dop(BufferState& st, cl_command_queue queue, bool will_write, const LaunchBytes& bytes);
/// After a dop launch wrote [lo, hi) of dop's copy (current there: fetch_for_dop): the application's copy is stale
/// there (written back now for an eager buffer). `queue` is kept for flushes that have no queue of their own.
void dop_wrote(BufferState& st, cl_command_queue queue, size_t lo, size_t hi);
/// Before a dop launch whose GPU side works on the application's cl_mem in place (st.m held): dop's copy made (not
/// filled: the engine moves what each device lacks), writes still reading it waited for.
void ready_for_engine(BufferState& st);
/// Where the application's cl_mem is current (every byte but the stale ones): what the engine is told it holds.
RangeSet app_current(const BufferState& st);
/// After such a launch (or its failure), the engine's record of the buffer (DeviceData::release) becomes the state:
/// dop's copy current over `host`, the application's over `gpu`, stale where only dop's copy is current (written
/// back now for an eager buffer). Bytes in neither (lost by a failed launch) are left to the application's copy.
/// Returns the bytes of the application's copy made stale by the launch.
size_t engine_left(BufferState& st, cl_command_queue queue, const RangeSet& host, const RangeSet& gpu);
/// After a dop launch failed with `wrote` possibly changed part way: dop's copy is no longer trusted. Returns false
/// when bytes only dop's copy held were lost (the application's copy of them is stale).
bool dop_failed(BufferState& st);

/// A kernel dop does not know the arguments of is about to run on `queue` (or dop stops following a buffer): every
/// buffer's stale bytes are written back and dop's copies are dropped.
void flush_and_drop_all(cl_command_queue queue);

/// Whether every byte of these buffers is current in the application's own cl_mem (no result of dop's waits in dop's
/// copy, no dop launch using them is in flight): where the data of a launch with these buffers is, for the model.
/// Never blocks. Call without the tables' or any buffer's lock held.
bool app_copies_current(const KernelBuffers& kb);

/// Before a real kernel of the application's runs on `queue` with these buffers: stale bytes flushed (events into
/// `waits`), dop's copy of the writable ones dropped. A kernel whose arguments are not known drops everything.
void before_real_kernel(cl_command_queue queue, const KernelBuffers& kb, std::vector<cl_event>& waits);

/// The application's wait list and dop's extra events, as one list (the pointer is null when both are empty).
struct WaitList {
  std::vector<cl_event> all;
  WaitList(cl_uint n, const cl_event* list, const std::vector<cl_event>& extra);
  cl_uint size() const { return cl_uint(all.size()); }
  const cl_event* data() const { return all.empty() ? nullptr : all.data(); }
};
void release_events(std::vector<cl_event>& events);

}  // namespace dop::intercept
