// Devices as the executor drives them: sides (a device's context and queue), each made at its first use, kernels
// built in the range form at their first use on a side (through the program cache), the CPU's core counts as
// sub-devices, the GPU, kernel arguments, and a configuration resolved into the sides that run it.
#include <algorithm>
#include <cmath>

#include "dop/bounds.hpp"
#include "dop/program_cache.hpp"
#include "engine/engine.hpp"

namespace dop {

using engine::Side;

// A device of a context with its own queue; kernels are built on it at their first use (use_kernel).
std::unique_ptr<Side> Executor::Impl::make_side(const std::string& id, cl_device_id device, const cl::Context& ctx) {
  auto s = std::make_unique<Side>();
  s->id = id;
  s->device = device;
  s->ctx = ctx;
  s->queue = cl::create_queue(ctx, device, true);
  return s;
}

// Makes the side run the plain or the malleable form for the current launch shape, building it on this device
// alone at its first use (a binary from the program cache where there is one) and keeping it for later launches.
void Executor::Impl::use_kernel(Side& s, bool malleable) {
  auto& forms = s.built[malleable];
  auto it = forms.find(kernel_options);
  if (it == forms.end()) {
    const std::string& body = malleable ? opt.malleable_source : source;
    const std::string file = spec.kernel_file.empty() ? spec.name : spec.kernel_file;
    const std::string origin = !malleable                     ? file
                               : opt.malleable_origin.empty() ? file + " (malleable form)"
                                                              : opt.malleable_origin;
    const CachedProgram p =
        build_program_cached(s.ctx, {s.device}, range_form_prelude() + body, kernel_options, origin);
    ++(p.from_cache ? tally.from_cache : tally.built);
    tally.ms += p.ms;
    Side::Built b{p.program, cl::create_kernel(p.program, spec.kernel_name)};
    cl_uint nargs = 0;
    cl::check(clGetKernelInfo(b.kernel.get(), CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, nullptr), "clGetKernelInfo");
    const size_t want = spec.args.size() + (malleable ? 2 : 0);
    if (nargs != want)
      throw SpecError((malleable && !opt.malleable_origin.empty() ? opt.malleable_origin : spec.path) + ": kernel '" +
                      spec.kernel_name + "'" + (malleable ? " (malleable form)" : "") + " has " +
                      std::to_string(nargs) + " arguments, the spec gives " + std::to_string(want));
    check_kernel_args(spec, b.kernel.get());
    it = forms.emplace(kernel_options, std::move(b)).first;
  }
  s.kernel = it->second.kernel;
  s.malleable = malleable;
}

// CPU core counts as devices: a sub-device per count below the whole device (whose own handle is empty).
// `counts` sorted and unique.
Executor::Impl::CpuDevices Executor::Impl::cpu_devices(const std::vector<int>& counts) const {
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
cl::Context Executor::Impl::cpu_context(const std::vector<int>& counts, CpuDevices& d,
                                        const std::vector<cl_device_id>& extra) {
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
int cpu_cores_at(double share, int total) { return std::clamp(int(std::lround(share * total)), 1, total); }
int gpu_alloc_at(double share) { return std::clamp(int(std::lround(share * 8)), 1, 8); }
Config grid_config(const Config& cfg, int cpu_total) {
  Config g = cfg;
  if (cfg.cpu > 0 && cpu_total > 0) g.cpu = double(cpu_cores_at(cfg.cpu, cpu_total)) / cpu_total;
  if (cfg.gpu > 0) g.gpu = gpu_alloc_at(cfg.gpu) / 8.0;
  return g;
}

// The core counts of ExecutorOptions::cpu_levels, sorted and unique.
std::vector<int> Executor::Impl::level_counts() const {
  const int total = int(sel.cpu->compute_units);
  std::vector<int> counts;
  for (double l : opt.cpu_levels)
    if (l > 0) counts.push_back(cpu_cores_at(l, total));
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}
std::string Executor::Impl::cpu_side_id(int c) const {
  return c < int(sel.cpu->compute_units) ? sel.cpu->id + "/" + std::to_string(c) : sel.cpu->id;
}

// The CPU at `cores` cores: a sub-device of exactly that many (the whole device at all of them) in a context of
// its own, made at its first use. In svm mode the shared context's sides, made for the core counts of cpu_levels.
Side& Executor::Impl::cpu_side(int cores) {
  if (opt.memory == MemoryMode::svm) shared();
  auto it = cpu_sides.find(cores);
  if (it != cpu_sides.end()) return *it->second;
  if (opt.memory == MemoryMode::svm) {
    std::string have;
    for (const auto& [c, side] : cpu_sides) have += (have.empty() ? "" : ", ") + std::to_string(c);
    throw std::invalid_argument(
        "memory mode svm: the CPU's sub-devices share one context with the GPU, made for the "
        "core counts of ExecutorOptions::cpu_levels (" +
        have + "); " + std::to_string(cores) + " cores is not among them");
  }
  cl::DeviceHandle sub;
  if (cores < int(sel.cpu->compute_units)) sub = cl::create_sub_device(*sel.cpu, cl_uint(cores));
  cl_device_id device = sub ? sub.get() : sel.cpu->device;
  auto s = make_side(cpu_side_id(cores), device, cl::create_context({device}));
  s->sub = std::move(sub);
  return *(cpu_sides[cores] = std::move(s));
}
Side& Executor::Impl::gpu_side() {
  if (opt.memory == MemoryMode::svm) shared();
  // With resident buffers (ExecutorOptions::data) the GPU runs in their context, where their GPU copies live.
  if (!gpu)
    gpu = make_side(sel.gpu->id, sel.gpu->device,
                    opt.data ? opt.data->impl().ctx : cl::create_context({sel.gpu->device}));
  return *gpu;
}

// Buffers are `mems`, or in svm mode (`mems` empty) the arguments' own SVM pointers.
void Executor::Impl::set_args(Side& s, std::vector<ArgData>& args, const std::vector<cl_mem>& mems, int mod,
                              int alloc) {
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const ArgSpec& a = spec.args[i];
    const cl_uint idx = static_cast<cl_uint>(i);
    if (a.kind == ArgKind::buffer && mems.empty())
      cl::set_arg_svm(s.kernel, idx, args[i].data());
    else if (a.kind == ArgKind::buffer)
      set_spec_arg(spec, i, s.kernel, sizeof(cl_mem), &mems[i]);
    else if (a.kind == ArgKind::scalar)
      set_spec_arg(spec, i, s.kernel, a.bytes(), args[i].data());
    else
      set_spec_arg(spec, i, s.kernel, a.bytes(), nullptr);
  }
  if (s.malleable) {
    cl::set_arg(s.kernel, static_cast<cl_uint>(spec.args.size()), mod);
    cl::set_arg(s.kernel, static_cast<cl_uint>(spec.args.size() + 1), alloc);
  }
}

// Resolves the configuration into sides and their kernels (built at their first use, outside the timed region; the
// result counts what was built).
void Executor::Impl::resolve_devices(Launch& l) {
  const Config& cfg = l.res.config;
  LaunchResult& res = l.res;
  tally = {};
  const bool use_cpu = cfg.cpu > 0, use_gpu = cfg.gpu > 0;
  if (use_cpu && !sel.cpu) throw std::invalid_argument("configuration " + to_string(cfg) + " needs a CPU device");
  if (use_gpu && !sel.gpu)
    throw std::invalid_argument("configuration " + to_string(cfg) +
                                " needs a GPU device, and none is selected (`dop devices` lists them; without a "
                                "GPU, POCL_DEVICES=\"pthread pthread\" gives PoCL a second device for the GPU role)");
  if (!use_cpu && !use_gpu) throw std::invalid_argument("configuration " + to_string(cfg) + " uses no device");

  if (use_cpu) {
    const int total = int(sel.cpu->compute_units);
    res.cpu_cores = cpu_cores_at(cfg.cpu, total);
    l.cpu = &cpu_side(res.cpu_cores);
    use_kernel(*l.cpu, false);
    res.cpu.device = l.cpu->id;
    res.cpu.units = res.cpu_cores;
  }
  if (use_gpu) {
    res.gpu_alloc = gpu_alloc_at(cfg.gpu);
    const bool throttle = res.gpu_alloc < 8;
    if (throttle && opt.malleable_source.empty()) {
      res.note = "GPU ran unthrottled (" + std::to_string(res.gpu_alloc) +
                 "/8 asked): " + (opt.malleable_note.empty() ? std::string("no malleable form") : opt.malleable_note);
      res.gpu_alloc = 8;
    }
    const bool use_malleable = res.gpu_alloc < 8 || (opt.malleable_at_full && !opt.malleable_source.empty());
    l.gpu = &gpu_side();
    use_kernel(*l.gpu, use_malleable);
    res.gpu_throttled = use_malleable;
    res.gpu.device = l.gpu->id;
    res.gpu.units = res.gpu_alloc;
  }
  if (!local_note.empty()) res.note += (res.note.empty() ? "" : "; ") + local_note;
  res.programs_built = tally.built;
  res.programs_from_cache = tally.from_cache;
  res.build_ms = tally.ms;
}

}  // namespace dop
