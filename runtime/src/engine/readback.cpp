// Transfers back: outputs to host memory after the drivers stopped. In-place buffers are synchronised; in copy modes
// the GPU's writes are read back (into pinned memory, piece by piece, only what it may have written where the
// footprint bounds a buffer) and merged with the CPU's where both may have written.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "engine/engine.hpp"

namespace dop {

using engine::ms_since;
using engine::Piece;
using engine::Side;

namespace {

// Maps and unmaps a side's writable host buffers, so that the host sees what the device wrote in place.
void sync_in_place(const Spec& spec, Side& s, std::vector<cl::Buffer>& bufs) {
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const ArgSpec& a = spec.args[i];
    if (a.kind != ArgKind::buffer || a.access == Access::read || !bufs[i]) continue;
    cl_int err = CL_SUCCESS;
    void* p =
        clEnqueueMapBuffer(s.queue.get(), bufs[i].get(), CL_TRUE, CL_MAP_READ, 0, a.bytes(), 0, nullptr, nullptr, &err);
    cl::check(err, "clEnqueueMapBuffer", "argument '" + a.name + "'");
    cl::check(clEnqueueUnmapMemObject(s.queue.get(), bufs[i].get(), p, 0, nullptr, nullptr), "clEnqueueUnmapMemObject");
  }
  cl::finish(s.queue);
}

}  // namespace

// Outputs back to host memory. CPU first (a no-op for in-place buffers), then the GPU's writes on top. The timed
// region ends when every output is in host memory (resident data: when every result is where its device computed
// it, before the read-back).
void Executor::Impl::collect(Launch& l) {
  // A device that ran nothing wrote nothing: its buffers are not mapped (a warm launch may leave the CPU out).
  if (l.cpu && l.res.cpu.work_groups > 0) sync_in_place(spec, *l.cpu, l.cpu_bufs);
  if (l.gpu && l.mode == MemoryMode::zero_copy) sync_in_place(spec, *l.gpu, l.gpu_host_bufs);
  // The GPU's writes come back only if it ran anything; they are merged only if the CPU ran something too
  // (otherwise the GPU's copy is the whole result). Reads go into pinned memory piece by piece; every core is
  // free by now, so several threads copy (or merge) each piece into host memory as soon as it has arrived.
  // Resident data: the timed region ends here, with every result where its device computed it.
  if (l.resident) l.res.total_ms = ms_since(l.t0);
  if (l.data) {
    resident_after(l);  // results stay where they were written, merged only where both devices may have written
  } else if (l.gpu && !l.in_place && l.res.gpu.work_groups > 0) {
    std::vector<char> merge_arg;
    const std::vector<Piece> outputs = gpu_outputs(l, merge_arg);
    read_back(l, outputs, merge_arg);
  }
  if (!l.resident) l.res.total_ms = ms_since(l.t0);
}

// What comes back from the GPU, and (merge_arg) which arguments are merged rather than copied.
std::vector<Piece> Executor::Impl::gpu_outputs(Launch& l, std::vector<char>& merge_arg) {
  const bool both = l.cpu && l.res.cpu.work_groups > 0;
  // The GPU ran units [boundary, units), the CPU [0, boundary). A sliced buffer comes back only over the bytes
  // the GPU may have written; it is merged only where the CPU may have written there too (the GPU received
  // those bytes' initial contents, so elsewhere its copy is the result).
  const size_t boundary = l.wl.front();
  std::vector<ArgRanges> gpu_w, cpu_w;
  if (l.footprint) {
    gpu_w = unit_ranges(l, boundary, units);
    if (both) cpu_w = unit_ranges(l, 0, boundary);
  }
  std::vector<Piece> outputs;
  merge_arg.assign(spec.args.size(), both);
  for (size_t i = 0; i < spec.args.size(); ++i) {
    if (spec.args[i].kind != ArgKind::buffer || spec.args[i].access == Access::read) continue;
    if (!l.sliced[i]) {
      outputs.push_back({i, 0, spec.args[i].bytes()});
      continue;
    }
    // Every byte the GPU wrote lies in a chunk's write range, and it received each of those before the chunk.
    ByteRange w = gpu_w.at(i).write.value_or(ByteRange{});
    w = {std::max(w.lo, l.staged[i].lo), std::min(w.hi, l.staged[i].hi)};
    if (w.empty()) continue;
    outputs.push_back({i, size_t(w.lo), size_t(w.hi - w.lo)});
    const ByteRange c = both ? cpu_w.at(i).write.value_or(ByteRange{}) : ByteRange{};
    merge_arg[i] = !c.empty() && c.lo < w.hi && w.lo < c.hi;
  }
  return outputs;
}

// `outputs` of the GPU read back in pieces (into pinned memory where there is some) and copied or merged into host
// memory by several threads as each piece arrives.
void Executor::Impl::read_back(Launch& l, const std::vector<Piece>& outputs, const std::vector<char>& merge_arg) {
  Side* const gpu = l.gpu;
  std::vector<ArgData>& args = l.args;
  const auto ts = Clock::now();
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const unsigned threads = std::min(hw, 8u);
  const auto pieces = engine::make_pieces(outputs, threads);
  std::vector<unsigned char*> dst(spec.args.size(), nullptr);
  std::vector<std::vector<uint64_t, PageAlignedAllocator<uint64_t>>> staging(spec.args.size());
  for (const Piece& g : outputs) {
    const size_t i = g.arg;
    // Page-locked host memory (MemoryMode::pinned) takes the DMA in place where nothing is merged.
    dst[i] = l.direct[i] && !merge_arg[i] ? static_cast<unsigned char*>(args[i].data())
                                          : gpu->pinned(gpu->pinned_out, i, spec.args[i].bytes());
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
    cl::check(clEnqueueReadBuffer(gpu->queue.get(), l.gpu_mems[p.arg], CL_FALSE, p.offset, p.bytes,
                                  dst[p.arg] + p.offset, 0, nullptr, &ev),
              "clEnqueueReadBuffer", "argument '" + spec.args[p.arg].name + "'");
    events[k] = cl::Event(ev);
  }
  cl::check(clFlush(gpu->queue.get()), "clFlush");
  std::atomic<int64_t> merge_ns{0};
  engine::for_pieces(pieces.size(), threads, [&](size_t k) {
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
    merge(type_size(spec.args[p.arg].type), host, got, l.initial[p.arg] + p.offset, p.bytes);
    merge_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - tm).count();
  });
  for (const auto& g : outputs) l.res.d2h_bytes += g.bytes;
  l.res.d2h_ms += ms_since(ts);
  l.res.merge_ms = double(merge_ns.load()) / 1e6 / double(std::min<size_t>(threads, pieces.size()));
}

// Elements the GPU changed (its copy differs from the initial contents) replace the host's, over `bytes`
// bytes of elements of `size` bytes.
void Executor::Impl::merge(size_t size, unsigned char* host, const unsigned char* gpu, const unsigned char* initial,
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
    case 1:
      loop(uint8_t{});
      break;
    case 2:
      loop(uint16_t{});
      break;
    case 4:
      loop(uint32_t{});
      break;
    default:
      loop(uint64_t{});
      break;
  }
}

}  // namespace dop
