// The executor: construction (the spec's geometry), rebinding to another launch of the same kernel, one launch as
// its sequence of named steps (each in the file of its concern: devices, memory, staging, driver, readback, warm),
// the model's decision for launch_auto, and the public Executor methods, serialised per executor.
#include <stdexcept>

#include "dop/bounds.hpp"
#include "engine/engine.hpp"

namespace dop {

using engine::Clock;
using engine::ms_since;

Executor::Impl::Impl(const Spec& s, const std::string& src, const cl::Selection& d, ExecutorOptions o)
    : spec(s), source(src), sel(d), opt(std::move(o)) {
  if (!sel.cpu && !sel.gpu) throw std::invalid_argument("no device to run '" + spec.name + "' on");
  if (opt.memory == MemoryMode::svm) {
    const std::string why = svm_unavailable(sel);
    if (!why.empty()) throw std::invalid_argument("memory mode svm for '" + spec.name + "': " + why);
  }
  if (opt.data) {
    if (opt.memory != MemoryMode::copy && opt.memory != MemoryMode::automatic)
      throw std::invalid_argument(std::string("resident buffers (ExecutorOptions::data) for '") + spec.name +
                                  "' need memory mode copy or auto, not " + memory_mode_name(opt.memory));
    if (!sel.gpu || sel.gpu->device != opt.data->gpu_device())
      throw std::invalid_argument("resident buffers (ExecutorOptions::data) for '" + spec.name +
                                  "' live on another GPU than the executor's");
  }
  geometry();
  check_limits();
}

// The spec's sizes against every selected device's limits, before anything is allocated or built.
void Executor::Impl::check_limits() const {
  for (const auto* d : {&sel.cpu, &sel.gpu})
    if (*d) check_device_limits(spec, local, (*d)->device);
}

// Another launch of the same kernel, at any shape: sides, sub-devices, queues and built kernels are kept (a kernel
// is built anew only for build options not seen before: a 3D kernel's full size is a build constant), so are the
// GPU's buffers and pinned memory while they are large enough, and warm-start records (keyed by launch shape).
void Executor::Impl::rebind(const Spec& s) {
  bool same_kernel =
      s.kernel_name == spec.kernel_name && s.build_options == spec.build_options && s.args.size() == spec.args.size();
  for (size_t i = 0; same_kernel && i < s.args.size(); ++i) same_kernel = s.args[i].kind == spec.args[i].kind;
  if (!same_kernel)
    throw std::invalid_argument("rebind of '" + spec.name + "' to '" + s.name +
                                "': another kernel, build options or argument kinds; make a new executor");
  spec = s;
  local_note.clear();
  geometry();
  check_limits();
}

// One launch, as the sequence it is: resolve devices, plan memory, stage, drive, collect, learn.
LaunchResult Executor::Impl::launch(std::vector<ArgData>& args, const Config& cfg, double static_share) {
  if (args.size() != spec.args.size())
    throw std::invalid_argument("launch of '" + spec.name + "': " + std::to_string(args.size()) +
                                " arguments given, the spec has " + std::to_string(spec.args.size()));
  for (size_t i = 0; i < spec.args.size(); ++i)
    if (spec.args[i].kind != ArgKind::local && args[i].bytes != spec.args[i].bytes())
      throw std::invalid_argument("launch of '" + spec.name + "': argument '" + spec.args[i].name + "' has " +
                                  std::to_string(args[i].bytes) + " bytes, the spec's " +
                                  std::to_string(spec.args[i].bytes()));
  check_footprint_bounds(spec, args, opt.footprint, local);  // before anything is enqueued
  LaunchGuard guard(spec, args, "launch at " + to_string(cfg));
  Launch l(args, cfg, static_share, units);
  std::unique_lock<std::mutex> data_lock;  // resident buffers: held for the launch (other executors share them)
  if (opt.data) {
    data_lock = std::unique_lock<std::mutex>(opt.data->impl().m);
    l.data = &opt.data->impl();
  }
  resolve_devices(l);      // the configuration's sides, built lazily (outside the timed region)
  plan_memory(l);          // the memory mode, and which buffers go to the GPU slice by slice
  prepare_gpu_buffers(l);  // the GPU's own buffers (resident data: with its inputs), outside the timed region
  if (l.gpu)
    for (const auto& [i, d] : l.gpu->gpu_buffers)
      if (d.host) guard.watch(i, *d.host, "the GPU's copy (" + l.gpu->id + ")");
  l.t0 = Clock::now();
  if (l.data) resident_before(l);  // resident buffers: each device given what it lacks of what the launch may touch
  try {
    bind_buffers(l);  // host-side buffers, what goes to the GPU, kernel arguments
    plan_chunks(l);   // first chunks and chunk minimums
    warm_start(l);    // ... or the learned share, rates and way to run
    run_devices(l);   // stage and drive: both drivers until the work list is empty
    collect(l);       // outputs back to host memory (resident buffers: where written); the timed region ends
  } catch (...) {
    if (l.data) resident_failed(l);  // what the devices may have written part way is current nowhere
    throw;
  }
  l.res.h2d_in_place_bytes = l.sent_in_place;
  // Staged and read back through pageable memory: slower, and a launch whose GPU ran says so.
  if (l.gpu && l.gpu->pinned_failed && l.res.gpu.work_groups > 0) {
    const Side& g = *l.gpu;
    l.res.note += std::string(l.res.note.empty() ? "" : "; ") + "page-locked staging memory refused (" +
                  std::to_string(g.pinned_refused_bytes) + " bytes for argument '" +
                  spec.args.at(g.pinned_refused_arg).name + "': " + g.pinned_refusal +
                  "): the GPU's copies went through pageable memory";
  }
  learn(l);  // the balanced share and rates, for the next launch
  return std::move(l.res);
}

pred::Decision Executor::Impl::decide(const std::vector<ArgData>& args) const {
  if (!opt.model || !opt.model->predictor)
    throw std::logic_error("auto launch of '" + spec.name + "': the executor has no model (ExecutorOptions::model)");
  pred::LaunchShape shape;
  shape.work_dim = unsigned(spec.global.size());
  for (size_t d = 0; d < spec.global.size(); ++d) {
    shape.global[d] = spec.global[d];
    shape.local[d] = local[d];
  }
  // The data inputs: the spec's buffer bytes, and where the inputs are: on the GPU already (resident data), or in
  // host memory, page-locked (pinned: the GPU's DMA reads the arguments in place) or not.
  shape.in_bytes = spec.in_bytes();
  shape.out_bytes = spec.out_bytes();
  shape.data_on_gpu = opt.memory == MemoryMode::resident;
  shape.data_pinned = opt.memory == MemoryMode::pinned;
  const pred::ArgValues values = integer_scalars(spec, args);
  const std::string id =
      opt.model->kernel_id.empty() ? spec.kernel_file + ":" + spec.kernel_name : opt.model->kernel_id;
  try {
    return opt.model->predictor->decide(id, opt.model->code, shape, values);
  } catch (const pred::ModelError& e) {
    throw pred::ModelError(std::string(e.what()) + " (kernel '" + spec.kernel_name + "' of " + spec.path + ")");
  }
}

Executor::Executor(const Spec& spec, const std::string& source, const cl::Selection& devices, ExecutorOptions options)
    : impl_(std::make_unique<Impl>(spec, source, devices, std::move(options))) {}
Executor::~Executor() = default;

void Executor::rebind(const Spec& spec) {
  std::lock_guard<std::mutex> lock(impl_->launch_mutex);
  impl_->rebind(spec);
}

LaunchResult Executor::launch(std::vector<ArgData>& args, const Config& config) {
  std::lock_guard<std::mutex> lock(impl_->launch_mutex);
  return impl_->launch(args, config);
}

std::vector<ArgData> Executor::make_args() {
  std::lock_guard<std::mutex> lock(impl_->launch_mutex);
  return dop::make_args(impl_->spec, impl_->arg_memory());
}

std::vector<ArgData> Executor::place(const std::vector<ArgData>& args) {
  std::lock_guard<std::mutex> lock(impl_->launch_mutex);
  return copy_args(args, impl_->arg_memory());
}

LaunchResult Executor::launch_static(std::vector<ArgData>& args, const Config& config, double cpu_share) {
  if (!(cpu_share >= 0 && cpu_share <= 1))
    throw std::invalid_argument("static CPU share " + std::to_string(cpu_share) + " is not in [0,1]");
  std::lock_guard<std::mutex> lock(impl_->launch_mutex);
  return impl_->launch(args, config, cpu_share);
}

pred::Decision Executor::decide(const std::vector<ArgData>& args) {
  std::lock_guard<std::mutex> lock(impl_->launch_mutex);
  return impl_->decide(args);
}

void Executor::forget_warm_starts() {
  std::lock_guard<std::mutex> lock(impl_->launch_mutex);
  impl_->warm.clear();
}

LaunchResult Executor::launch_auto(std::vector<ArgData>& args) {
  std::lock_guard<std::mutex> lock(impl_->launch_mutex);
  const auto t = Clock::now();
  const pred::Decision d = impl_->decide(args);
  const double us = ms_since(t) * 1e3;
  LaunchResult r = impl_->launch(args, Config{d.config.cpu, d.config.gpu});
  r.automatic = true;
  r.predicted = d.predicted;
  r.decide_us = us;
  return r;
}

std::vector<size_t> Executor::local_size() const {
  std::lock_guard<std::mutex> lock(impl_->launch_mutex);
  return impl_->local;
}

const Spec& Executor::spec() const { return impl_->spec; }
int Executor::cpu_cores_total() const { return impl_->sel.cpu ? int(impl_->sel.cpu->compute_units) : 0; }

}  // namespace dop
