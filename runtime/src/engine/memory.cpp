// Memory modes: their names, MemoryMode::svm's shared virtual memory (why a selection cannot have it, the one
// context of every side, its allocator) and MemoryMode::pinned's page-locked memory; and a launch's memory plan: the
// mode it runs in, which buffers the GPU receives slice by slice (copy mode with a footprint), and which it reads
// and writes in place (page-locked).
#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "engine/engine.hpp"

namespace dop {

using engine::Side;

MemoryMode parse_memory_mode(const std::string& s) {
  if (s == "auto") return MemoryMode::automatic;
  if (s == "zero-copy") return MemoryMode::zero_copy;
  if (s == "copy") return MemoryMode::copy;
  if (s == "resident") return MemoryMode::resident;
  if (s == "pinned") return MemoryMode::pinned;
  if (s == "svm") return MemoryMode::svm;
  throw std::invalid_argument("memory mode '" + s + "' must be auto, zero-copy, copy, resident, pinned or svm");
}

const char* memory_mode_name(MemoryMode m) {
  switch (m) {
    case MemoryMode::zero_copy:
      return "zero-copy";
    case MemoryMode::copy:
      return "copy";
    case MemoryMode::resident:
      return "resident";
    case MemoryMode::pinned:
      return "pinned";
    case MemoryMode::svm:
      return "svm";
    default:
      return "auto";
  }
}

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

namespace engine {

void* SvmMemory::allocate(std::size_t bytes) {
  // Alignment 0: that of the largest OpenCL type, the most the specification lets an implementation guarantee.
  void* p = clSVMAlloc(ctx_.get(), flags_, bytes, 0);
  if (!p)
    throw cl::Error(CL_OUT_OF_RESOURCES, "clSVMAlloc",
                    std::to_string(bytes) + " bytes of fine-grain buffer SVM were refused");
  return p;
}
void SvmMemory::deallocate(void* p, std::size_t) noexcept { clSVMFree(ctx_.get(), p); }

PinnedMemory::PinnedMemory(cl::Context ctx, cl_device_id device)
    : ctx_(std::move(ctx)), queue_(cl::create_queue(ctx_, device, false)) {}

// One page more than asked, so that the bytes handed out start on a page whatever the implementation aligns its
// mappings to (a CPU device then uses them in place).
void* PinnedMemory::allocate(std::size_t bytes) {
  constexpr std::size_t kPage = 4096;
  Block b;
  b.bytes = bytes;
  b.buf = cl::create_buffer(ctx_, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes + kPage);
  cl_int err = CL_SUCCESS;
  b.mapped = clEnqueueMapBuffer(queue_.get(), b.buf.get(), CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes + kPage, 0,
                                nullptr, nullptr, &err);
  if (err != CL_SUCCESS || !b.mapped)
    throw cl::Error(err == CL_SUCCESS ? CL_OUT_OF_HOST_MEMORY : err, "clEnqueueMapBuffer",
                    std::to_string(bytes) + " bytes of page-locked host memory (memory mode pinned) were refused");
  const auto at = (reinterpret_cast<std::uintptr_t>(b.mapped) + kPage - 1) / kPage * kPage;
  void* p = reinterpret_cast<void*>(at);
  std::lock_guard<std::mutex> g(m_);
  blocks_.emplace(p, std::move(b));
  return p;
}

void PinnedMemory::deallocate(void* p, std::size_t) noexcept {
  Block b;
  {
    std::lock_guard<std::mutex> g(m_);
    const auto it = blocks_.find(p);
    if (it == blocks_.end()) return;
    b = std::move(it->second);
    blocks_.erase(it);
  }
  clEnqueueUnmapMemObject(queue_.get(), b.buf.get(), b.mapped, 0, nullptr, nullptr);
  clFinish(queue_.get());
}

bool PinnedMemory::owns(const void* p) const {
  std::lock_guard<std::mutex> g(m_);
  auto it = blocks_.upper_bound(p);
  if (it == blocks_.begin()) return false;
  --it;
  return static_cast<const unsigned char*>(p) < static_cast<const unsigned char*>(it->first) + it->second.bytes;
}

}  // namespace engine

// MemoryMode::svm: the CPU's sub-devices at the grid's core counts and the GPU in one context, a side for each
// (their kernels are built at first use, as in the other modes), and that context's fine-grain SVM (with
// cross-device atomics where every device has them). Made once: an SVM allocation lives in one context, so its
// devices cannot change later.
engine::SvmMemory& Executor::Impl::shared() {
  if (svm) return *svm;
  std::vector<int> counts;
  CpuDevices d;
  const std::vector<cl_device_id> gpu_dev =
      sel.gpu ? std::vector<cl_device_id>{sel.gpu->device} : std::vector<cl_device_id>{};
  if (sel.cpu) {
    counts = level_counts();
    d = cpu_devices(counts);
    shared_ctx = cpu_context(counts, d, gpu_dev);
  } else {
    shared_ctx = cl::create_context(gpu_dev);
  }
  cpu_sides.clear();
  for (size_t i = 0; i < counts.size(); ++i) {
    auto s = make_side(cpu_side_id(counts[i]), d.devices[i], shared_ctx);
    s->sub = d.subs[i];
    cpu_sides[counts[i]] = std::move(s);
  }
  if (sel.gpu) gpu = make_side(sel.gpu->id, sel.gpu->device, shared_ctx);
  bool atomics = true;
  for (const auto* dev : {&sel.cpu, &sel.gpu})
    if (*dev && !((*dev)->svm & CL_DEVICE_SVM_ATOMICS)) atomics = false;
  svm = std::make_shared<engine::SvmMemory>(
      shared_ctx, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER | (atomics ? CL_MEM_SVM_ATOMICS : 0));
  return *svm;
}

// Arguments whose buffers live where this executor runs them in place (its SVM in svm mode), or where its GPU's DMA
// reaches them in place (page-locked memory of the GPU's context in pinned mode; host memory without a GPU).
std::shared_ptr<ArgMemory> Executor::Impl::arg_memory() {
  if (opt.memory == MemoryMode::pinned) {
    if (!sel.gpu) return nullptr;
    if (!pinned_memory) pinned_memory = std::make_shared<engine::PinnedMemory>(gpu_side().ctx, sel.gpu->device);
    return pinned_memory;
  }
  if (opt.memory != MemoryMode::svm) return nullptr;
  shared();
  return svm;
}

// The mode a launch runs in, its SVM arguments checked, and in copy mode with a footprint, which buffers the GPU
// receives slice by slice.
void Executor::Impl::plan_memory(Launch& l) {
  MemoryMode mode = opt.memory;
  // Automatic: zero-copy where the GPU shares host memory, unless its copies are the caller's own buffers.
  if (mode == MemoryMode::automatic)
    mode = (!l.gpu || (sel.gpu->host_unified_memory && !(l.data && l.data->external))) ? MemoryMode::zero_copy
                                                                                       : MemoryMode::copy;
  l.res.memory = mode;
  // Page-locked: copy mode, whose GPU transfers of the buffers in that memory go straight from and to them.
  l.direct.assign(spec.args.size(), 0);
  if (mode == MemoryMode::pinned) {
    mode = MemoryMode::copy;
    if (l.gpu && pinned_memory)
      for (size_t i = 0; i < spec.args.size(); ++i)
        l.direct[i] = spec.args[i].kind == ArgKind::buffer && pinned_memory->owns(l.args[i].data());
  }
  l.mode = mode;
  l.resident = mode == MemoryMode::resident;
  // In place: both devices work on the host's bytes (zero-copy buffers over them, or the SVM they live in).
  l.in_place = mode == MemoryMode::zero_copy || mode == MemoryMode::svm;
  if (mode == MemoryMode::svm)
    for (size_t i = 0; i < spec.args.size(); ++i)
      if (spec.args[i].kind == ArgKind::buffer && l.args[i].storage.get_allocator().memory != svm)
        throw std::invalid_argument("launch of '" + spec.name + "': argument '" + spec.args[i].name +
                                    "' is not in this executor's shared virtual memory (memory mode svm): make "
                                    "the arguments with Executor::make_args or Executor::place");
  // Copy mode with a footprint: buffers whose every access is bounded go to the GPU slice by slice, as its chunks
  // need them, and come back only where it may have written.
  // Resident buffers at a configuration of both devices: the same buffers are made current chunk by chunk, on the
  // device that runs the chunk (resident.cpp); on one device, the footprint over the whole launch, nothing sliced.
  l.sliced.assign(spec.args.size(), 0);
  if (l.data && !(l.cpu && l.gpu && mode == MemoryMode::copy)) {
    if (!opt.footprint.empty()) l.footprint.emplace(opt.footprint, spec, l.args, local);
    return;
  }
  if (l.gpu && mode == MemoryMode::copy && !opt.footprint.empty()) {
    l.footprint.emplace(opt.footprint, spec, l.args, local);
    const auto whole = (*l.footprint)(0, units * cpu_local[split_dim]);
    for (size_t i = 0; i < spec.args.size(); ++i) l.sliced[i] = whole[i].read && whole[i].write;
    const bool none = std::find(l.sliced.begin(), l.sliced.end(), 1) == l.sliced.end();
    if (none && !l.data) l.footprint.reset();  // nothing to slice (resident buffers: the footprint still says where)
  }
}

}  // namespace dop
