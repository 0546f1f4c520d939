// The application's memory commands on its buffers, each forwarded to the real implementation after the residency
// protocol's step for it (residency.hpp): a command that reads a buffer's bytes first gets dop's results for them
// (non-blocking writes in its wait list), or, for a read of bytes only dop's copy holds, is served from that copy; a
// command that writes a buffer's bytes invalidates dop's copy of them. Buffers dop never ran with pass straight
// through, as does everything on dop's own threads.
#include <algorithm>
#include <cstring>

#include "interpose.hpp"
#include "residency.hpp"

namespace dop::intercept {
namespace {

// The bytes a rectangular region of a buffer spans, first to last (its row and slice pitches as OpenCL defaults
// them).
std::pair<size_t, size_t> rect_span(const size_t* origin, const size_t* region, size_t row_pitch, size_t slice_pitch) {
  if (!origin || !region || region[0] == 0 || region[1] == 0 || region[2] == 0) return {0, 0};
  if (row_pitch == 0) row_pitch = region[0];
  if (slice_pitch == 0) slice_pitch = region[1] * row_pitch;
  const size_t lo = origin[2] * slice_pitch + origin[1] * row_pitch + origin[0];
  return {lo, lo + (region[2] - 1) * slice_pitch + (region[1] - 1) * row_pitch + region[0]};
}

// One buffer's step of the protocol before a command of the application's: its dop results for [lo, hi) flushed
// (events into `waits`) and, when the command writes there, dop's copy of [lo, hi) dropped. Clamped to the buffer.
void before_command(cl_command_queue queue, cl_mem mem, size_t lo, size_t hi, bool writes, bool exact,
                    std::vector<cl_event>& waits) {
  auto st = buffer_state(mem, false);
  if (!st) return;
  Inside guard;
  auto l = when_idle(*st);
  hi = std::min(hi, st->size);
  if (lo >= hi) return;
  if (!(writes && exact)) flush_stale(*st, queue, lo, hi, waits);
  if (writes) app_writes(*st, lo, hi, exact);
}

// Runs `enqueue` with the application's wait list and dop's flushes; the flushes' events are let go after.
template <typename F>
cl_int with_waits(cl_uint n, const cl_event* list, std::vector<cl_event>& flushes, F enqueue) {
  const WaitList waits(n, list, flushes);
  const cl_int r = enqueue(waits.size(), waits.data());
  release_events(flushes);
  return r;
}

// Runs a command's residency steps (`steps` fills `flushes`), then the command with them in its wait list; an error
// in a step is the command's error, and nothing is enqueued.
template <typename Steps, typename Enqueue>
cl_int after_steps(cl_uint n, const cl_event* list, Steps steps, Enqueue enqueue) {
  std::vector<cl_event> flushes;
  try {
    steps(flushes);
  } catch (const dop::cl::Error& e) {
    release_events(flushes);
    return e.code();
  } catch (...) {
    release_events(flushes);
    return CL_OUT_OF_HOST_MEMORY;
  }
  return with_waits(n, list, flushes, enqueue);
}

// A read served from dop's copy: the event (if asked for) completes after the queue's earlier commands.
cl_int served(cl_command_queue queue, cl_uint n, const cl_event* list, cl_event* event) {
  if (!event) return CL_SUCCESS;
  REAL(clEnqueueMarkerWithWaitList);
  return real_clEnqueueMarkerWithWaitList(queue, n, list, event);
}

// Whether every event of a wait list has completed (an inconsistent list is left for the real call to report).
bool events_complete(cl_uint n, const cl_event* list) {
  if ((n == 0) != (list == nullptr)) return false;
  for (cl_uint i = 0; i < n; ++i) {
    cl_int status = CL_QUEUED;
    if (clGetEventInfo(list[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) != CL_SUCCESS ||
        status != CL_COMPLETE)
      return false;
  }
  return true;
}

// Whether [offset, offset + size) lies within a buffer of `bytes` (without overflowing).
bool within(size_t offset, size_t size, size_t bytes) { return size <= bytes && offset <= bytes - size; }

// A read split between dop's copy (already copied into `ptr` by read_stale_from_shadow) and the application's: the
// `gaps` read from the application's buffer, one event for the whole (a marker after the gaps' reads).
cl_int read_gaps(cl_command_queue queue, cl_mem buffer, cl_bool blocking, size_t offset, void* ptr,
                 const std::vector<RangeSet::Range>& gaps, cl_uint n, const cl_event* list, cl_event* event) {
  REAL(clEnqueueReadBuffer);
  REAL(clEnqueueMarkerWithWaitList);
  REAL(clWaitForEvents);
  std::vector<cl_event> reads;
  cl_int r = CL_SUCCESS;
  for (const auto& [b, e] : gaps) {
    cl_event ev = nullptr;
    r = real_clEnqueueReadBuffer(queue, buffer, CL_FALSE, b, e - b, static_cast<unsigned char*>(ptr) + (b - offset), n,
                                 list, &ev);
    if (r != CL_SUCCESS) break;
    reads.push_back(ev);
  }
  if (r == CL_SUCCESS && event)
    r = real_clEnqueueMarkerWithWaitList(queue, cl_uint(reads.size()), reads.empty() ? nullptr : reads.data(), event);
  if (r == CL_SUCCESS && blocking && !reads.empty()) r = real_clWaitForEvents(cl_uint(reads.size()), reads.data());
  release_events(reads);
  return r;
}

}  // namespace
}  // namespace dop::intercept

using namespace dop::intercept;

DOP_EXPORT cl_int clEnqueueReadBuffer(cl_command_queue queue, cl_mem buffer, cl_bool blocking, size_t offset,
                                      size_t size, void* ptr, cl_uint n, const cl_event* list, cl_event* event) {
  REAL(clEnqueueReadBuffer);
  if (!real_clEnqueueReadBuffer) return CL_INVALID_OPERATION;
  auto real = [&](cl_uint k, const cl_event* l) {
    return real_clEnqueueReadBuffer(queue, buffer, blocking, offset, size, ptr, k, l, event);
  };
  if (t_inside) return real(n, list);
  auto st = buffer_state(buffer, false);
  if (!st) return real(n, list);
  // Bytes only dop's copy holds are copied from it; the rest is read from the application's buffer (a read wholly
  // in dop's copy is served from it). Nothing is flushed for a read that fits the buffer.
  bool from_shadow = false, split = false;
  std::vector<dop::RangeSet::Range> gaps;
  const cl_int r = after_steps(
      n, list,
      [&](std::vector<cl_event>& flushes) {
        Inside guard;
        auto l = when_idle(*st);
        if (ptr && within(offset, size, st->size)) {
          from_shadow = read_from_shadow(*st, offset, offset + size, ptr);
          if (!from_shadow && st->stale.intersects(offset, offset + size)) {
            gaps = read_stale_from_shadow(*st, offset, offset + size, ptr);
            split = true;
          }
        }
        if ((from_shadow || split) && log_enabled()) {
          size_t from_app = 0;
          for (const auto& [b, e] : gaps) from_app += e - b;
          log_line("read=" + std::to_string(size) + " from_dop=" + std::to_string(size - from_app) +
                   " from_app=" + std::to_string(from_app) + " (dop's results read from dop's copy)");
        }
        if (!from_shadow && !split) flush_stale(*st, queue, offset, std::min(offset + size, st->size), flushes);
      },
      [&](cl_uint k, const cl_event* l) {
        if (from_shadow) return served(queue, k, l, event);
        return split ? read_gaps(queue, buffer, blocking, offset, ptr, gaps, k, l, event) : real(k, l);
      });
  return r;
}

DOP_EXPORT cl_int clEnqueueReadBufferRect(cl_command_queue queue, cl_mem buffer, cl_bool blocking,
                                          const size_t* buffer_origin, const size_t* host_origin, const size_t* region,
                                          size_t buffer_row_pitch, size_t buffer_slice_pitch, size_t host_row_pitch,
                                          size_t host_slice_pitch, void* ptr, cl_uint n, const cl_event* list,
                                          cl_event* event) {
  REAL(clEnqueueReadBufferRect);
  if (!real_clEnqueueReadBufferRect) return CL_INVALID_OPERATION;
  auto real = [&](cl_uint k, const cl_event* l) {
    return real_clEnqueueReadBufferRect(queue, buffer, blocking, buffer_origin, host_origin, region, buffer_row_pitch,
                                        buffer_slice_pitch, host_row_pitch, host_slice_pitch, ptr, k, l, event);
  };
  if (t_inside) return real(n, list);
  const auto span = rect_span(buffer_origin, region, buffer_row_pitch, buffer_slice_pitch);
  const size_t lo = span.first, hi = span.second;  // not a structured binding: lambdas capture them
  return after_steps(
      n, list, [&](std::vector<cl_event>& flushes) { before_command(queue, buffer, lo, hi, false, false, flushes); },
      real);
}

DOP_EXPORT cl_int clEnqueueWriteBuffer(cl_command_queue queue, cl_mem buffer, cl_bool blocking, size_t offset,
                                       size_t size, const void* ptr, cl_uint n, const cl_event* list, cl_event* event) {
  REAL(clEnqueueWriteBuffer);
  if (!real_clEnqueueWriteBuffer) return CL_INVALID_OPERATION;
  if (t_inside) return real_clEnqueueWriteBuffer(queue, buffer, blocking, offset, size, ptr, n, list, event);
  note_host_write(buffer, size);
  // To a buffer that lives with dop, a write whose wait list has completed goes into dop's copy (absorb_write): done
  // now, as a blocking write would be; its event completes after the queue's earlier commands. Otherwise the
  // application's buffer takes it, and dop's copy of those bytes is no longer current (before_command's step for an
  // exact write).
  if (auto st = buffer_state(buffer, false)) {
    bool absorbed = false;
    try {
      Inside guard;
      auto l = when_idle(*st);
      absorbed = ptr && within(offset, size, st->size) && events_complete(n, list) &&
                 absorb_write(*st, queue, offset, offset + size, ptr);
      const size_t hi = std::min(offset + size, st->size);
      if (!absorbed && offset < hi) app_writes(*st, offset, hi, true);
    } catch (const dop::cl::Error& e) {
      return e.code();
    }
    if (absorbed) return served(queue, n, list, event);
  }
  return real_clEnqueueWriteBuffer(queue, buffer, blocking, offset, size, ptr, n, list, event);
}

DOP_EXPORT cl_int clEnqueueWriteBufferRect(cl_command_queue queue, cl_mem buffer, cl_bool blocking,
                                           const size_t* buffer_origin, const size_t* host_origin, const size_t* region,
                                           size_t buffer_row_pitch, size_t buffer_slice_pitch, size_t host_row_pitch,
                                           size_t host_slice_pitch, const void* ptr, cl_uint n, const cl_event* list,
                                           cl_event* event) {
  REAL(clEnqueueWriteBufferRect);
  if (!real_clEnqueueWriteBufferRect) return CL_INVALID_OPERATION;
  auto real = [&](cl_uint k, const cl_event* l) {
    return real_clEnqueueWriteBufferRect(queue, buffer, blocking, buffer_origin, host_origin, region, buffer_row_pitch,
                                         buffer_slice_pitch, host_row_pitch, host_slice_pitch, ptr, k, l, event);
  };
  if (t_inside) return real(n, list);
  if (region) note_host_write(buffer, region[0] * region[1] * region[2]);
  const auto span = rect_span(buffer_origin, region, buffer_row_pitch, buffer_slice_pitch);
  const size_t lo = span.first, hi = span.second;  // not a structured binding: lambdas capture them
  return after_steps(
      n, list,
      [&](std::vector<cl_event>& flushes) {
        before_command(queue, buffer, lo, hi, true, false, flushes);  // the gaps between rows keep their bytes
      },
      real);
}

DOP_EXPORT cl_int clEnqueueFillBuffer(cl_command_queue queue, cl_mem buffer, const void* pattern, size_t pattern_size,
                                      size_t offset, size_t size, cl_uint n, const cl_event* list, cl_event* event) {
  REAL(clEnqueueFillBuffer);
  if (!real_clEnqueueFillBuffer) return CL_INVALID_OPERATION;
  if (!t_inside) {
    std::vector<cl_event> none;
    before_command(queue, buffer, offset, offset + size, true, true, none);
  }
  return real_clEnqueueFillBuffer(queue, buffer, pattern, pattern_size, offset, size, n, list, event);
}

DOP_EXPORT cl_int clEnqueueCopyBuffer(cl_command_queue queue, cl_mem src, cl_mem dst, size_t src_offset,
                                      size_t dst_offset, size_t size, cl_uint n, const cl_event* list,
                                      cl_event* event) {
  REAL(clEnqueueCopyBuffer);
  if (!real_clEnqueueCopyBuffer) return CL_INVALID_OPERATION;
  auto real = [&](cl_uint k, const cl_event* l) {
    return real_clEnqueueCopyBuffer(queue, src, dst, src_offset, dst_offset, size, k, l, event);
  };
  if (t_inside) return real(n, list);
  return after_steps(
      n, list,
      [&](std::vector<cl_event>& flushes) {
        before_command(queue, src, src_offset, src_offset + size, false, false, flushes);
        before_command(queue, dst, dst_offset, dst_offset + size, true, true, flushes);
      },
      real);
}

DOP_EXPORT cl_int clEnqueueCopyBufferRect(cl_command_queue queue, cl_mem src, cl_mem dst, const size_t* src_origin,
                                          const size_t* dst_origin, const size_t* region, size_t src_row_pitch,
                                          size_t src_slice_pitch, size_t dst_row_pitch, size_t dst_slice_pitch,
                                          cl_uint n, const cl_event* list, cl_event* event) {
  REAL(clEnqueueCopyBufferRect);
  if (!real_clEnqueueCopyBufferRect) return CL_INVALID_OPERATION;
  auto real = [&](cl_uint k, const cl_event* l) {
    return real_clEnqueueCopyBufferRect(queue, src, dst, src_origin, dst_origin, region, src_row_pitch, src_slice_pitch,
                                        dst_row_pitch, dst_slice_pitch, k, l, event);
  };
  if (t_inside) return real(n, list);
  const auto src_span = rect_span(src_origin, region, src_row_pitch, src_slice_pitch);
  const auto dst_span = rect_span(dst_origin, region, dst_row_pitch, dst_slice_pitch);
  const size_t slo = src_span.first, shi = src_span.second, dlo = dst_span.first, dhi = dst_span.second;
  return after_steps(
      n, list,
      [&](std::vector<cl_event>& flushes) {
        before_command(queue, src, slo, shi, false, false, flushes);
        before_command(queue, dst, dlo, dhi, true, false, flushes);
      },
      real);
}

DOP_EXPORT cl_int clEnqueueCopyBufferToImage(cl_command_queue queue, cl_mem src, cl_mem dst, size_t src_offset,
                                             const size_t* dst_origin, const size_t* region, cl_uint n,
                                             const cl_event* list, cl_event* event) {
  REAL(clEnqueueCopyBufferToImage);
  if (!real_clEnqueueCopyBufferToImage) return CL_INVALID_OPERATION;
  auto real = [&](cl_uint k, const cl_event* l) {
    return real_clEnqueueCopyBufferToImage(queue, src, dst, src_offset, dst_origin, region, k, l, event);
  };
  if (t_inside) return real(n, list);
  return after_steps(
      n, list,
      [&](std::vector<cl_event>& flushes) {
        before_command(queue, src, src_offset, SIZE_MAX, false, false, flushes);  // the pixel size is the image's
      },
      real);
}

DOP_EXPORT cl_int clEnqueueCopyImageToBuffer(cl_command_queue queue, cl_mem src, cl_mem dst, const size_t* src_origin,
                                             const size_t* region, size_t dst_offset, cl_uint n, const cl_event* list,
                                             cl_event* event) {
  REAL(clEnqueueCopyImageToBuffer);
  if (!real_clEnqueueCopyImageToBuffer) return CL_INVALID_OPERATION;
  auto real = [&](cl_uint k, const cl_event* l) {
    return real_clEnqueueCopyImageToBuffer(queue, src, dst, src_origin, region, dst_offset, k, l, event);
  };
  if (t_inside) return real(n, list);
  return after_steps(
      n, list,
      [&](std::vector<cl_event>& flushes) { before_command(queue, dst, dst_offset, SIZE_MAX, true, false, flushes); },
      real);
}

DOP_EXPORT void* clEnqueueMapBuffer(cl_command_queue queue, cl_mem buffer, cl_bool blocking, cl_map_flags flags,
                                    size_t offset, size_t size, cl_uint n, const cl_event* list, cl_event* event,
                                    cl_int* errcode_ret) {
  REAL(clEnqueueMapBuffer);
  if (!real_clEnqueueMapBuffer) {
    if (errcode_ret) *errcode_ret = CL_INVALID_OPERATION;
    return nullptr;
  }
  auto real = [&](cl_uint k, const cl_event* l) {
    return real_clEnqueueMapBuffer(queue, buffer, blocking, flags, offset, size, k, l, event, errcode_ret);
  };
  if (t_inside) return real(n, list);
  std::vector<cl_event> flushes;
  const bool writes = (flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION)) != 0;
  try {
    // The application may write through the mapping until it unmaps: dop's copy of the region is dropped now.
    before_command(queue, buffer, offset, offset + size, writes, false, flushes);
  } catch (const dop::cl::Error& e) {
    if (errcode_ret) *errcode_ret = e.code();
    return nullptr;
  } catch (...) {
    if (errcode_ret) *errcode_ret = CL_OUT_OF_HOST_MEMORY;
    return nullptr;
  }
  const WaitList waits(n, list, flushes);
  void* p = real(waits.size(), waits.data());
  release_events(flushes);
  return p;
}

DOP_EXPORT cl_int clEnqueueMigrateMemObjects(cl_command_queue queue, cl_uint num_mems, const cl_mem* mems,
                                             cl_mem_migration_flags flags, cl_uint n, const cl_event* list,
                                             cl_event* event) {
  REAL(clEnqueueMigrateMemObjects);
  if (!real_clEnqueueMigrateMemObjects) return CL_INVALID_OPERATION;
  auto real = [&](cl_uint k, const cl_event* l) {
    return real_clEnqueueMigrateMemObjects(queue, num_mems, mems, flags, k, l, event);
  };
  if (t_inside) return real(n, list);
  const bool undefined = (flags & CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED) != 0;
  return after_steps(
      n, list,
      [&](std::vector<cl_event>& flushes) {
        for (cl_uint i = 0; mems && i < num_mems; ++i)
          before_command(queue, mems[i], 0, SIZE_MAX, undefined, undefined, flushes);
      },
      real);
}

DOP_EXPORT cl_int clEnqueueNativeKernel(cl_command_queue queue, void(CL_CALLBACK* user_func)(void*), void* args,
                                        size_t cb_args, cl_uint num_mem_objects, const cl_mem* mem_list,
                                        const void** args_mem_loc, cl_uint n, const cl_event* list, cl_event* event) {
  REAL(clEnqueueNativeKernel);
  if (!real_clEnqueueNativeKernel) return CL_INVALID_OPERATION;
  auto real = [&](cl_uint k, const cl_event* l) {
    return real_clEnqueueNativeKernel(queue, user_func, args, cb_args, num_mem_objects, mem_list, args_mem_loc, k, l,
                                      event);
  };
  if (t_inside) return real(n, list);
  return after_steps(
      n, list,
      [&](std::vector<cl_event>& flushes) {
        for (cl_uint i = 0; mem_list && i < num_mem_objects; ++i)
          before_command(queue, mem_list[i], 0, SIZE_MAX, true, false, flushes);
      },
      real);
}
