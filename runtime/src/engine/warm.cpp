// Warm starts (ExecutorOptions::warm_start): the record a launch learns into, its key (configuration, memory mode,
// launch shape, scalar arguments), and the policy: the share a warm launch starts from, exploring a device alone,
// the periodic recheck, and what a launch teaches (learn_cpu_share averaged into the record).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/engine.hpp"

namespace dop {

namespace engine {

// A device that has run no chunk here has no rate, so no warm launch can start: the GPU gave its staging up
// because, at the CPU's rate, the CPU would finish first (an estimate, made early in the launch), or the CPU took
// every unit before the GPU's inputs arrived. That device runs the next launch alone, once, so that its time alone
// is measured (ExecutorOptions::warm_explore = 0 switches this off, as it does the other explorations).
Warm::Way Warm::untried(const ExecutorOptions& o) const {
  if (alone_tried || share < 0 || o.warm_explore <= 0) return Way::both;
  if (cpu_rate > 0 && gpu_rate <= 0) return Way::gpu_alone;
  if (gpu_rate > 0 && cpu_rate <= 0) return Way::cpu_alone;
  return Way::both;
}

// How the next warm launch runs, and whether it runs that way to measure it (`learning`) rather than because it is
// the fastest way known. A device whose share rounds to nothing sits out, unless that device alone was timed faster
// than the other alone (a GPU that gave its staging up, timed alone once: untried); after a warm launch on both,
// each way the learned share makes plausible (a device's share under `explore`) is tried; then the fastest way
// measured, except that a way whose one run lost runs once more (its first run may have paid for what later ones
// do not: pinned memory, a compilation of the CPU's kernel for a new range) and every `recheck`-th launch runs
// both, so that the share and its time stay current.
Warm::Way Warm::choose(double units, const ExecutorOptions& o, bool& learning) {
  ++launches;
  learning = true;
  const bool cpu_none = share * units < 0.5, gpu_none = (1 - share) * units < 0.5;
  if (cpu_none || gpu_none) {
    const Way plan = cpu_none ? Way::gpu_alone : Way::cpu_alone;
    const Way other = cpu_none ? Way::cpu_alone : Way::gpu_alone;
    if (runs[int(other)] == 0) {  // nothing to compare with: the plan
      learning = runs[int(plan)] < 1;
      return plan;
    }
    if (runs[int(plan)] == 0) return plan;
    return fastest({plan, other}, learning);
  }
  if (both_runs < 1 || (o.warm_recheck > 0 && launches % o.warm_recheck == 0)) return Way::both;
  if (share >= 1 - o.warm_explore && runs[int(Way::cpu_alone)] == 0) return Way::cpu_alone;
  if (share <= o.warm_explore && runs[int(Way::gpu_alone)] == 0) return Way::gpu_alone;
  return fastest({Way::both, Way::cpu_alone, Way::gpu_alone}, learning);
}

// The fastest of `ways` measured (the first wins ties and must have been timed), except that a way whose one run
// lost runs once more (`learning` then stays set).
Warm::Way Warm::fastest(std::initializer_list<Way> ways, bool& learning) const {
  Way best = *ways.begin();
  for (Way w : ways)
    if (runs[int(w)] > 0 && ms[int(w)] < ms[int(best)]) best = w;
  for (Way w : ways)
    if (w != best && runs[int(w)] == 1) return w;
  learning = false;
  return best;
}
// What a launch measured: the balanced share (replacing the learned one when that came from cold launches
// only, whose probe chunks distort it, or when they disagree by more than 0.25, a sign that the earlier
// launches paid for something this one did not, such as a first compilation), the rates, and the time of the
// way it ran, for a warm launch or one that left a device out by choice: a way's second run replaces its first
// (which may have paid for what later ones do not), later ones are averaged in. (A cold launch on both in which
// one device ran nothing is not timed as the other alone, for the same reason.)
void Warm::learn(double balanced, double cpu_r, double gpu_r, bool warm_launch, Way way, double total_ms) {
  if (balanced >= 0) {
    const bool keep = share >= 0 && (measured_warm || !warm_launch) && std::abs(balanced - share) <= 0.25;
    share = keep ? 0.5 * (share + balanced) : balanced;
    measured_warm = measured_warm || warm_launch;
  }
  if (cpu_r > 0) cpu_rate = cpu_r;
  if (gpu_r > 0) gpu_rate = gpu_r;
  if (!warm_launch && way == Way::both) return;
  double& m = ms[int(way)];
  m = runs[int(way)] < 2 ? total_ms : 0.5 * (m + total_ms);
  ++runs[int(way)];
  if (way == Way::both) ++both_runs;
}

}  // namespace engine

// What a learned share holds for: the configuration as resolved, the memory mode, the launch shape and the scalar
// arguments (they may change the work per unit: a loop bound, a matrix width).
std::string Executor::Impl::warm_key(const LaunchResult& res, const std::vector<ArgData>& args) const {
  std::string k = std::to_string(res.cpu_cores) + "/" + std::to_string(res.gpu_alloc) + (res.gpu_throttled ? "m" : "") +
                  "/" + memory_mode_name(res.memory);
  for (size_t d = 0; d < spec.global.size(); ++d)
    k += "/" + std::to_string(spec.global[d]) + "x" + std::to_string(local[d]);
  char hex[20];
  for (size_t i = 0; i < spec.args.size(); ++i)
    if (spec.args[i].kind == ArgKind::scalar)
      for (uint64_t w : args[i].storage) std::snprintf(hex, sizeof hex, ":%llx", (unsigned long long)w), k += hex;
  return k;
}

// Warm start: both rates and the share at which the devices finish together are known from earlier launches.
// The GPU claims its share less the tail in one chunk (one copy, one enqueue, as a static split would); the CPU
// claims adaptively from the start; a device whose share rounds to nothing sits the launch out.
void Executor::Impl::warm_start(Launch& l) {
  if (!l.dynamic_both || !opt.warm_start) return;
  l.learned = &warm[warm_key(l.res, l.args)];
  Warm& learned = *l.learned;
  if (!learned.known()) {
    l.way = learned.untried(opt);
    // The first cold launch learns the rates and the share; a later one (no device to time alone, or exploring
    // off) runs as every launch will until both devices have run a chunk.
    l.res.learning = l.way != Warm::Way::both || learned.share < 0;
    if (l.way == Warm::Way::both) return;
    learned.alone_tried = true;
    l.res.left_out = true;  // the device that ran nothing runs alone, as at a configuration of it alone
    l.run_cpu = l.way == Warm::Way::cpu_alone;
    l.run_gpu = l.way == Warm::Way::gpu_alone;
    if (l.run_gpu) l.gpu_first = units;
    std::lock_guard<std::mutex> g(l.rates.m);
    l.rates.cpu_active = l.run_cpu;
    l.rates.gpu_active = l.run_gpu;
    return;
  }
  const double s = learned.share;
  l.way = learned.choose(double(units), opt, l.res.learning);
  l.res.warm = true;
  l.res.start_cpu_share = s;
  l.res.left_out = l.way != Warm::Way::both;
  l.run_cpu = l.way != Warm::Way::gpu_alone;
  l.run_gpu = l.way != Warm::Way::cpu_alone;
  l.cpu_seed = learned.cpu_rate;
  l.gpu_seed = learned.gpu_rate;
  // The GPU alone takes everything in one chunk, as at a configuration of the GPU alone.
  l.gpu_first = l.way == Warm::Way::gpu_alone
                    ? units
                    : size_t((1 - s) * double(units) * (1 - std::clamp(opt.warm_tail, 0.0, 1.0)));
  if (fine > 1 && l.way != Warm::Way::gpu_alone) l.gpu_first = l.gpu_first / fine * fine;
  l.cpu_first = 0;
  std::lock_guard<std::mutex> g(l.rates.m);
  l.rates.cpu = l.cpu_seed;
  l.rates.gpu = l.gpu_seed;
  l.rates.cpu_active = l.run_cpu;
  l.rates.gpu_active = l.run_gpu;
}

// What this launch teaches: the share at which both devices would have finished together (the GPU's part of
// the time includes reading its outputs back), averaged into the learned one, and the devices' last rates.
void Executor::Impl::learn(Launch& l) {
  if (!l.dynamic_both) return;
  LaunchResult& res = l.res;
  const size_t cpu_units = l.wl.front();
  res.balanced_cpu_share = learn_cpu_share(double(cpu_units), res.cpu.finish_ms, double(units - cpu_units),
                                           res.gpu.finish_ms + (l.resident ? 0.0 : res.d2h_ms));
  if (l.learned) {
    // A device left out measured nothing about the balance; a launch that left one out by choice says how
    // fast the other is alone.
    std::lock_guard<std::mutex> g(l.rates.m);
    l.learned->learn(res.left_out ? -1 : res.balanced_cpu_share, l.rates.cpu, l.rates.gpu, res.warm, l.way,
                     res.total_ms);
  }
}

double learn_cpu_share(double cpu_units, double cpu_ms, double gpu_units, double gpu_ms) {
  if (gpu_units <= 0) return 1;
  if (cpu_units <= 0) return 0;
  const double c = cpu_units / std::max(cpu_ms, 1e-6), g = gpu_units / std::max(gpu_ms, 1e-6);
  return c / (c + g);
}

}  // namespace dop
