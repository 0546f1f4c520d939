#include "dop/sweep.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>

#include "dop/run_single.hpp"

namespace dop {

std::string data_on_of(MemoryMode m) {
  return data_on_name(m == MemoryMode::resident, m == MemoryMode::pinned);
}

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::vector<Workload> shard(std::vector<Workload> w, size_t index, size_t count) {
  if (count == 0 || index >= count)
    throw std::invalid_argument("shard " + std::to_string(index) + "/" + std::to_string(count) +
                                " must satisfy 0 <= I < N");
  std::sort(w.begin(), w.end(), [](const Workload& a, const Workload& b) { return a.spec.name < b.spec.name; });
  std::vector<Workload> out;
  for (size_t i = 0; i < w.size(); ++i)
    if (i % count == index) out.push_back(std::move(w[i]));
  return out;
}

SweepSummary run_sweep(const std::vector<Workload>& workloads, const cl::Selection& devices, const SweepOptions& o,
                       const SweepProgress& progress) {
  DatasetAppender out(o.out, dataset_columns(o.features.names));
  const std::set<std::string>& done_keys = out.existing();
  using SClock = std::chrono::steady_clock;
  const auto sweep_start = SClock::now();
  auto secs = [](SClock::time_point a) { return std::chrono::duration<double>(SClock::now() - a).count(); };

  const auto grid = o.grid.configs();
  std::vector<double> grid_cpu, grid_gpu;
  for (const auto& c : grid) {
    grid_cpu.push_back(c.cpu);
    grid_gpu.push_back(c.gpu);
  }
  auto runnable = [&](const Config& c) { return !((c.cpu > 0 && !devices.cpu) || (c.gpu > 0 && !devices.gpu)); };
  // The configurations of a workload: the grid's, or configs_per_workload of them (sample_configurations).
  auto configs_of = [&](const std::string& name) {
    std::vector<Config> out;
    for (size_t i : sample_configurations(grid_cpu, grid_gpu, name, o.configs_per_workload))
      if (runnable(grid[i])) out.push_back(grid[i]);
    return out;
  };
  const std::string data_on = data_on_of(o.executor.memory);
  SweepSummary sum;
  std::set<std::string> seen_notes;
  // One executor per kernel: consecutive workloads of the same kernel (the sizes and work-group sizes of a program)
  // rebind it, so that contexts, sub-devices and programs are built once per kernel.
  std::unique_ptr<Executor> exec;
  std::string exec_key;
  // Each workload's configurations, computed once: their count is the progress' total.
  std::vector<std::vector<Config>> workload_configs;
  size_t total = 0, done = 0;
  for (const auto& w : workloads) {
    workload_configs.push_back(configs_of(w.spec.name));
    total += workload_configs.back().size();
  }
  for (size_t wi = 0; wi < workloads.size(); ++wi) {
    const Workload& w = workloads[wi];
    const Spec& s = w.spec;
    const std::vector<Config>& configs = workload_configs[wi];
    std::vector<std::string> todo_keys;
    std::vector<Config> todo;
    for (const auto& c : configs) {
      if (done_keys.count(
              dataset_row_key(o.platform_id, s.name, data_on, dataset_number(c.cpu), dataset_number(c.gpu)))) {
        ++sum.rows_skipped;
        ++done;
      } else {
        todo.push_back(c);
      }
    }
    if (progress) progress(done, total, s.name);
    if (todo.empty()) continue;

    std::vector<std::string> feats;
    if (!o.features.names.empty()) {
      const std::string key = code_feature_key(s.kernel_file, s.kernel_name);
      const CodeFeatureTable::Entry* e = o.features.find(key);
      if (!e) throw std::runtime_error("no code features for kernel '" + key + "' (workload " + s.name + ")");
      feats = e->values;
    }
    std::vector<std::string> base = {o.platform_id, s.name, w.set, s.kernel_name};
    base.insert(base.end(), feats.begin(), feats.end());
    const size_t wd = s.global.size();
    size_t local_items = 1;
    for (size_t l : s.local) local_items *= l;
    auto dim = [](const std::vector<size_t>& v, size_t d) { return d < v.size() ? std::to_string(v[d]) : "1"; };
    for (const auto& x :
         {std::to_string(wd), std::to_string(s.global_items()),
          s.local.empty() ? std::string() : std::to_string(local_items),
          s.local.empty() ? std::string() : std::to_string(s.work_groups()), dim(s.global, 0), dim(s.global, 1),
          dim(s.global, 2), dim(s.local, 0), dim(s.local, 1), dim(s.local, 2), data_on, std::to_string(s.in_bytes()),
          std::to_string(s.out_bytes()), dataset_args_text(integer_scalars(s))})
      base.push_back(x);

    // One executor per kernel, rebound to each workload (programs and sub-devices built once); the reference
    // computed once.
    auto since = SClock::now();  // the first configuration's wall time includes the setup
    const auto failed = o.failed.find(s.name);
    std::string setup_error = failed == o.failed.end() ? std::string() : failed->second;
    std::vector<ArgData> want, initial, args;
    Footprint footprint;  // for the plain run's bounds check
    if (setup_error.empty()) try {
        ExecutorOptions eo = o.executor;
        if (o.per_kernel) o.per_kernel(w, eo);
        footprint = eo.footprint;
        const std::string key = s.kernel_name + '\n' + s.build_options + '\n' + w.source + '\n' + eo.malleable_source +
                                '\n' + eo.malleable_note;
        bool rebound = false;
        if (exec && key == exec_key) {
          try {
            exec->rebind(s);
            rebound = true;
          } catch (const std::invalid_argument&) {  // other argument kinds: a new executor
          }
        }
        if (!rebound) {
          exec.reset();
          exec = std::make_unique<Executor>(s, w.source, devices, eo);
          exec_key = key;
        }
        initial = make_args(s);       // generated once per workload; writable buffers are restored before every run
        args = exec->place(initial);  // in the executor's SVM in svm mode
        if (o.validate && !s.reference.empty()) {
          const ReferenceFn* ref = find_reference(s.reference);
          if (!ref) throw SpecError(s.path + ": reference '" + s.reference + "' is not registered in this build");
          want = initial;
          (*ref)(s, want);
        }
      } catch (const std::exception& e) {
        setup_error = e.what();
      }
    sum.setup_s += secs(since);
    for (const auto& c : todo) {
      std::vector<std::string> row = base;
      LaunchResult last;
      std::vector<double> times;
      std::string error = setup_error;
      bool valid = error.empty();
      if (valid) {
        try {
          int warmup = o.warmup;  // grows while the engine is learning (settle)
          for (int r = 0; r < warmup + o.repeat; ++r) {
            // Inputs are restored before every run; write-only outputs only before the validated run (a run
            // leaves them as the kernel wrote them, which does not change the next run's work).
            auto tr = SClock::now();
            reset_writable(args, initial, /*outputs=*/r == warmup);
            sum.reset_s += secs(tr);
            tr = SClock::now();
            last = exec->launch(args, c);
            if (!last.note.empty() && seen_notes.insert(last.note).second) {
              if (sum.notes.size() < SweepSummary::kMaxNotes)
                sum.notes.push_back(s.name + " at " + to_string(c) + ": " + last.note);
              else
                ++sum.notes_left_out;
            }
            const double launch_s = secs(tr);
            sum.timed_s += last.total_ms / 1e3;
            sum.launch_overhead_s += std::max(0.0, launch_s - last.total_ms / 1e3);
            if (r < warmup) {
              if (r == warmup - 1 && last.learning && warmup < o.warmup + o.settle) ++warmup, ++sum.settle_runs;
              continue;
            }
            times.push_back(last.total_ms);
            if (r == warmup && o.validate) {
              const auto tv = SClock::now();
              if (want.empty()) {  // no CPU reference: a plain single-device run of the original kernel
                const cl_device_id d = devices.cpu ? devices.cpu->device : devices.gpu->device;
                want = run_single(s, w.source, d, footprint).args;
              }
              const auto cmp = compare_outputs(s, args, want);
              sum.validate_s += secs(tv);
              if (!cmp.ok) {
                valid = false;
                error = "output mismatch: " + std::to_string(cmp.mismatches) + " elements, first " + cmp.first;
                break;
              }
            }
          }
        } catch (const std::exception& e) {
          valid = false;
          error = e.what();
        }
      }
      const bool have = !times.empty();
      for (const auto& x :
           {dataset_number(c.cpu), dataset_number(c.gpu), std::to_string(last.cpu_cores),
            std::to_string(c.gpu > 0 ? last.gpu_alloc : 0), std::string(last.gpu_throttled ? "1" : "0"),
            have ? dataset_number(median(times)) : std::string(),
            have ? dataset_number(*std::min_element(times.begin(), times.end())) : std::string(),
            have ? dataset_number(*std::max_element(times.begin(), times.end())) : std::string(),
            std::to_string(times.size()), std::to_string(last.cpu.work_groups), std::to_string(last.gpu.work_groups),
            std::to_string(last.cpu.chunks), std::to_string(last.gpu.chunks), dataset_number(last.h2d_ms),
            dataset_number(last.d2h_ms), dataset_number(last.merge_ms), dataset_number(secs(since) * 1e3),
            std::string(valid ? "1" : "0"), error})
        row.push_back(x);
      since = SClock::now();
      out.append(row);
      sum.write_s += secs(since);
      ++sum.rows_written;
      if (!valid) ++sum.invalid;
      ++done;
      if (progress) progress(done, total, s.name);
    }
    const auto tw = SClock::now();
    out.sync();
    sum.write_s += secs(tw);
  }
  sum.wall_s = secs(sweep_start);
  return sum;
}

std::string unthrottled_levels_problem(const Grid& grid, bool has_gpu, bool has_forms) {
  if (!has_gpu || has_forms) return {};
  std::string levels;
  for (double g : grid.gpu_levels)
    if (g > 0 && g < 1) levels += (levels.empty() ? "" : ", ") + dataset_number(g);
  if (levels.empty()) return {};
  return "no malleable GPU forms (no --bundles DIR, and this build has no analysis to make them): the grid's GPU "
         "levels " +
         levels +
         " would run the whole GPU (gpu_throttled = 0) and copies would not be sliced by footprint, so those rows "
         "would not measure their configurations";
}

}  // namespace dop
