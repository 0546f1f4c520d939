// Memory modes: their names, and MemoryMode::svm's shared virtual memory (why a selection cannot have it, the one
// context of every side, its allocator); and a launch's memory plan: the mode it runs in, and which buffers the GPU
// receives slice by slice (copy mode with a footprint).
#include <algorithm>
#include <stdexcept>

#include "engine/engine.hpp"

namespace dop {

using engine::Side;

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

// Arguments whose buffers live where this executor runs them in place (its SVM in svm mode).
std::shared_ptr<ArgMemory> Executor::Impl::arg_memory() {
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
  l.res.memory = l.mode = mode;
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
