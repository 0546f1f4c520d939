// Running a helper program as a child process: no shell, a time limit, its output captured. The interposer runs the
// analysis-tier `dop bundle` this way (dop/forms_cache.hpp) instead of loading Clang into the application, and dop
// sweep its workers (reporting on a descriptor of their own, killed when silent too long). Runtime tier (POSIX).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace dop {

struct ProcessResult {
  bool started = false;    ///< false: the program could not be started (`error` says why)
  bool timed_out = false;  ///< killed after the time limit
  int exit_code = -1;      ///< its exit status when it exited; -1 when killed by a signal or not waited for
  int signal = 0;          ///< the signal that ended it, 0 when it exited
  std::string output;      ///< stdout and stderr together, or report_fd's (the first `max_output` bytes)
  std::string error;       ///< why it could not be started or waited for
  /// "exit 0", "exit 3", "killed by signal 9", "timed out", "cannot start: ...", "status unknown: ...": for
  /// messages.
  std::string status() const;
};

/// How run_process runs a child.
struct ProcessOptions {
  double timeout_s = 0;  ///< > 0: the child is killed (SIGKILL) when the time passes; 0 or not finite: no limit
  /// The limit counts from the last bytes the child wrote (a worker that reports progress), not from its start.
  bool idle_timeout = false;
  size_t max_output = 64 * 1024;  ///< the bytes of output kept in ProcessResult::output
  /// >= 0: the child keeps this process's stdout and stderr, and what is read (and kept) is what it writes to its
  /// descriptor `report_fd`; < 0: its stdout and stderr together.
  int report_fd = -1;
  /// Called with each line read (without its '\n'), as it arrives; the last, unterminated one when the pipe closes.
  std::function<void(const std::string&)> on_line;
  std::vector<std::string> env;  ///< "NAME=VALUE": set in the child's environment (replacing NAME's value there)
  std::string program;           ///< the file to execute, when not argv[0] (e.g. /proc/self/exe)
};

/// Runs `argv[0]` (or `options.program`; a path, not looked up in PATH) with `argv` and the environment without
/// LD_PRELOAD (a preloaded interposer stays out of it), stdin from /dev/null, as `options` say. Never throws for a
/// program that fails; thread-safe.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options);
/// The same with only a time limit from the start (then SIGKILL; 0: none) and stdout and stderr captured.
ProcessResult run_process(const std::vector<std::string>& argv, double timeout_s, size_t max_output = 64 * 1024);

/// "timed out after 2 s", "timed out after 0.001 s": how dop says that a limit of `seconds` passed (dop run
/// --timeout, the sweep's workloads, the forms cache's bundler, dop bundle's analysis).
std::string timed_out_after(double seconds);

}  // namespace dop
