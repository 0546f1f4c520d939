// Resident buffers (dop/device_data.hpp): the tracked buffers and their moves between host memory and the GPU's
// copy, and a launch's residency steps: before it, each device it runs on made current where the launch may read or
// write; after it, what each device may have written current where it wrote it (the GPU's part read back and
// merged only where both devices may have written the same bytes); after a failure, those bytes lost.
#include "engine/resident.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "engine/engine.hpp"

namespace dop {

using Range = RangeSet::Range;

namespace {

std::string buffer_name(const ArgData& a) { return a.spec && !a.spec->name.empty() ? a.spec->name : "a buffer"; }

// A footprint's range as bytes of a buffer of `bytes`: the whole buffer where the footprint does not bound it.
Range clamp(const std::optional<ByteRange>& r, size_t bytes) {
  if (!r) return {0, bytes};
  if (r->empty() || r->hi <= 0) return {0, 0};
  return {size_t(std::max<int64_t>(r->lo, 0)), std::min(size_t(r->hi), bytes)};
}

// A move of the launch's buffer `i` (DeviceData::Impl::move on its queue), timed into the launch's result.
void timed_move(engine::Launch& l, DeviceData::Impl::Entry& e, size_t i, bool to_gpu, const Range& r) {
  const auto ts = engine::Clock::now();
  const size_t n = l.data->move(e, to_gpu, l.args[i].data(), r.first, r.second, l.data->queue.get());
  (to_gpu ? l.res.h2d_bytes : l.res.d2h_bytes) += n;
  (to_gpu ? l.res.h2d_ms : l.res.d2h_ms) += engine::ms_since(ts);
}

bool overlap(const Range& a, const Range& b) {
  return a.first < a.second && b.first < b.second && a.first < b.second && b.first < a.second;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// DeviceData
// ---------------------------------------------------------------------------------------------------------------

DeviceData::Impl::Entry& DeviceData::Impl::entry(const ArgData& a) {
  auto it = buffers.find(a.data());
  if (it == buffers.end()) {
    Entry& e = buffers[a.data()];
    e.bytes = a.bytes;
    e.name = buffer_name(a);
    e.host.add(0, a.bytes);
    return e;
  }
  if (it->second.bytes != a.bytes)
    throw std::invalid_argument("DeviceData: " + buffer_name(a) + " (" + std::to_string(a.bytes) +
                                " bytes) lies where a tracked buffer of " + std::to_string(it->second.bytes) +
                                " bytes was: forget a buffer before its memory is freed or reallocated");
  return it->second;
}

const DeviceData::Impl::Entry* DeviceData::Impl::find(const ArgData& a) const {
  auto it = buffers.find(a.data());
  return it == buffers.end() || it->second.bytes != a.bytes ? nullptr : &it->second;
}

cl_mem DeviceData::Impl::gpu_buffer(Entry& e) {
  if (!e.buf) e.buf = cl::create_buffer(ctx, CL_MEM_READ_WRITE, std::max<size_t>(e.bytes, 1));
  return e.buf.get();
}

void DeviceData::Impl::check_not_lost(const Entry& e, size_t lo, size_t hi, const std::string& what) const {
  const auto lost = e.lost.within(lo, std::min(hi, e.bytes));
  if (lost.empty()) return;
  throw std::runtime_error(what + ": bytes [" + std::to_string(lost.front().first) + ", " +
                           std::to_string(lost.front().second) + ") of " + e.name +
                           " were lost by a failed launch (its devices may have written them part way); write them "
                           "and declare it with DeviceData::wrote");
}

size_t DeviceData::Impl::move(Entry& e, bool to_gpu, void* host, size_t lo, size_t hi, cl_command_queue q) {
  RangeSet& dst = to_gpu ? e.gpu : e.host;
  const auto missing = dst.missing(lo, std::min(hi, e.bytes));
  if (missing.empty()) return 0;
  const cl_mem buf = gpu_buffer(e);
  size_t n = 0;
  for (const auto& [b, end] : missing) {
    unsigned char* p = static_cast<unsigned char*>(host) + b;
    if (to_gpu)
      cl::check(clEnqueueWriteBuffer(q, buf, CL_TRUE, b, end - b, p, 0, nullptr, nullptr), "clEnqueueWriteBuffer",
                "resident " + e.name + " to " + device_id);
    else
      cl::check(clEnqueueReadBuffer(q, buf, CL_TRUE, b, end - b, p, 0, nullptr, nullptr), "clEnqueueReadBuffer",
                "resident " + e.name + " to host memory");
    dst.add(b, end);
    n += end - b;
  }
  (to_gpu ? moved.h2d_bytes : moved.d2h_bytes) += n;
  return n;
}

DeviceData::DeviceData(const cl::Selection& devices) : impl_(std::make_unique<Impl>()) {
  if (!devices.gpu) throw std::invalid_argument("DeviceData: the selection has no GPU to keep buffers on");
  impl_->device = devices.gpu->device;
  impl_->device_id = devices.gpu->id;
  impl_->ctx = cl::create_context({impl_->device});
  impl_->queue = cl::create_queue(impl_->ctx, impl_->device, false);
}
DeviceData::DeviceData(cl_context context, cl_device_id gpu) : impl_(std::make_unique<Impl>()) {
  if (!context || !gpu) throw std::invalid_argument("DeviceData: no context or no GPU device given");
  cl::check(clRetainContext(context), "clRetainContext", "DeviceData over the caller's context");
  impl_->ctx = cl::Context(context);
  impl_->device = gpu;
  impl_->device_id = "the caller's GPU";
  impl_->external = true;
  impl_->queue = cl::create_queue(impl_->ctx, gpu, false);  // sync's reads, and launches' moves
}
DeviceData::~DeviceData() = default;

void DeviceData::track(const ArgData& buffer) {
  std::lock_guard<std::mutex> l(impl_->m);
  impl_->entry(buffer);
}

void DeviceData::forget(ArgData& buffer) {
  std::lock_guard<std::mutex> l(impl_->m);
  auto it = impl_->buffers.find(buffer.data());
  if (it == impl_->buffers.end()) return;
  if (it->second.bytes == buffer.bytes)
    impl_->move(it->second, false, buffer.data(), 0, buffer.bytes, impl_->queue.get());
  impl_->buffers.erase(it);
}

void DeviceData::wrote(const ArgData& buffer, size_t lo, size_t hi) {
  std::lock_guard<std::mutex> l(impl_->m);
  Impl::Entry& e = impl_->entry(buffer);
  hi = std::min(hi, e.bytes);
  if (lo >= hi) return;
  e.host.add(lo, hi);
  e.gpu.remove(lo, hi);
  e.lost.remove(lo, hi);
}

size_t DeviceData::sync(ArgData& buffer, size_t lo, size_t hi) {
  std::lock_guard<std::mutex> l(impl_->m);
  Impl::Entry* e = impl_->buffers.count(buffer.data()) ? &impl_->entry(buffer) : nullptr;
  if (!e) return 0;  // not tracked: host memory is the only copy
  impl_->check_not_lost(*e, lo, hi, "DeviceData::sync");
  return impl_->move(*e, false, buffer.data(), lo, hi, impl_->queue.get());
}

bool DeviceData::host_current(const ArgData& buffer, size_t lo, size_t hi) const {
  std::lock_guard<std::mutex> l(impl_->m);
  const Impl::Entry* e = impl_->find(buffer);
  return e && e->host.covers(lo, std::min(hi, e->bytes));
}

bool DeviceData::gpu_current(const ArgData& buffer, size_t lo, size_t hi) const {
  std::lock_guard<std::mutex> l(impl_->m);
  const Impl::Entry* e = impl_->find(buffer);
  return e && e->gpu.covers(lo, std::min(hi, e->bytes));
}

void DeviceData::adopt(const ArgData& buffer, cl_mem gpu_copy, const RangeSet& host_current,
                       const RangeSet& gpu_current) {
  const std::string name = buffer_name(buffer);
  cl_context owner = nullptr;
  size_t size = 0;
  cl::check(clGetMemObjectInfo(gpu_copy, CL_MEM_CONTEXT, sizeof owner, &owner, nullptr), "clGetMemObjectInfo",
            "DeviceData::adopt of " + name);
  cl::check(clGetMemObjectInfo(gpu_copy, CL_MEM_SIZE, sizeof size, &size, nullptr), "clGetMemObjectInfo",
            "DeviceData::adopt of " + name);
  if (owner != impl_->ctx.get())
    throw std::invalid_argument("DeviceData::adopt: the GPU copy of " + name +
                                " is a buffer of another context than the one the GPU side runs in (" +
                                impl_->device_id + "): adopt only buffers of the context given to DeviceData");
  if (size < buffer.bytes)
    throw std::invalid_argument("DeviceData::adopt: the GPU copy of " + name + " has " + std::to_string(size) +
                                " bytes, the buffer " + std::to_string(buffer.bytes));
  for (const auto& [b, e] : host_current.missing(0, buffer.bytes))
    if (!gpu_current.covers(b, e))
      throw std::invalid_argument("DeviceData::adopt of " + name + ": bytes [" + std::to_string(b) + ", " +
                                  std::to_string(e) + ") are said current neither in host memory nor on the GPU");
  std::lock_guard<std::mutex> l(impl_->m);
  auto it = impl_->buffers.find(buffer.data());
  if (it != impl_->buffers.end() && it->second.buf && it->second.buf.get() != gpu_copy)
    throw std::invalid_argument("DeviceData::adopt: " + name +
                                " is tracked already with another GPU copy: release or forget it first");
  Impl::Entry& e = impl_->entry(buffer);
  if (!e.buf) {
    cl::check(clRetainMemObject(gpu_copy), "clRetainMemObject", "DeviceData::adopt of " + name);
    e.buf = cl::Buffer(gpu_copy);
  }
  e.host = RangeSet();
  e.gpu = RangeSet();
  e.lost = RangeSet();
  for (const auto& [b, end] : host_current.within(0, e.bytes)) e.host.add(b, end);
  for (const auto& [b, end] : gpu_current.within(0, e.bytes)) e.gpu.add(b, end);
}

DeviceData::Copies DeviceData::release(const ArgData& buffer) {
  std::lock_guard<std::mutex> l(impl_->m);
  Copies c;
  auto it = impl_->buffers.find(buffer.data());
  if (it == impl_->buffers.end() || it->second.bytes != buffer.bytes) {
    c.host.add(0, buffer.bytes);
    return c;
  }
  c.host = std::move(it->second.host);
  c.gpu = std::move(it->second.gpu);
  c.lost = std::move(it->second.lost);
  impl_->buffers.erase(it);
  return c;
}

DeviceData::Moved DeviceData::moved() const {
  std::lock_guard<std::mutex> l(impl_->m);
  return impl_->moved;
}

cl_device_id DeviceData::gpu_device() const { return impl_->device; }

// ---------------------------------------------------------------------------------------------------------------
// A launch's residency steps
// ---------------------------------------------------------------------------------------------------------------

// What units [b, e) may read and write of every argument: the footprint's ranges where it bounds a buffer, nullopt
// (the whole buffer) otherwise; nothing for an empty range of units.
std::vector<ArgRanges> Executor::Impl::unit_ranges(Launch& l, size_t b, size_t e) const {
  if (b >= e) return std::vector<ArgRanges>(spec.args.size(), ArgRanges{ByteRange{}, ByteRange{}});
  if (!l.footprint) return std::vector<ArgRanges>(spec.args.size());
  const size_t unit_items = cpu_local[split_dim];
  return (*l.footprint)(b * unit_items, e * unit_items);
}

// Before the devices run (timed): every buffer tracked, and made current where the launch may read or write it in
// the memories of the devices that run: host memory for the CPU (and a GPU working in it in place), the GPU's copy
// for the GPU. Sliced buffers (both devices running, the footprint bounding the buffer) are made current chunk by
// chunk instead, on the device that runs the chunk (resident_cpu_chunk, and stage_slices for the GPU). In tests
// (poison_gpu_buffers), what the GPU's copy does not hold is overwritten with garbage.
void Executor::Impl::resident_before(Launch& l) {
  DeviceData::Impl& d = *l.data;
  const auto all = unit_ranges(l, 0, units);
  const bool host_runs = l.cpu || (l.gpu && l.in_place);
  const bool gpu_runs = l.gpu && !l.in_place;
  l.entries.assign(spec.args.size(), nullptr);
  l.cpu_wrote.assign(spec.args.size(), RangeSet());
  l.gpu_wrote.assign(spec.args.size(), RangeSet());
  for (size_t i = 0; i < spec.args.size(); ++i) {
    if (spec.args[i].kind != ArgKind::buffer) continue;
    DeviceData::Impl::Entry& e = d.entry(l.args[i]);
    l.entries[i] = &e;
    for (const Range& r : {clamp(all[i].read, e.bytes), clamp(all[i].write, e.bytes)}) {
      d.check_not_lost(e, r.first, r.second, "launch of '" + spec.name + "'");
      if (l.sliced[i]) continue;  // chunk by chunk
      if (host_runs) timed_move(l, e, i, false, r);
      if (gpu_runs) timed_move(l, e, i, true, r);
    }
    if (gpu_runs && opt.poison_gpu_buffers)
      for (const auto& [b, end] : e.gpu.missing(0, e.bytes))
        engine::poison(d.queue.get(), d.gpu_buffer(e), b, end, spec.args[i].name);
  }
  cl::finish(d.queue);
  l.h2d_before_chunks = l.res.h2d_bytes;  // what chunks stage from here on is counted into moved afterwards
}

// Before the CPU runs a chunk of units [b, e) (its driver's thread): host memory made current over what the chunk
// may read or write of each sliced buffer, read from the GPU's copy where only it holds the bytes (blocking, while
// the CPU's previous chunk runs). Where the chunk may write bytes no earlier CPU chunk of the launch could have, their
// contents now are the launch's initial ones (for a merge, should the GPU's chunks have written there too).
cl::Event Executor::Impl::resident_cpu_chunk(Launch& l, size_t b, size_t e) {
  const auto need = unit_ranges(l, b, e);
  for (size_t i = 0; i < spec.args.size(); ++i) {
    if (!l.sliced[i]) continue;
    DeviceData::Impl::Entry& en = *l.entries[i];
    const Range n = clamp(engine::chunk_need(need[i]), en.bytes);
    if (!en.host.covers(n.first, n.second)) timed_move(l, en, i, false, n);  // (no clock read when nothing lacks)
    const Range w = clamp(need[i].write, en.bytes);
    if (spec.args[i].access == Access::read || w.first >= w.second) continue;
    if (l.first_contents[i])
      for (const auto& [lo, hi] : l.cpu_wrote[i].missing(w.first, w.second))
        std::memcpy(l.first_contents[i].get() + lo, static_cast<const unsigned char*>(l.args[i].data()) + lo, hi - lo);
    l.cpu_wrote[i].add(w.first, w.second);
  }
  return cl::Event{};
}

// Once the GPU's copies for a chunk are enqueued (stage_slices, the GPU driver's thread; the queue is in order, so
// the chunk's kernel runs after them): the GPU's copy holds what the chunk may read or write of each sliced buffer.
void Executor::Impl::resident_gpu_chunk(Launch& l, const std::vector<ArgRanges>& need) {
  for (size_t i = 0; i < spec.args.size(); ++i) {
    if (!l.sliced[i]) continue;
    DeviceData::Impl::Entry& en = *l.entries[i];
    const Range n = clamp(engine::chunk_need(need[i]), en.bytes);
    if (n.first < n.second) en.gpu.add(n.first, n.second);
    const Range w = clamp(need[i].write, en.bytes);
    if (spec.args[i].access != Access::read && w.first < w.second) l.gpu_wrote[i].add(w.first, w.second);
  }
}

// After the devices ran: what each may have written is current in its memory and stale in the other. Where both
// may have written the same bytes of a buffer, the GPU's part is read back and merged into host memory, as a plain
// launch does (host memory is then current there, and the GPU's copy stale where the CPU may have written).
void Executor::Impl::resident_after(Launch& l) {
  l.data->moved.h2d_bytes += l.res.h2d_bytes - l.h2d_before_chunks;  // what the GPU's chunks staged
  const size_t boundary = l.wl.front();  // the CPU ran units [0, boundary), the GPU the rest
  const auto cpu_w = unit_ranges(l, 0, l.res.cpu.work_groups > 0 ? boundary : 0);
  const auto gpu_w = unit_ranges(l, boundary, l.res.gpu.work_groups > 0 ? units : boundary);
  std::vector<Piece> merged;
  std::vector<char> merge_arg(spec.args.size(), 0);
  for (size_t i = 0; i < spec.args.size(); ++i) {
    DeviceData::Impl::Entry* e = l.entries[i];
    if (!e || spec.args[i].access == Access::read) continue;
    if (l.sliced[i]) {  // what each device's chunks may have written, as they recorded it
      // The GPU's writes stay on the GPU, the CPU's in host memory; bytes both may have written are read back and
      // merged (the launch's initial contents there: resident_cpu_chunk), current in host memory from then on.
      for (const auto& [b, end] : l.gpu_wrote[i].within(0, e->bytes)) e->host.remove(b, end);
      for (const auto& [cb, ce] : l.cpu_wrote[i].within(0, e->bytes)) {
        for (const auto& [b, end] : l.gpu_wrote[i].within(cb, ce)) {
          merged.push_back({i, b, end - b});
          merge_arg[i] = 1;
          e->host.add(b, end);
        }
        e->gpu.remove(cb, ce);
      }
      continue;
    }
    Range c = clamp(cpu_w[i].write, e->bytes), g = clamp(gpu_w[i].write, e->bytes);
    if (l.in_place) {  // the GPU wrote host memory in place
      if (g.first < g.second)
        c = c.first < c.second ? Range{std::min(c.first, g.first), std::max(c.second, g.second)} : g;
      g = {0, 0};
    }
    if (overlap(c, g)) {
      merged.push_back({i, g.first, g.second - g.first});
      merge_arg[i] = 1;
    } else {
      e->host.remove(g.first, g.second);
    }
    e->gpu.remove(c.first, c.second);
  }
  if (merged.empty()) return;
  const size_t before = l.res.d2h_bytes;
  read_back(l, merged, merge_arg);
  l.data->moved.d2h_bytes += l.res.d2h_bytes - before;
}

// A launch failed after its devices may have started writing: the bytes a device that ran may have written are
// stale in its memory; those both devices may have written, or that the other did not hold, are current nowhere (a
// later sync or launch that needs them says so, until the caller writes them again).
void Executor::Impl::resident_failed(Launch& l) {
  const bool cpu_ran = l.res.cpu.work_groups > 0, gpu_ran = l.res.gpu.work_groups > 0;
  if (!cpu_ran && !gpu_ran) return;  // nothing ran: every copy is as it was
  const bool host_written = cpu_ran || (gpu_ran && l.in_place), gpu_written = gpu_ran && !l.in_place;
  l.data->moved.h2d_bytes += l.res.h2d_bytes - l.h2d_before_chunks;  // what the GPU's chunks staged
  const auto all = unit_ranges(l, 0, units);
  for (size_t i = 0; i < spec.args.size(); ++i) {
    DeviceData::Impl::Entry* e = l.entries[i];  // resident_before filled them all (it runs before the try)
    if (!e || spec.args[i].access == Access::read) continue;
    const Range w = clamp(all[i].write, e->bytes);
    if (host_written) e->host.remove(w.first, w.second);
    if (gpu_written) e->gpu.remove(w.first, w.second);
    for (const auto& [b, end] : e->host.missing(w.first, w.second))
      for (const auto& [lb, le] : e->gpu.missing(b, end)) e->lost.add(lb, le);
  }
}

}  // namespace dop
