// dop bench split: dynamic distribution at a configuration (default all cores, whole GPU) against the best of 19
// static splits (5:95 ... 95:5), per workload, medians of interleaved repeated runs (Dopia Fig. 9). Dynamic runs
// twice: with warm starts (the executor's default; the warm-up launch teaches the first) and cold, every launch.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "dop/kernel_forms.hpp"
#include "dop/runtime.hpp"
#include "stats.hpp"
#include "watchdog.hpp"

namespace dop::cli {

namespace {

struct SplitFlags {
  std::vector<std::string> specs;
  std::string config = "1,1";
  std::string memory = "auto";
  std::string out;
  std::string bundles;
  int repeat = 5;
  double timeout = 0;
  DeviceFlags devices;
};

void write_report(const nlohmann::json& report, const std::string& path) {
  std::ofstream o(path);
  if (!o) throw std::runtime_error("cannot write " + path);
  o << report.dump(1) << "\n";
}

void run_split(const SplitFlags& f) {
  const Watchdog watchdog(f.timeout, "dop bench split");
  const auto sel = cl::select_devices(cl::discover(), f.devices.cpu, f.devices.gpu);
  if (!sel.cpu || !sel.gpu) throw std::invalid_argument("dop bench split needs both a CPU and a GPU device");
  const Config cfg = parse_config(f.config);
  ExecutorOptions opt;
  opt.memory = parse_memory_mode(f.memory);
  nlohmann::json report{{"config", to_string(cfg)},  {"repeat", f.repeat},
                        {"cpu", sel.cpu->id},        {"gpu", sel.gpu->id},
                        {"gpu_name", sel.gpu->name}, {"workloads", nlohmann::json::array()}};
  std::vector<double> ratios, cold_ratios;
  // The kernels' forms from bundles (not from the source: what is measured stays what the bundles give): with a
  // footprint copies are slices, and the dynamic run is then also measured with whole copies.
  KernelFormsOptions fo;
  if (!f.bundles.empty()) fo.bundle_dirs = {f.bundles};
  const KernelFormsResolver forms(fo);
  std::printf("%-34s %10s %10s %6s %10s %10s %8s %8s %10s %9s %10s %8s\n", "workload", "dynamic", "best-stat", "split",
              "cpu-only", "gpu-only", "dyn/best", "dyn-cpu%", "dyn-cold", "cold/best", "dyn-whole", "MB-h2d");
  for (const auto& path : f.specs) {
    const Spec spec = load_spec(path);
    const std::string source = read_kernel_source(spec);
    ExecutorOptions so = opt;
    apply_forms(forms.resolve(kernel_source(spec, source)), so);
    Executor ex(spec, source, sel, so);
    std::unique_ptr<Executor> whole;  // the same without footprint
    if (!so.footprint.empty()) {
      ExecutorOptions wo = so;
      wo.footprint = {};
      whole = std::make_unique<Executor>(spec, source, sel, wo);
    }
    ExecutorOptions co = so;  // every launch cold: what a kernel launched once gets
    co.warm_start = false;
    Executor cold(spec, source, sel, co);
    std::vector<double> shares;
    for (int k = 0; k <= 20; ++k) shares.push_back(k / 20.0);  // 0 = GPU only, 1 = CPU only, 19 splits between
    std::vector<std::vector<double>> stat(shares.size());
    std::vector<double> dyn, dyn_cpu_share, dyn_whole, dyn_h2d, dyn_cold, dyn_warm;
    const auto initial = make_args(spec);  // generated once; writable buffers are restored before every run
    // Each executor runs on arguments in its own memory (its SVM in svm mode: an allocation belongs to one context).
    auto reference = ex.place(initial);
    ex.launch(reference, cfg);  // warm-up and the output every other variant must reproduce
    auto args = ex.place(initial), cold_args = cold.place(initial);
    std::vector<ArgData> whole_args = whole ? whole->place(initial) : std::vector<ArgData>{};
    for (int r = 0; r < f.repeat; ++r) {  // interleaved, so that drift hits every variant alike
      reset_writable(args, initial);
      const auto d = ex.launch(args, cfg);
      dyn.push_back(d.total_ms);
      dyn_warm.push_back(d.warm ? 1 : 0);
      dyn_h2d.push_back(double(d.h2d_bytes) / 1e6);
      if (!compare_outputs(spec, args, reference).ok)
        throw std::runtime_error(path + ": dynamic run gave wrong output");
      reset_writable(cold_args, initial);
      dyn_cold.push_back(cold.launch(cold_args, cfg).total_ms);
      if (r == 0 && !compare_outputs(spec, cold_args, reference).ok)
        throw std::runtime_error(path + ": cold dynamic run gave wrong output");
      if (whole) {
        reset_writable(whole_args, initial);
        dyn_whole.push_back(whole->launch(whole_args, cfg).total_ms);
        if (r == 0 && !compare_outputs(spec, whole_args, reference).ok)
          throw std::runtime_error(path + ": dynamic run with whole copies gave wrong output");
      }
      dyn_cpu_share.push_back(double(d.cpu.work_items) / double(d.cpu.work_items + d.gpu.work_items));
      for (size_t k = 0; k < shares.size(); ++k) {
        reset_writable(args, initial);
        stat[k].push_back(ex.launch_static(args, Config{1, 1}, shares[k]).total_ms);
        if (r == 0 && !compare_outputs(spec, args, reference).ok)
          throw std::runtime_error(path + ": static split " + std::to_string(shares[k]) + " gave wrong output");
      }
    }
    size_t best = 1;
    for (size_t k = 1; k + 1 < shares.size(); ++k)
      if (median(stat[k]) < median(stat[best])) best = k;
    const double dm = median(dyn), bm = median(stat[best]), cm = median(dyn_cold);
    ratios.push_back(dm / bm);
    cold_ratios.push_back(cm / bm);
    char whole_ms[32] = "-";
    if (whole) std::snprintf(whole_ms, sizeof whole_ms, "%.3f", median(dyn_whole));
    std::printf("%-34s %10.3f %10.3f %3.0f:%-2.0f %10.3f %10.3f %8.3f %7.1f%% %10.3f %9.3f %10s %8.1f\n",
                spec.name.c_str(), dm, bm, shares[best] * 100, 100 - shares[best] * 100, median(stat.back()),
                median(stat.front()), dm / bm, 100 * median(dyn_cpu_share), cm, cm / bm, whole_ms, median(dyn_h2d));
    std::fflush(stdout);
    nlohmann::json w{{"workload", spec.name},
                     {"spec", path},
                     {"dynamic_ms", dyn},
                     {"dynamic_median_ms", dm},
                     {"dynamic_cpu_share_median", median(dyn_cpu_share)},
                     {"best_static_cpu_share", shares[best]},
                     {"best_static_median_ms", bm},
                     {"ratio", dm / bm},
                     {"static", nlohmann::json::array()},
                     {"footprint", !so.footprint.empty()},
                     {"dynamic_h2d_mb_median", median(dyn_h2d)},
                     {"dynamic_warm", dyn_warm},
                     {"dynamic_cold_ms", dyn_cold},
                     {"dynamic_cold_median_ms", cm},
                     {"cold_ratio", cm / bm}};
    if (whole) w["dynamic_whole_copies_ms"] = dyn_whole, w["dynamic_whole_copies_median_ms"] = median(dyn_whole);
    for (size_t k = 0; k < shares.size(); ++k)
      w["static"].push_back({{"cpu_share", shares[k]}, {"ms", stat[k]}, {"median_ms", median(stat[k])}});
    report["workloads"].push_back(w);
    if (!f.out.empty()) write_report(report, f.out);  // after every workload: a cut-off run keeps what it measured
  }
  const double med = median(ratios), cold_med = median(cold_ratios);
  std::printf("median dynamic / best static over %zu workloads: %.3f (warm starts), %.3f (cold)\n", ratios.size(), med,
              cold_med);
  report["median_ratio"] = med;
  report["median_cold_ratio"] = cold_med;
  if (!f.out.empty()) write_report(report, f.out);
}

}  // namespace

void add_bench(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Benchmarks that print tables");
  bench->require_subcommand(1);
  auto* cmd = bench->add_subcommand(
      "split", "Dynamic distribution vs the best of 19 static CPU:GPU splits (5:95 ... 95:5), per workload");
  auto f = std::make_shared<SplitFlags>();
  cmd->add_option("specs", f->specs, "Workload specs")->required();
  cmd->add_option("--config", f->config, "Configuration of the dynamic runs (default 1,1)");
  cmd->add_option("--memory", f->memory, "auto | zero-copy | copy | resident | pinned | svm");
  cmd->add_option("--repeat", f->repeat, "Interleaved repetitions per variant (default 5)")->check(CLI::Range(1, 1000));
  cmd->add_option("--out", f->out, "Also write every measurement as JSON to this file");
  cmd->add_option("--timeout", f->timeout, "Stop with exit status 124 after this many seconds (default none)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--bundles", f->bundles,
                  "Kernel bundles (dop bundle): footprints make copies slices; dynamic is also run with whole copies");
  add_device_flags(cmd, f->devices);
  cmd->callback([f] { run_split(*f); });
}

}  // namespace dop::cli
