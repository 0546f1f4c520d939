// Devices as the executor drives them: sides (a device's context, queue and built kernel), program builds in the
// range form, the CPU's core counts as sub-devices of one context, the GPU's plain and malleable sides, kernel
// arguments, and a configuration resolved into the sides that run it.
#include <algorithm>
#include <cmath>

#include "dop/bounds.hpp"
#include "engine/engine.hpp"

namespace dop {

using engine::Side;

// A built kernel on one device of a context (shared by several sides) with its own queue.
std::unique_ptr<Side> Executor::Impl::make_side(const std::string& id, cl_device_id device, const cl::Context& ctx,
                                                const cl::Program& program, bool malleable) {
  auto s = std::make_unique<Side>();
  s->id = id;
  s->device = device;
  s->ctx = ctx;
  s->program = program;
  s->queue = cl::create_queue(ctx, device, true);
  s->kernel = cl::create_kernel(program, spec.kernel_name);
  s->malleable = malleable;
  cl_uint nargs = 0;
  cl::check(clGetKernelInfo(s->kernel.get(), CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, nullptr), "clGetKernelInfo");
  const size_t want = spec.args.size() + (malleable ? 2 : 0);
  if (nargs != want)
    throw SpecError((malleable && !opt.malleable_origin.empty() ? opt.malleable_origin : spec.path) + ": kernel '" +
                    spec.kernel_name + "'" + (malleable ? " (malleable form)" : "") + " has " + std::to_string(nargs) +
                    " arguments, the spec gives " + std::to_string(want));
  check_kernel_args(spec, s->kernel.get());
  return s;
}

cl::Program Executor::Impl::build(const cl::Context& ctx, const std::vector<cl_device_id>& devices, bool malleable) {
  const std::string& body = malleable ? opt.malleable_source : source;
  const std::string file = spec.kernel_file.empty() ? spec.name : spec.kernel_file;
  return cl::build_program(ctx, devices, range_form_prelude() + body,
                           spec.build_options + range_form_options(spec.global, split_dim),
                           !malleable                     ? file
                           : opt.malleable_origin.empty() ? file + " (malleable form)"
                                                          : opt.malleable_origin);
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
std::vector<int> Executor::Impl::level_counts(int extra_count) const {
  const int total = int(sel.cpu->compute_units);
  std::vector<int> counts;
  if (extra_count > 0) counts.push_back(extra_count);
  for (double l : opt.cpu_levels)
    if (l > 0) counts.push_back(std::clamp(int(std::lround(l * total)), 1, total));
  for (const auto& [c, side] : cpu_sides) counts.push_back(c);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}
std::string Executor::Impl::cpu_side_id(int c) const {
  return c < int(sel.cpu->compute_units) ? sel.cpu->id + "/" + std::to_string(c) : sel.cpu->id;
}

// Every CPU core count of the grid (and the one asked for) as sub-devices of ONE context, built once: one
// compilation per workload instead of one per core count.
Side& Executor::Impl::cpu_side(int cores) {
  if (opt.memory == MemoryMode::svm) return shared_cpu_side(cores);
  auto it = cpu_sides.find(cores);
  if (it != cpu_sides.end()) return *it->second;
  const std::vector<int> counts = level_counts(cores);
  CpuDevices d = cpu_devices(counts);
  cl::Context ctx = cpu_context(counts, d, {});
  cl::Program program = build(ctx, d.devices, false);
  std::map<int, std::unique_ptr<Side>> sides;
  for (size_t i = 0; i < counts.size(); ++i) {
    auto s = make_side(cpu_side_id(counts[i]), d.devices[i], ctx, program, false);
    s->sub = d.subs[i];
    sides[counts[i]] = std::move(s);
  }
  cpu_sides = std::move(sides);  // buffers are per launch, so replacing earlier sides loses nothing
  return *cpu_sides.at(cores);
}
Side& Executor::Impl::gpu_side(bool malleable) {
  if (opt.memory == MemoryMode::svm) shared();
  auto& s = malleable ? gpu_malleable : gpu_plain;
  if (!s) {
    cl::Context ctx = shared_ctx ? shared_ctx : cl::create_context({sel.gpu->device});
    s = make_side(sel.gpu->id, sel.gpu->device, ctx, build(ctx, {sel.gpu->device}, malleable), malleable);
  }
  return *s;
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

// Resolves the configuration into devices (built lazily, outside the timed region).
void Executor::Impl::resolve_devices(Launch& l) {
  const Config& cfg = l.res.config;
  LaunchResult& res = l.res;
  const bool use_cpu = cfg.cpu > 0, use_gpu = cfg.gpu > 0;
  if (use_cpu && !sel.cpu) throw std::invalid_argument("configuration " + to_string(cfg) + " needs a CPU device");
  if (use_gpu && !sel.gpu)
    throw std::invalid_argument("configuration " + to_string(cfg) +
                                " needs a GPU device, and none is selected (`dop devices` lists them; without a "
                                "GPU, POCL_DEVICES=\"pthread pthread\" gives PoCL a second device for the GPU role)");
  if (!use_cpu && !use_gpu) throw std::invalid_argument("configuration " + to_string(cfg) + " uses no device");

  if (use_cpu) {
    const int total = int(sel.cpu->compute_units);
    res.cpu_cores = std::clamp(int(std::lround(cfg.cpu * total)), 1, total);
    l.cpu = &cpu_side(res.cpu_cores);
    res.cpu.device = l.cpu->id;
    res.cpu.units = res.cpu_cores;
  }
  if (use_gpu) {
    res.gpu_alloc = std::clamp(int(std::lround(cfg.gpu * 8)), 1, 8);
    const bool throttle = res.gpu_alloc < 8;
    if (throttle && opt.malleable_source.empty()) {
      res.note = "GPU ran unthrottled (" + std::to_string(res.gpu_alloc) +
                 "/8 asked): " + (opt.malleable_note.empty() ? std::string("no malleable form") : opt.malleable_note);
      res.gpu_alloc = 8;
    }
    const bool use_malleable = res.gpu_alloc < 8 || (opt.malleable_at_full && !opt.malleable_source.empty());
    l.gpu = &gpu_side(use_malleable);
    res.gpu_throttled = use_malleable;
    res.gpu.device = l.gpu->id;
    res.gpu.units = res.gpu_alloc;
  }
  if (!local_note.empty()) res.note += (res.note.empty() ? "" : "; ") + local_note;
}

}  // namespace dop
