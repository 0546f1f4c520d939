// dop run: runs a workload spec at a configuration with co-execution, optionally validating and repeating.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.hpp"
#include "dop/bundle.hpp"
#include "dop/files.hpp"
#include "dop/kernel_forms.hpp"
#include "dop/platform.hpp"
#include "dop/predictor.hpp"
#include "dop/run_single.hpp"
#include "dop/runtime.hpp"
#include "stats.hpp"
#include "watchdog.hpp"

namespace dop::cli {

namespace {

struct RunFlags {
  std::string spec;
  std::string config = "1,1";
  std::string memory = "auto";
  std::string malleable;
  std::string bundle;
  bool auto_config = false;
  std::string model;
  std::string platform_id;
  bool validate = false;
  bool malleable_at_full = false;
  bool cold = false;
  bool json = false;
  int repeat = 1;
  double timeout = 0;
  DeviceFlags devices;
};

nlohmann::json device_json(const DeviceStats& d) {
  return {{"device", d.device}, {"units", d.units},     {"work_groups", d.work_groups}, {"work_items", d.work_items},
          {"chunks", d.chunks}, {"busy_ms", d.busy_ms}, {"finish_ms", d.finish_ms}};
}

// The configuration a launch ran at: the CPU's cores over the device's, the GPU's share in eighths.
Config config_run(const LaunchResult& r, int cpu_total) {
  Config c = r.config;
  if (c.cpu > 0 && cpu_total > 0) c.cpu = double(r.cpu_cores) / cpu_total;
  if (c.gpu > 0) c.gpu = double(r.gpu_alloc) / r.gpu_mod;
  return c;
}

void run(const RunFlags& f) {
  const Watchdog watchdog(f.timeout, "dop run " + f.spec);
  const Spec spec = load_spec(f.spec);
  const std::string source = read_kernel_source(spec);
  const auto sel = cl::select_devices(cl::discover(), f.devices.cpu, f.devices.gpu);
  ExecutorOptions opt;
  opt.memory = parse_memory_mode(f.memory);
  opt.malleable_at_full = f.malleable_at_full;
  opt.warm_start = !f.cold;
  if (f.auto_config) {
    if (f.model.empty()) throw UsageError("--auto needs --model MODEL.json (dop train)");
    AutoModel m;
    m.predictor = load_model_for_platform(f.model, f.platform_id, sel);  // refused or warned: another platform's
    opt.model = std::move(m);
  }
  // The kernel's forms: from the bundle (made by `dop bundle`, maybe on another machine), or in an analysis build
  // from the source. Its features are analysed only when something needs them: the code features for --auto, the
  // memory footprint when copies may be sliced (copy mode; auto resolves to it for a GPU that does not share host
  // memory).
  const KernelSource kernel = kernel_source(spec, source);
  KernelForms forms;
  if (!f.bundle.empty()) {
    forms = forms_from_bundle(load_bundle(f.bundle), f.bundle, kernel);
  } else {
    KernelFormsOptions fo;
    fo.provider = analysis_forms_provider();
    fo.wanted.malleable = f.malleable.empty();
    fo.wanted.features = true;  // the footprint: launch-time bounds checks (dop/bounds.hpp), sliced copies
    forms = KernelFormsResolver(fo).resolve(kernel);
  }
  apply_forms(forms, opt);
  if (!f.malleable.empty()) {
    auto m = read_whole_file(f.malleable);
    if (!m || std::filesystem::is_directory(f.malleable))
      throw std::invalid_argument("--malleable " + f.malleable + ": cannot be read");
    opt.malleable_source = std::move(*m);
    opt.malleable_origin = f.malleable;
    opt.malleable_note.clear();
  }
  // --validate compares with the reference the spec names: one this build does not have is an error, not a skip.
  if (f.validate && !spec.reference.empty() && !find_reference(spec.reference))
    throw SpecError(spec.path + ": reference: '" + spec.reference +
                    "' is not registered in this build (kernels:<name> and synthetic:<name> are; leave the field "
                    "out to validate against a plain run only)");
  Executor ex(spec, source, sel, opt);

  const std::vector<ArgData> initial = make_args(spec);
  std::vector<ArgData> args = ex.place(initial);  // where the executor runs them in place (its SVM, in svm mode)
  // --auto: the model decides every launch (launch_auto), with the launch shape the executor runs (its own local
  // size where the spec leaves it open).
  const Config manual = f.auto_config ? Config{} : parse_config(f.config);
  auto launch = [&]() {
    if (!f.auto_config) return ex.launch(args, manual);
    try {
      return ex.launch_auto(args);
    } catch (const pred::ModelError& e) {
      throw pred::ModelError(f.model + ": " + e.what());
    }
  };
  std::vector<LaunchResult> results;
  LaunchResult builds;                            // programs built by every launch, the warm-up's included
  nlohmann::json runs = nlohmann::json::array();  // every launch, in order: the way it ran
  for (int i = 0; i < f.repeat + (f.repeat > 1 ? 1 : 0); ++i) {  // one warm-up when repeating
    reset_writable(args, initial);
    auto r = launch();
    builds.programs_built += r.programs_built;
    builds.programs_from_cache += r.programs_from_cache;
    builds.build_ms += r.build_ms;
    const bool timed = f.repeat == 1 || i > 0;
    // Where each run's time went: each device's kernels (busy) and when it stopped (finish, from the launch's
    // start), and the copies: what separates a slow kernel from a slow launch around it.
    runs.push_back({{"time_ms", r.total_ms},
                    {"timed", timed},
                    {"cpu_work_groups", r.cpu.work_groups},
                    {"gpu_work_groups", r.gpu.work_groups},
                    {"cpu_busy_ms", r.cpu.busy_ms},
                    {"cpu_finish_ms", r.cpu.finish_ms},
                    {"gpu_busy_ms", r.gpu.busy_ms},
                    {"gpu_finish_ms", r.gpu.finish_ms},
                    {"h2d_ms", r.h2d_ms},
                    {"d2h_ms", r.d2h_ms},
                    {"warm", r.warm},
                    {"left_out", r.left_out}});
    if (timed) results.push_back(r);
  }
  const nlohmann::json programs{{"built", builds.programs_built},
                                {"from_cache", builds.programs_from_cache},
                                {"build_ms", builds.build_ms},
                                {"cache_dir", program_cache_dir()}};
  const LaunchResult& last = results.back();
  // What ran: the CPU in whole cores, the GPU in eighths; a configuration between them is rounded, and said so.
  const int cores = ex.cpu_cores_total();
  const Config cfg = config_run(last, cores);
  // Off the grid: not what the runtime's rounding makes of it (a GPU that ran unthrottled for want of a malleable
  // form is not rounding; the note says so).
  const Config grid = grid_config(last.config, cores);
  if (std::abs(grid.cpu - last.config.cpu) > 1e-9 || std::abs(grid.gpu - last.config.gpu) > 1e-9)
    std::fprintf(
        stderr,
        "dop: warning: configuration %s is not on this machine's grid: ran %s (%d of %d CPU cores, GPU %d/%d)\n",
        to_string(last.config).c_str(), to_string(cfg).c_str(), last.cpu_cores, cores, last.gpu_alloc, last.gpu_mod);
  nlohmann::json auto_info;
  if (f.auto_config) {
    const auto& model = opt.model->predictor->model();
    auto_info = {{"model", f.model},       {"type", model.type},           {"platform_id", model.platform.id},
                 {"output", model.output}, {"predicted", last.predicted},  {"cpu_util", cfg.cpu},
                 {"gpu_util", cfg.gpu},    {"local_size", ex.local_size()}};
  }
  std::vector<double> totals;
  for (const auto& r : results) totals.push_back(r.total_ms);

  nlohmann::json validation;
  bool valid = true;
  if (f.validate) {
    // Against a plain single-device run of the original kernel (the CPU device, else the GPU).
    const cl_device_id plain_dev = sel.cpu ? sel.cpu->device : sel.gpu->device;
    const auto plain = run_single(spec, source, plain_dev, opt.footprint);
    const auto cmp = compare_outputs(spec, args, plain.args);
    valid = cmp.ok;
    validation = {{"against", sel.cpu ? sel.cpu->id : sel.gpu->id},
                  {"ok", cmp.ok},
                  {"mismatches", cmp.mismatches},
                  {"max_abs_err", cmp.max_abs_err},
                  {"first_mismatch", cmp.first},
                  {"tolerance", {{"rel", spec.tolerance.rel}, {"abs", spec.tolerance.abs}}}};
    if (!spec.reference.empty()) {
      const auto ref = compare_outputs(spec, args, run_reference(spec));
      validation["reference"] = {
          {"name", spec.reference}, {"ok", ref.ok}, {"mismatches", ref.mismatches}, {"first_mismatch", ref.first}};
      valid = valid && ref.ok;
    }
  }

  if (f.json) {
    nlohmann::json j{{"spec", f.spec},
                     {"workload", spec.name},
                     {"config", {{"cpu_util", cfg.cpu}, {"gpu_util", cfg.gpu}}},
                     {"config_asked", {{"cpu_util", last.config.cpu}, {"gpu_util", last.config.gpu}}},
                     {"cpu_cores", last.cpu_cores},
                     {"gpu_mod", last.gpu_mod},
                     {"gpu_alloc", last.gpu_alloc},
                     {"gpu_throttled", last.gpu_throttled},
                     {"memory", memory_mode_name(last.memory)},
                     {"note", last.note},
                     {"repeat", f.repeat},
                     {"time_ms",
                      {{"median", median(totals)},
                       {"min", *std::min_element(totals.begin(), totals.end())},
                       {"max", *std::max_element(totals.begin(), totals.end())},
                       {"all", totals}}},
                     {"last",
                      {{"cpu", device_json(last.cpu)},
                       {"gpu", device_json(last.gpu)},
                       {"h2d_ms", last.h2d_ms},
                       {"d2h_ms", last.d2h_ms},
                       {"merge_ms", last.merge_ms},
                       {"h2d_bytes", last.h2d_bytes},
                       {"h2d_in_place_bytes", last.h2d_in_place_bytes},
                       {"d2h_bytes", last.d2h_bytes},
                       {"warm", last.warm},
                       {"start_cpu_share", last.start_cpu_share},
                       {"left_out", last.left_out},
                       {"balanced_cpu_share", last.balanced_cpu_share}}}};
    j["programs"] = programs;
    j["runs"] = runs;
    if (f.validate) j["validation"] = validation;
    if (f.auto_config) j["auto"] = auto_info;
    std::cout << j.dump(2) << "\n";
  } else {
    if (f.auto_config)
      std::printf("auto: %s model %s chose cpu %.3g, gpu %.3g (%s %.4g)\n",
                  auto_info["type"].get<std::string>().c_str(), f.model.c_str(), cfg.cpu, cfg.gpu,
                  auto_info["output"].get<std::string>() == "score" ? "ranking score" : "predicted performance",
                  auto_info["predicted"].get<double>());
    std::printf("%s at cpu %.3g, gpu %.3g: %d CPU cores, GPU %d/%d%s, memory %s\n", spec.name.c_str(), cfg.cpu, cfg.gpu,
                last.cpu_cores, last.gpu_alloc, last.gpu_mod, last.gpu_throttled ? " (malleable)" : "",
                memory_mode_name(last.memory));
    if (!last.note.empty()) std::printf("  note: %s\n", last.note.c_str());
    std::printf("  time: median %.3f ms, min %.3f, max %.3f over %zu run(s)\n", median(totals),
                *std::min_element(totals.begin(), totals.end()), *std::max_element(totals.begin(), totals.end()),
                totals.size());
    for (const auto* d : {&last.cpu, &last.gpu})
      if (!d->device.empty())
        std::printf("  %-12s %8zu work-groups in %4zu chunks, busy %.3f ms, done at %.3f ms\n", d->device.c_str(),
                    d->work_groups, d->chunks, d->busy_ms, d->finish_ms);
    if (last.warm)
      std::printf("  warm start from CPU share %.3f (learned from the earlier runs)%s; balanced share measured %.3f\n",
                  last.start_cpu_share, last.left_out ? ", one device left out by choice" : "",
                  last.balanced_cpu_share);
    std::printf("  programs: %d built, %d from the cache (%.1f ms; %s)\n", builds.programs_built,
                builds.programs_from_cache, builds.build_ms,
                program_cache_dir().empty() ? "cache off" : ("cache " + program_cache_dir()).c_str());
    if (last.h2d_ms + last.d2h_ms + last.merge_ms > 0)
      std::printf(
          "  copies: h2d %.3f ms (%.1f MB, %.1f MB of it from page-locked memory in place), d2h %.3f ms "
          "(%.1f MB), merge %.3f ms\n",
          last.h2d_ms, double(last.h2d_bytes) / 1e6, double(last.h2d_in_place_bytes) / 1e6, last.d2h_ms,
          double(last.d2h_bytes) / 1e6, last.merge_ms);
    if (f.validate) {
      std::printf("  validation against a plain run on %s: %s", validation["against"].get<std::string>().c_str(),
                  validation["ok"].get<bool>() ? "ok" : "MISMATCH");
      if (!validation["ok"].get<bool>())
        std::printf(" (%zu mismatches, first %s)", validation["mismatches"].get<size_t>(),
                    validation["first_mismatch"].get<std::string>().c_str());
      std::printf("\n");
      if (validation.contains("reference"))
        std::printf("  validation against reference %s: %s\n",
                    validation["reference"]["name"].get<std::string>().c_str(),
                    validation["reference"]["ok"].get<bool>() ? "ok" : "MISMATCH");
    }
  }
  if (!valid) throw std::runtime_error(spec.path + ": outputs do not match (see validation above)");
}

}  // namespace

void add_run(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Run a workload spec (docs/spec.md) across CPU and GPU at a configuration");
  auto f = std::make_shared<RunFlags>();
  cmd->add_option("spec", f->spec, "Workload spec (JSON)")->required();
  auto* config =
      cmd->add_option("--config", f->config, "CPU,GPU utilisations in [0,1]; GPU in steps of 1/8 (default 1,1)");
  auto* autoc = cmd->add_flag("--auto", f->auto_config,
                              "Let a model choose the configuration (--model; code features from --bundle or the "
                              "source)");
  autoc->excludes(config);
  cmd->add_option("--model", f->model,
                  "Model file (dop train) for --auto, or a folder of models (models/: this platform's)")
      ->needs(autoc);
  cmd->add_option("--platform-id", f->platform_id, "Refuse a model trained for another platform");
  cmd->add_option("--memory", f->memory, "auto | zero-copy | copy | resident | pinned | svm (default auto)");
  cmd->add_option("--malleable", f->malleable, "Malleable GPU form of the kernel (.cl with dop_gpu_mod/alloc args)");
  auto* bundle = cmd->add_option("--bundle", f->bundle,
                                 "Kernel bundle (dop bundle, docs/bundle.md): use its malleable form (or its note)");
  bundle->excludes(cmd->get_option("--malleable"));
  cmd->add_flag("--validate", f->validate, "Compare outputs with a plain single-device run (and the reference)");
  cmd->add_flag("--malleable-at-full", f->malleable_at_full,
                "Run the malleable GPU form at 8/8 too (to measure its cost; default: the original kernel)");
  cmd->add_option("--repeat", f->repeat, "Timed runs after one warm-up (default 1, no warm-up)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--timeout", f->timeout,
                  "Stop with exit status 124 when the run (all of --repeat, --validate) takes longer (seconds; "
                  "default none)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", f->json, "Print JSON");
  cmd->add_flag("--cold", f->cold,
                "Every run starts cold (no warm start from the share learned in the earlier runs of --repeat)");
  add_device_flags(cmd, f->devices);
  cmd->callback([f] { run(*f); });
}

}  // namespace dop::cli
