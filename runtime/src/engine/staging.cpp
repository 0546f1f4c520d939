// Transfers to the GPU: pinned staging memory, copies in pieces (host-side copies by the idle cores overlapping
// DMA), the GPU's own buffers, the launch's host-side buffers, whole inputs staged before the GPU claims work, and
// sliced buffers staged chunk by chunk as the footprint says each chunk needs them.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "engine/engine.hpp"

namespace dop {

namespace engine {

void poison(cl_command_queue queue, cl_mem buf, size_t lo, size_t hi, const std::string& arg_name) {
  const cl_uchar garbage = 0xA5;
  cl::check(clEnqueueFillBuffer(queue, buf, &garbage, 1, lo, hi - lo, 0, nullptr, nullptr), "clEnqueueFillBuffer",
            "argument '" + arg_name + "'");
}

void Side::release_pinned() {
  for (auto* m : {&pinned_in, &pinned_out}) {
    for (auto& [i, p] : *m)
      if (p.ptr) clEnqueueUnmapMemObject(queue.get(), p.buf.get(), p.ptr, 0, nullptr, nullptr);
    m->clear();
  }
  if (queue) clFinish(queue.get());
  pinned_failed = false;
  pinned_refusal.clear();
}

// Pinned host memory of `bytes` for argument i, or nullptr where the implementation has none to give.
unsigned char* Side::pinned(std::map<size_t, Pinned>& m, size_t i, size_t bytes) {
  if (pinned_failed) return nullptr;
  Pinned& p = m[i];
  if (p.ptr && p.bytes < bytes) {  // made for a smaller launch (before a rebind)
    clEnqueueUnmapMemObject(queue.get(), p.buf.get(), p.ptr, 0, nullptr, nullptr);
    clFinish(queue.get());
    p = Pinned{};
  }
  if (!p.ptr) {
    try {
      // DOP_TEST_REFUSE_PINNED=1, for tests only (docs/intercept.md): the implementation's refusal, which PoCL
      // never gives, so that the pageable path runs.
      const char* refuse = std::getenv("DOP_TEST_REFUSE_PINNED");
      if (refuse && std::string(refuse) == "1")
        throw cl::Error(CL_MEM_OBJECT_ALLOCATION_FAILURE, "clCreateBuffer", "DOP_TEST_REFUSE_PINNED");
      p.buf = cl::create_buffer(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes);
      cl_int err = CL_SUCCESS;
      p.ptr = clEnqueueMapBuffer(queue.get(), p.buf.get(), CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, nullptr,
                                 nullptr, &err);
      if (err != CL_SUCCESS) {
        p.ptr = nullptr;
        pinned_refusal = "clEnqueueMapBuffer: " + cl::error_name(err);
      }
      p.bytes = bytes;
    } catch (const cl::Error& e) {
      p.ptr = nullptr;
      pinned_refusal = e.what();
    }
    if (!p.ptr) {
      m.erase(i);
      pinned_failed = true;
      pinned_refused_arg = i;
      pinned_refused_bytes = bytes;
      return nullptr;
    }
  }
  return static_cast<unsigned char*>(p.ptr);
}

std::vector<Piece> make_pieces(const std::vector<Piece>& segments, unsigned threads) {
  size_t total = 0;
  for (const auto& g : segments) total += g.bytes;
  constexpr size_t kPage = 4096, kMin = size_t(1) << 20, kMax = size_t(16) << 20;
  const size_t piece = std::clamp(total / (size_t(threads) * 4 + 1), kMin, kMax) / kPage * kPage;
  std::vector<Piece> out;
  for (const auto& g : segments)
    for (size_t off = 0; off < g.bytes; off += piece)
      out.push_back({g.arg, g.offset + off, std::min(piece, g.bytes - off)});
  return out;
}

}  // namespace engine

using engine::ms_since;
using engine::Piece;

// Whether the GPU's memory is host memory (a CPU-type device, or CL_DEVICE_HOST_UNIFIED_MEMORY): its own buffers
// then live in guard-paged host memory of dop's. A discrete GPU's memory is the device's, under its own protection.
bool Executor::Impl::gpu_in_host_memory() const {
  return sel.gpu && (sel.gpu->host_unified_memory || (sel.gpu->type & CL_DEVICE_TYPE_CPU));
}

// The GPU's own buffers in copy modes, made before the timed region (and reused across launches and rebinds while
// they are large enough): poisoned for tests, and in resident mode holding every input already.
void Executor::Impl::prepare_gpu_buffers(Launch& l) {
  if (!l.gpu || l.in_place || l.data) return;  // resident buffers: the GPU's copies are DeviceData's
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const ArgSpec& a = spec.args[i];
    if (a.kind != ArgKind::buffer) continue;
    auto& d = l.gpu->gpu_buffers[i];
    const cl_mem_flags flags = a.access == Access::read ? CL_MEM_READ_ONLY : CL_MEM_READ_WRITE;
    if (!d.buf || d.bytes < a.bytes() || d.flags != flags) {
      // The buffer released before the memory it may live in (d = {} alone would free `host` first).
      d.buf = cl::Buffer();
      d = {};
      if (gpu_in_host_memory()) {
        d.host = std::make_unique<GuardedBlock>(a.bytes());
        d.buf = cl::create_buffer(l.gpu->ctx, flags | CL_MEM_USE_HOST_PTR, a.bytes(), d.host->data());
      } else {
        d.buf = cl::create_buffer(l.gpu->ctx, flags, a.bytes());
      }
      d.bytes = a.bytes();
      d.flags = flags;
    }
    const cl::Buffer& b = d.buf;
    if (opt.poison_gpu_buffers) engine::poison(l.gpu->queue.get(), b.get(), 0, a.bytes(), a.name);
    if (l.resident)  // resident data: on the GPU before the timed region
      cl::check(clEnqueueWriteBuffer(l.gpu->queue.get(), b.get(), CL_FALSE, 0, a.bytes(), l.args[i].data(), 0, nullptr,
                                     nullptr),
                "clEnqueueWriteBuffer", "argument '" + a.name + "'");
  }
  cl::finish(l.gpu->queue);
}

// The launch's buffers (timed): host-side buffers where the devices use host memory in place, the GPU's in copy
// modes and what goes into them, the initial contents of what the GPU may write, and the kernels' arguments.
void Executor::Impl::bind_buffers(Launch& l) {
  Side* const cpu = l.cpu;
  Side* const gpu = l.gpu;
  // Host-side buffers: CPU (and zero-copy GPU) use the host memory in place.
  l.cpu_bufs.resize(spec.args.size());
  l.gpu_host_bufs.resize(spec.args.size());
  // In svm mode there are none: kernels get the arguments' SVM pointers (set_args with empty lists).
  const size_t n_mems = l.mode == MemoryMode::svm ? 0 : spec.args.size();
  l.cpu_mems.assign(n_mems, nullptr);
  l.gpu_mems.assign(n_mems, nullptr);
  // Copy mode: what goes to the GPU (argument, bytes); the initial contents of what it may write once the way to
  // run is known (keep_initial).
  l.initial.assign(spec.args.size(), nullptr);
  l.snapshot.resize(spec.args.size());
  l.first_contents.resize(spec.args.size());
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const ArgSpec& a = spec.args[i];
    if (a.kind != ArgKind::buffer || l.mode == MemoryMode::svm) continue;  // SVM: pointers, no buffers
    const cl_mem_flags acc = a.access == Access::read ? CL_MEM_READ_ONLY : CL_MEM_READ_WRITE;
    if (cpu) {
      l.cpu_bufs[i] = cl::create_buffer(cpu->ctx, acc | CL_MEM_USE_HOST_PTR, a.bytes(), l.args[i].data());
      l.cpu_mems[i] = l.cpu_bufs[i].get();
    }
    if (gpu && l.mode == MemoryMode::zero_copy) {
      l.gpu_host_bufs[i] = cl::create_buffer(gpu->ctx, acc | CL_MEM_USE_HOST_PTR, a.bytes(), l.args[i].data());
      l.gpu_mems[i] = l.gpu_host_bufs[i].get();
    } else if (gpu) {
      l.gpu_mems[i] = l.data ? l.data->gpu_buffer(*l.entries.at(i)) : gpu->gpu_buffers.at(i).buf.get();
      if (!l.resident && !l.sliced[i] && !l.data) l.inputs.push_back({i, 0, a.bytes()});
    }
  }
  l.rates.cpu_active = cpu != nullptr;
  l.rates.gpu_active = gpu != nullptr;
  l.staged.assign(spec.args.size(), ByteRange{});
  if (cpu) set_args(*cpu, l.args, l.cpu_mems, 8, 8);
  if (gpu) set_args(*gpu, l.args, l.gpu_mems, 8, l.res.gpu_alloc);
}

// Whether argument i goes to the GPU straight from its own memory: a read-only buffer in the GPU context's
// page-locked memory (MemoryMode::pinned). A writable one is staged still: the CPU may write it while the GPU's
// copy is sent, and the staged copy is the initial contents the merge compares with.
static bool in_place_input(const Spec& spec, const engine::Launch& l, size_t i) {
  return l.direct[i] && spec.args[i].access == Access::read;
}

// The initial contents of what the GPU may write, for the merge of a launch that runs both devices (run_devices,
// once the way to run is known: a launch one device sits out merges nothing, so it keeps nothing): the staged input
// copy where the memory is pinned, else a copy of its own (resident sliced buffers: filled chunk by chunk, where
// the CPU may write, by resident_cpu_chunk).
void Executor::Impl::keep_initial(Launch& l) {
  if (l.in_place) return;  // zero-copy and svm: both devices work on the same bytes, nothing is merged
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const ArgSpec& a = spec.args[i];
    if (a.kind != ArgKind::buffer || a.access == Access::read) continue;
    if (unsigned char* p = l.resident || l.data ? nullptr : l.gpu->pinned(l.gpu->pinned_in, i, a.bytes())) {
      l.initial[i] = p;
    } else if (l.data && l.sliced[i]) {
      l.first_contents[i].reset(new unsigned char[a.bytes()]);
      l.initial[i] = l.first_contents[i].get();
    } else {
      l.snapshot[i].assign(l.args[i].storage.begin(), l.args[i].storage.end());
      l.initial[i] = reinterpret_cast<const unsigned char*>(l.snapshot[i].data());
    }
  }
}

// One piece of an input to the GPU: copied into its pinned staging memory (allocated before the copy threads
// start, so the lookup is read-only) where there is some, and its DMA enqueued at once; a piece of a page-locked
// read-only buffer is sent from where it is.
cl::Event Executor::Impl::send_piece(Launch& l, const Piece& p) {
  const unsigned char* src = static_cast<const unsigned char*>(l.args[p.arg].data()) + p.offset;
  const bool in_place = in_place_input(spec, l, p.arg);
  const auto pin = in_place ? l.gpu->pinned_in.end() : l.gpu->pinned_in.find(p.arg);
  if (in_place) l.sent_in_place += p.bytes;
  if (pin != l.gpu->pinned_in.end()) {
    unsigned char* dst = static_cast<unsigned char*>(pin->second.ptr) + p.offset;
    std::memcpy(dst, src, p.bytes);
    src = dst;
  }
  cl_event ev = nullptr;
  cl::check(
      clEnqueueWriteBuffer(l.gpu->queue.get(), l.gpu_mems[p.arg], CL_FALSE, p.offset, p.bytes, src, 0, nullptr, &ev),
      "clEnqueueWriteBuffer", "argument '" + spec.args[p.arg].name + "'");
  return cl::Event(ev);
}

// Inputs to the GPU, run by its driver thread while the CPU already computes: each piece is copied into pinned
// memory (by several threads) and its DMA enqueued at once, so the link works while the next piece is copied.
// Staging stops as soon as the work list is empty: the CPU took everything, and the GPU needs no inputs (with
// every core computing, the copy threads get little CPU time, and waiting for them would only add latency).
// Under dynamic distribution the GPU also gives up when, at the CPU's measured rate, the CPU would finish what
// is left before the rest of the inputs would be staged at the rate seen so far: the copies would only take
// memory bandwidth from the CPU. Returns false when the GPU gave up.
bool Executor::Impl::stage_inputs(Launch& l, bool may_give_up) {
  if (l.inputs.empty()) return true;
  const auto ts = Clock::now();
  const auto pieces = engine::make_pieces(l.inputs, l.copy_threads);
  std::vector<cl::Event> events(pieces.size());
  size_t total_bytes = 0;
  for (const auto& g : l.inputs) {
    if (!in_place_input(spec, l, g.arg))
      l.gpu->pinned(l.gpu->pinned_in, g.arg, g.bytes);  // allocate before the threads
    total_bytes += g.bytes;
  }
  std::atomic<size_t> staged{0};
  std::atomic<bool> gave_up{false};
  engine::for_pieces(pieces.size(), l.copy_threads, [&](size_t k) {
    const size_t left = l.wl.remaining();
    if (left == 0 || gave_up) return;
    if (may_give_up && l.cpu && staged > 0 &&
        l.rates.cpu_finishes_first(left, total_bytes - staged, double(staged) / ms_since(ts))) {
      gave_up = true;
      return;
    }
    events[k] = send_piece(l, pieces[k]);
    staged += pieces[k].bytes;
  });
  cl::check(clFlush(l.gpu->queue.get()), "clFlush");
  // Claim no work before the inputs have arrived: work claimed while the copy runs would sit queued behind
  // it while the CPU, already running, runs out of work and waits.
  for (auto& e : events) {
    if (!e) continue;  // not staged: nothing was left to run
    cl_event ev = e.get();
    cl::check(clWaitForEvents(1, &ev), "clWaitForEvents", "input copies to " + l.gpu->id);
  }
  l.res.h2d_ms += ms_since(ts);
  l.res.h2d_bytes += staged;
  return !gave_up;
}

namespace engine {

ByteRange chunk_need(const ArgRanges& r) {
  ByteRange n = r.read.value_or(ByteRange{}), w = r.write.value_or(ByteRange{});
  if (n.empty()) return w;
  if (!w.empty()) n = {std::min(n.lo, w.lo), std::max(n.hi, w.hi)};
  return n;
}

}  // namespace engine

// Sliced buffers reach the GPU chunk by chunk: the segments of the bytes a chunk of units [b, e) may read or write
// that the GPU does not have yet, which it has from then on (`staged`). The GPU claims from the back of the work
// list, so what it has stays one range. Resident buffers: what the GPU's copy lacks of those bytes (DeviceData's
// record, updated once the chunk's copies are enqueued: resident_gpu_chunk).
static std::vector<Piece> missing_segments(const Spec& spec, engine::Launch& l, const std::vector<ArgRanges>& need) {
  std::vector<Piece> segments;
  for (size_t i = 0; i < spec.args.size(); ++i) {
    if (!l.sliced[i]) continue;
    const ByteRange n = engine::chunk_need(need[i]);
    if (n.empty()) continue;
    if (l.data) {
      const DeviceData::Impl::Entry& e = *l.entries[i];
      for (const auto& [b, end] : e.gpu.missing(size_t(n.lo), std::min(size_t(n.hi), e.bytes)))
        segments.push_back({i, b, end - b});
      continue;
    }
    ByteRange& have = l.staged[i];
    if (have.empty()) {
      segments.push_back({i, size_t(n.lo), size_t(n.hi - n.lo)});
      have = n;
      continue;
    }
    if (n.lo < have.lo) segments.push_back({i, size_t(n.lo), size_t(have.lo - n.lo)});
    if (n.hi > have.hi) segments.push_back({i, size_t(have.hi), size_t(n.hi - have.hi)});
    have = {std::min(have.lo, n.lo), std::max(have.hi, n.hi)};
  }
  return segments;
}

// Before a chunk of units [b, e) is enqueued, the bytes it needs that the GPU does not have yet are staged (through
// pinned memory, by the idle cores) and their DMA enqueued ahead of the kernel. Returns the first copy's event, or
// throws GiveUp after returning the chunk to the work list.
cl::Event Executor::Impl::stage_slices(Launch& l, size_t b, size_t e) {
  const auto need = unit_ranges(l, b, e);
  const std::vector<ByteRange> before_chunk = l.staged;
  const std::vector<Piece> segments = missing_segments(spec, l, need);
  if (segments.empty()) {
    if (l.data) resident_gpu_chunk(l, need);
    return cl::Event{};
  }
  const auto ts = Clock::now();
  const auto pieces = engine::make_pieces(segments, l.copy_threads);
  for (const auto& g : segments)
    if (!in_place_input(spec, l, g.arg)) l.gpu->pinned(l.gpu->pinned_in, g.arg, spec.args[g.arg].bytes());
  std::vector<cl::Event> events(pieces.size());
  // Under dynamic distribution the GPU gives the chunk up, as it gives up whole inputs, when at the CPU's
  // measured rate the CPU would finish the chunk and what is left before the chunk's inputs had arrived at the
  // staging rate measured so far (this launch's): the copies would only take memory bandwidth from the CPU. A warm
  // launch trusts its learned share instead (run_devices).
  const bool may_give_up = l.cpu && l.static_share < 0 && !l.res.warm;
  size_t total = 0;
  for (const auto& g : segments) total += g.bytes;
  std::atomic<size_t> sent{0};
  std::atomic<bool> give_up{false};
  const size_t left = l.wl.remaining() + (e - b);
  engine::for_pieces(pieces.size(), l.copy_threads, [&](size_t k) {
    if (give_up) return;
    const double bw = l.chunk_bytes_staged > 0 ? double(l.chunk_bytes_staged) / l.chunk_staging_ms
                      : sent > 0               ? double(sent) / ms_since(ts)
                                               : 0;
    if (may_give_up && l.rates.cpu_finishes_first(left, total - sent, bw)) {
      give_up = true;
      return;
    }
    events[k] = send_piece(l, pieces[k]);
    sent += pieces[k].bytes;
  });
  if (give_up) {
    {
      std::lock_guard<std::mutex> g(l.rates.m);
      if (l.rates.cpu_active && l.wl.untake_back(b, e)) {
        l.res.h2d_bytes += sent;
        l.res.h2d_ms += ms_since(ts);
        l.staged = before_chunk;  // what arrived of this chunk's bytes is not used
        throw engine::GiveUp{};
      }
    }
    // The CPU has finished: nobody else would run the chunk, so its inputs go after all.
    engine::for_pieces(pieces.size(), l.copy_threads, [&](size_t k) {
      if (!events[k]) events[k] = send_piece(l, pieces[k]), sent += pieces[k].bytes;
    });
  }
  l.res.h2d_bytes += sent;
  l.res.h2d_ms += ms_since(ts);
  if (l.data) resident_gpu_chunk(l, need);
  l.chunk_bytes_staged += total;
  l.chunk_staging_ms += ms_since(ts);
  return std::move(events.front());
}

}  // namespace dop
