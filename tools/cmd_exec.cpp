// dop exec: runs an unmodified OpenCL application with its kernels under dop, by preloading libdop_intercept.so
// (docs/intercept.md) with the configuration in the environment.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.hpp"
#include "dop/runtime.hpp"

#ifndef DOP_INTERCEPT_BUILD_PATH
#define DOP_INTERCEPT_BUILD_PATH ""
#endif
#ifndef DOP_INTERCEPT_FROM_BINDIR  // the installed lib folder relative to the installed bin folder
#define DOP_INTERCEPT_FROM_BINDIR "../lib"
#endif
#ifndef DOP_INTERCEPT_PRELOAD_FIRST
#define DOP_INTERCEPT_PRELOAD_FIRST ""
#endif

namespace dop::cli {

namespace {

struct ExecFlags {
  std::string config;
  std::string memory;
  std::string lib;
  std::string bundles, model;
  std::string record;
  bool log = false;
  DeviceFlags devices;
  std::vector<std::string> command;
};

bool is_file(const std::string& p) { return !p.empty() && access(p.c_str(), R_OK) == 0; }

std::string absolute(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

// --lib, then DOP_INTERCEPT_LIB, then the lib folder next to this dop binary (the install prefix's, then ../lib of
// the build tree), then the build tree this dop was built in.
std::string find_library(const std::string& flag) {
  if (!flag.empty()) {
    if (!is_file(flag)) throw std::invalid_argument("--lib " + flag + ": no such file");
    return absolute(flag);
  }
  if (const char* env = std::getenv("DOP_INTERCEPT_LIB"); env && *env) {
    if (!is_file(env)) throw std::invalid_argument(std::string("DOP_INTERCEPT_LIB=") + env + ": no such file");
    return absolute(env);
  }
  std::vector<std::string> tried;
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    std::string dir(exe, size_t(n));
    dir = dir.substr(0, dir.rfind('/'));
    for (const std::string lib : {DOP_INTERCEPT_FROM_BINDIR, "../lib"}) {
      const std::string p = dir + "/" + lib + "/libdop_intercept.so";
      if (std::find(tried.begin(), tried.end(), p) == tried.end()) tried.push_back(p);
    }
  }
  tried.push_back(DOP_INTERCEPT_BUILD_PATH);
  for (const auto& p : tried)
    if (is_file(p)) return absolute(p);
  std::string msg = "libdop_intercept.so not found (tried";
  for (const auto& p : tried) msg += " " + p;
  throw std::invalid_argument(msg + "); build the dop_intercept target or give --lib / DOP_INTERCEPT_LIB");
}

[[noreturn]] void run_exec(const ExecFlags& f) {
  if (f.config == "auto") {  // fail here, not in the application
    if (f.model.empty() && !std::getenv("DOP_MODEL")) throw UsageError("--config auto needs --model M.json");
  } else if (!f.config.empty()) {
    parse_config(f.config);
  }
  if (!f.bundles.empty() && !std::filesystem::is_directory(f.bundles))
    throw std::invalid_argument("--bundles '" + f.bundles + "' is not a folder");
  if (!f.record.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(f.record, ec);
    if (!std::filesystem::is_directory(f.record))
      throw std::invalid_argument("--record '" + f.record + "': cannot create the folder");
  }
  // Only that the model can be read: the interposer reads it on a thread of its own while the application starts,
  // and names a corrupt one on stderr then (reading it here too would add its reading time to every run).
  if (!f.model.empty() && !std::filesystem::is_directory(f.model) && !is_file(f.model))
    throw std::invalid_argument("--model '" + f.model + "': no such file or folder, or it cannot be read");
  if (!f.memory.empty() && parse_memory_mode(f.memory) == MemoryMode::pinned)
    throw std::invalid_argument(
        "--memory pinned is for arguments made by an executor (dop run, dop sweep); under "
        "dop exec use copy or auto");
  const std::string lib = find_library(f.lib);
  std::string preload = lib;
  const std::string first = DOP_INTERCEPT_PRELOAD_FIRST;  // the ASan runtime under DOP_SANITIZE
  if (!first.empty()) preload = first + ":" + preload;
  if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  if (!f.config.empty()) setenv("DOP_CONFIG", f.config.c_str(), 1);
  if (!f.memory.empty()) setenv("DOP_MEMORY", f.memory.c_str(), 1);
  if (f.log) setenv("DOP_LOG", "1", 1);
  if (!f.bundles.empty()) setenv("DOP_BUNDLES", absolute(f.bundles).c_str(), 1);
  if (!f.model.empty()) setenv("DOP_MODEL", absolute(f.model).c_str(), 1);
  if (!f.record.empty()) setenv("DOP_RECORD", absolute(f.record).c_str(), 1);
#if DOP_ANALYSIS
  // This dop can make kernel bundles: the interposer runs `dop bundle` for a kernel no bundle matches (forms cache).
  if (!std::getenv("DOP_BUNDLER")) setenv("DOP_BUNDLER", absolute("/proc/self/exe").c_str(), 1);
#endif
  if (!f.devices.cpu.empty()) setenv("DOP_CPU", f.devices.cpu.c_str(), 1);
  if (!f.devices.gpu.empty()) setenv("DOP_GPU", f.devices.gpu.c_str(), 1);
  std::vector<char*> argv;
  for (const auto& a : f.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::cout.flush();
  std::fflush(nullptr);
  execvp(argv[0], argv.data());
  std::fprintf(stderr, "dop: error: cannot run '%s': %s\n", argv[0], std::strerror(errno));
  std::_Exit(127);
}

}  // namespace

void add_exec(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "exec", "Run an unmodified OpenCL application with its kernels under dop (LD_PRELOAD of libdop_intercept.so)");
  auto f = std::make_shared<ExecFlags>();
  cmd->add_option("--config", f->config,
                  "CPU,GPU utilisations in [0,1] for every kernel, or auto (the --model chooses) [env DOP_CONFIG; "
                  "default all cores, whole GPU]");
  cmd->add_option("--bundles", f->bundles,
                  "Kernel bundles (dop bundle) of the app's kernels: malleable forms, footprints, code features "
                  "[env DOP_BUNDLES]");
  cmd->add_option("--record", f->record,
                  "Record the source and build options of every program the app builds into this folder, for dop "
                  "bundle --from-record on a machine with the analysis tier [env DOP_RECORD]");
  cmd->add_option("--model", f->model,
                  "Model (dop train) for --config auto, or a folder of models (models/: this platform's) [env "
                  "DOP_MODEL]");
  cmd->add_option("--memory", f->memory, "auto | zero-copy | copy | resident | svm [env DOP_MEMORY; default auto]");
  cmd->add_flag("--log", f->log,
                "One line per kernel launch on stderr: config, work-groups per device, time, or "
                "why it fell back [env DOP_LOG=1]");
  cmd->add_option("--lib", f->lib, "The interposer [env DOP_INTERCEPT_LIB; default the lib folder next to dop]");
  add_device_flags(cmd, f->devices);
  cmd->add_option("command", f->command, "The application and its arguments (put them after --)")->required();
  cmd->callback([f] { run_exec(*f); });
}

}  // namespace dop::cli
