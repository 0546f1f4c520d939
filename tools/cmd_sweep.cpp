// dop sweep: every workload of a set at every configuration of the grid, into a resumable CSV dataset.
#include <regex.h>
#include <unistd.h>
#include <cctype>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "dop/dataset.hpp"
#include "dop/kernel_forms.hpp"
#include "dop/platform.hpp"
#include "dop/sweep.hpp"
#include "sweep_isolation.hpp"
#include "workloads.hpp"

namespace dop::cli {

namespace {

struct SweepFlags {
  std::string set;
  std::vector<std::string> specs;
  std::string size = "large";
  double scale = 1.0;
  std::string name_suffix;
  std::string out;
  std::string shard;
  std::string platform;
  std::string platform_id;
  std::string features;
  std::string bundles;
  std::string memory = "auto";
  int repeat = 5;
  int warmup = 1;
  int settle = 6;
  bool no_validate = false;
  size_t sample = 0;
  std::string match;
  bool no_isolate = false;
  bool unthrottled = false;
  double timeout = 600;
  int worker_fd = -1;
  std::vector<std::string> worker_failed;
  DeviceFlags devices;
  std::vector<std::string> merge_inputs;
  std::string merge_out;
  size_t configs = 0;
  std::string upgrade_in;
};

// The workloads of --set, --spec, --size and --scale, each name followed by --name-suffix (rows of the same workloads
// at another scale, kept apart from those at the usual one: a row's key is its workload's name).
std::vector<Workload> named_workloads(const SweepFlags& f) {
  std::vector<Workload> ws = collect_workloads(f.set, f.specs, f.size, f.scale);
  if (f.name_suffix.empty()) return ws;
  for (const char c : f.name_suffix)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
      throw UsageError("--name-suffix '" + f.name_suffix + "': letters, digits, '_', '-' and '.' only");
  for (auto& w : ws) w.spec.name += f.name_suffix;
  return ws;
}

// dop sweep upgrade: the data block (data_on, in_bytes, out_bytes, args), or its args column, added to a dataset
// swept before it, from the workloads of the given set (matched by name) and the memory mode it was swept in; nothing
// re-measured.
void run_upgrade(const SweepFlags& f) {
  if (f.out.empty()) throw UsageError("dop sweep upgrade needs --out NEW.csv");
  if (f.out.size() > 3 && f.out.compare(f.out.size() - 3, 3, ".gz") == 0)
    throw UsageError("--out " + f.out + ": writes a plain CSV (gzip it afterwards)");
  const std::vector<Workload> ws = named_workloads(f);
  if (ws.empty()) throw UsageError("dop sweep upgrade needs the workloads: --set or spec files");
  DataBlockSource src;
  src.data_on = data_on_of(parse_memory_mode(f.memory));
  for (const auto& w : ws) {
    src.bytes[w.spec.name] = {w.spec.in_bytes(), w.spec.out_bytes()};
    src.args[w.spec.name] = dataset_args_text(integer_scalars(w.spec));
  }
  const size_t n = upgrade_dataset(f.upgrade_in, src, f.out);
  std::printf("upgraded %zu rows of %s into %s (data_on %s, bytes and args of %zu workloads)\n", n,
              f.upgrade_in.c_str(), f.out.c_str(), src.data_on.c_str(), ws.size());
}

// Progress on stderr: a bar with rate and ETA on a terminal, plain lines (every 5 % or 30 s) otherwise.
class Progress {
 public:
  Progress() : tty_(::isatty(STDERR_FILENO) == 1), t0_(std::chrono::steady_clock::now()) {}
  void operator()(size_t done, size_t total, const std::string& w) {
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    if (first_) {  // rows already present (resume) do not count towards the rate
      first_ = false;
      first_done_ = done;
    }
    const double rate = el > 0 ? double(done - first_done_) / el : 0;
    const double eta = rate > 0 ? double(total - done) / rate : 0;
    const double pct = total ? 100.0 * double(done) / double(total) : 100.0;
    char eta_s[32];
    std::snprintf(eta_s, sizeof eta_s, "%dm%02ds", int(eta) / 60, int(eta) % 60);
    if (tty_) {
      const int width = 30, fill = int(pct / 100 * width);
      std::fprintf(stderr, "\r[%s%s] %zu/%zu %5.1f%% %6.2f runs/s ETA %s  %-40.40s",
                   std::string(size_t(fill), '#').c_str(), std::string(size_t(width - fill), '.').c_str(), done, total,
                   pct, rate, eta_s, w.c_str());
      if (done == total) std::fprintf(stderr, "\n");
    } else if (done == total || pct >= last_pct_ + 5 || el >= last_t_ + 30) {
      last_pct_ = pct;
      last_t_ = el;
      std::fprintf(stderr, "sweep: %zu/%zu configuration runs (%.1f%%), %.2f runs/s, ETA %s, at %s\n", done, total, pct,
                   rate, eta_s, w.c_str());
    }
    std::fflush(stderr);
  }

 private:
  bool tty_;
  std::chrono::steady_clock::time_point t0_;
  size_t first_done_ = 0;
  bool first_ = true;
  double last_pct_ = -100, last_t_ = 0;
};

// The kernels' forms for the sweep (malleable form, footprint): from the bundles of a folder (made by `dop bundle`,
// maybe on another machine), else, in an analysis build, made from the source (once per program); a runtime-only
// build without bundles has none.
void set_per_kernel(const SweepFlags& f, SweepOptions& o) {
  KernelFormsOptions fo;
  if (!f.bundles.empty())
    fo.bundle_dirs = {f.bundles};  // a corrupt bundle stops the sweep before it starts, named
  else
    fo.provider = analysis_forms_provider();
  auto forms = std::make_shared<const KernelFormsResolver>(fo);
  if (!f.bundles.empty())
    std::fprintf(stderr, "sweep: %zu kernel bundles from %s\n", forms->bundles().size(), f.bundles.c_str());
  o.per_kernel = [forms](const Workload& w, ExecutorOptions& eo) {
    apply_forms(forms->resolve(kernel_source(w.spec, w.source)), eo);
  };
}

// --match: the workloads whose names the POSIX extended regular expression finds a match in, in their order. (POSIX
// <regex.h> rather than <regex>: GCC 12 warns inside libstdc++'s <regex> at -O2 with the sanitizers, and CI builds
// with -Werror.)
std::vector<Workload> matching(std::vector<Workload> ws, const std::string& pattern) {
  regex_t re;
  if (const int rc = regcomp(&re, pattern.c_str(), REG_EXTENDED | REG_NOSUB); rc != 0) {
    char why[256];
    regerror(rc, &re, why, sizeof why);
    throw UsageError("--match '" + pattern + "': not a regular expression (" + why + ")");
  }
  const size_t before = ws.size();
  ws.erase(std::remove_if(ws.begin(), ws.end(),
                          [&](const Workload& w) { return regexec(&re, w.spec.name.c_str(), 0, nullptr, 0) != 0; }),
           ws.end());
  regfree(&re);
  if (ws.empty())
    throw std::invalid_argument("--match '" + pattern + "': none of the " + std::to_string(before) +
                                " workloads' names matches");
  return ws;
}

void run_sweep_cmd(const SweepFlags& f) {
  if (f.out.empty()) throw UsageError("dop sweep needs --out DATA.csv");
  if (std::filesystem::is_directory(f.out))
    throw std::invalid_argument("--out " + f.out + ": is a directory; give the dataset's file (DATA.csv)");
  if (!f.no_isolate && f.worker_fd < 0) {  // the supervisor: no OpenCL in this process (sweep_isolation.hpp)
    std::fflush(nullptr);
    std::exit(supervise_sweep(f.timeout));
  }
  std::vector<Workload> ws = named_workloads(f);
  if (ws.empty()) throw std::invalid_argument("no workloads: give --set or spec files");
  if (!f.shard.empty()) {
    const auto slash = f.shard.find('/');
    size_t i = 0, n = 0;
    try {
      if (slash == std::string::npos) throw std::invalid_argument("");
      i = std::stoul(f.shard.substr(0, slash));
      n = std::stoul(f.shard.substr(slash + 1));
    } catch (const std::exception&) {
      throw UsageError("--shard '" + f.shard + "' must be I/N, e.g. 0/4");
    }
    ws = shard(std::move(ws), i, n);
  }
  if (!f.match.empty()) ws = matching(std::move(ws), f.match);
  if (f.sample > 0 && f.sample < ws.size()) {  // evenly spread, deterministic
    std::sort(ws.begin(), ws.end(), [](const Workload& a, const Workload& b) { return a.spec.name < b.spec.name; });
    std::vector<Workload> s;
    for (size_t k = 0; k < f.sample; ++k) s.push_back(ws[k * ws.size() / f.sample]);
    ws = std::move(s);
  }
  SweepOptions o;
  o.out = f.out;
  o.repeat = f.repeat;
  o.warmup = f.warmup;
  o.settle = f.settle;
  o.validate = !f.no_validate;
  o.configs_per_workload = f.configs;
  o.executor.memory = parse_memory_mode(f.memory);
  for (const auto& v : f.worker_failed) add_failed_workload(v, o.failed);
  const auto sel = cl::select_devices(cl::discover(), f.devices.cpu, f.devices.gpu);
  o.platform_id = f.platform_id;
  if (!f.platform.empty()) {
    std::ifstream p(f.platform);
    if (!p) throw std::runtime_error(f.platform + ": cannot be read");
    const auto j = nlohmann::json::parse(p, nullptr, false);
    if (j.is_discarded() || !j.contains("platform_id"))
      throw std::runtime_error(f.platform + ": not a platform record (no platform_id)");
    if (o.platform_id.empty()) o.platform_id = j["platform_id"].get<std::string>();
    if (j.contains("grid")) {
      o.grid.cpu_levels = j["grid"]["cpu_levels"].get<std::vector<double>>();
      o.grid.gpu_levels = j["grid"]["gpu_levels"].get<std::vector<double>>();
    }
  }
  if (o.platform_id.empty()) o.platform_id = devices_platform_id(sel);
  if (!f.features.empty()) o.features = read_code_feature_table(f.features);
  if (!f.unthrottled) {
    const std::string why =
        unthrottled_levels_problem(o.grid, bool(sel.gpu), !f.bundles.empty() || analysis_forms_provider() != nullptr);
    if (!why.empty())
      throw UsageError("dop sweep: " + why +
                       ". Give --bundles DIR (benchmarks/device/make_bundles.sh makes them on a machine with the "
                       "analysis), or --unthrottled to sweep so anyway");
  }
  set_per_kernel(f, o);
  Progress progress;
  WorkerChannel channel(f.worker_fd);
  const size_t grid = o.grid.configs().size();
  std::fprintf(stderr, "sweep: %zu workloads x %zu configurations into %s (platform %s, data on the %s)\n", ws.size(),
               f.configs > 0 ? std::min(f.configs, grid) : grid, o.out.c_str(), o.platform_id.c_str(),
               o.executor.memory == MemoryMode::resident ? "GPU"
               : o.executor.memory == MemoryMode::pinned ? "host, page-locked"
                                                         : "host");
  const auto sum = run_sweep(ws, sel, o, [&](size_t d, size_t t, const std::string& w) {
    channel.progress(w);
    progress(d, t, w);
  });
  std::printf("sweep: %zu rows written, %zu already present, %zu invalid\n", sum.rows_written, sum.rows_skipped,
              sum.invalid);
  if (sum.rows_written > 0)
    std::printf(
        "time: %.1f s wall, %.1f ms per row: setup %.1f s, timed runs %.1f s, launch overhead %.1f s, "
        "restoring outputs %.1f s, validation %.1f s, writing %.1f s\n",
        sum.wall_s, 1e3 * sum.wall_s / double(sum.rows_written), sum.setup_s, sum.timed_s, sum.launch_overhead_s,
        sum.reset_s, sum.validate_s, sum.write_s);
  if (sum.settle_runs > 0)
    std::printf("warm-up: %zu more untimed runs while the engine's warm starts were learning (--settle)\n",
                sum.settle_runs);
  for (const auto& n : sum.notes) std::printf("note: %s\n", n.c_str());
  if (sum.notes_left_out > 0) std::printf("note: and %zu other notes\n", sum.notes_left_out);
}

}  // namespace

// The workloads a sweep runs, or an upgrade matches a dataset's rows to: --set, --spec, --size, --scale,
// --name-suffix.
void add_workload_flags(CLI::App* cmd, SweepFlags& f) {
  cmd->add_option("--set", f.set, "Workload set: paper | extended | span | real | all");
  cmd->add_option("--spec", f.specs, "Workload spec files (in addition to --set)");
  cmd->add_option("--size", f.size, "Size of the real-world kernels: small | sweep | paper | large (default large)");
  cmd->add_option("--scale", f.scale, "Size scale of the synthetic workloads (default 1)");
  cmd->add_option("--name-suffix", f.name_suffix,
                  "Appended to every workload's name: rows of the same workloads at another --scale, kept apart from "
                  "the usual ones (letters, digits, '_', '-', '.')");
}

void add_sweep(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "sweep", "Run workloads at every configuration of the grid (or --configs N of it) into a CSV dataset");
  auto f = std::make_shared<SweepFlags>();
  add_workload_flags(cmd, *f);
  cmd->add_option("--out", f->out, "Dataset CSV; an existing one is resumed");
  cmd->add_option("--shard", f->shard, "Run shard I of N (I/N)");
  cmd->add_option("--sample", f->sample, "Only N workloads, spread evenly over the set");
  cmd->add_option("--match", f->match,
                  "Only the workloads whose names match this regular expression (POSIX extended, searched: "
                  "'^(tri|mvr)_c0_s[45]_'); before --sample");
  cmd->add_option("--platform", f->platform, "Platform record from dop characterize (id and grid)");
  cmd->add_option("--platform-id", f->platform_id, "Platform id written into the rows");
  cmd->add_option("--features", f->features, "Code features to join (dop features --csv of every kernel)");
  cmd->add_option(
      "--memory", f->memory,
      "auto | zero-copy | copy | resident | pinned | svm (the rows' data_on: gpu for resident, pinned for pinned, "
      "else host)");
  cmd->add_option("--configs", f->configs,
                  "Measure N configurations per workload: CPU only, GPU only, all, and N - 3 spread over the rest, "
                  "the same for a workload on every run (training sets; default 0: the whole grid; N >= 3)")
      ->check(sampled_configs_check());
  cmd->add_option("--bundles", f->bundles,
                  "Folder of kernel bundles (dop bundle) with the malleable GPU forms; an analysis build makes them");
  cmd->add_option("--repeat", f->repeat, "Timed runs per configuration (default 5)")->check(CLI::Range(1, 1000));
  cmd->add_option("--warmup", f->warmup, "Untimed runs per configuration (default 1)")->check(CLI::Range(0, 1000));
  cmd->add_option("--settle", f->settle,
                  "At most N more untimed runs while the engine's warm starts are still measuring ways to run "
                  "(default 6; 0: none)")
      ->check(CLI::Range(0, 1000));
  cmd->add_flag("--no-validate", f->no_validate, "Do not check outputs against the references");
  cmd->add_flag("--unthrottled", f->unthrottled,
                "Sweep even where no malleable GPU forms are available (a runtime-only build without --bundles): GPU "
                "levels below 8/8 then run the whole GPU, and the rows say so (gpu_throttled = 0)");
  cmd->add_option("--timeout", f->timeout,
                  "A workload whose configuration (or setup) takes longer is stopped and recorded invalid (seconds; "
                  "default 600, 0: none)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--no-isolate", f->no_isolate,
                "Run in this process: no worker, so a crashing or hanging kernel stops the sweep (and no --timeout)");
  cmd->add_option("--worker-fd", f->worker_fd)->group("");  // the supervisor's worker (sweep_isolation.hpp)
  cmd->add_option("--worker-failed", f->worker_failed)->group("");
  add_device_flags(cmd, f->devices);
  auto* merge = cmd->add_subcommand("merge", "Merge sweep datasets (shards) into one, each row once");
  merge->add_option("out", f->merge_out, "Merged dataset to write")->required();
  merge->add_option("inputs", f->merge_inputs, "Datasets to merge")->required();
  merge->callback([f] {
    const size_t n = merge_datasets(f->merge_inputs, f->merge_out);
    std::printf("merged %zu rows from %zu datasets into %s\n", n, f->merge_inputs.size(), f->merge_out.c_str());
  });
  auto* upgrade = cmd->add_subcommand(
      "upgrade",
      "Add the data columns (data_on, in_bytes, out_bytes, args) to a dataset swept before them, or args alone to "
      "one upgraded before args existed, re-measuring nothing");
  upgrade->add_option("in", f->upgrade_in, "Dataset to upgrade (CSV or CSV.gz)")->required();
  add_workload_flags(upgrade, *f);  // those it was swept from
  upgrade->add_option("--memory", f->memory,
                      "The memory mode it was swept in (resident: data_on gpu; pinned: data_on pinned)");
  upgrade->add_option("--out", f->out, "Upgraded dataset to write (plain CSV)");
  upgrade->callback([f] { run_upgrade(*f); });
  cmd->callback([f, merge, upgrade] {
    if (merge->parsed() || upgrade->parsed()) return;
    run_sweep_cmd(*f);
  });
}

}  // namespace dop::cli
