// Running a helper program as a child process: no shell, a time limit, its output captured. The interposer runs the
// analysis-tier `dop bundle` this way (dop/forms_cache.hpp) instead of loading Clang into the application. Runtime
// tier (POSIX).
#pragma once

#include <string>
#include <vector>

namespace dop {

struct ProcessResult {
  bool started = false;    ///< false: the program could not be started (`error` says why)
  bool timed_out = false;  ///< killed after the time limit
  int exit_code = -1;      ///< its exit status when it exited; -1 when killed by a signal or not waited for
  int signal = 0;          ///< the signal that ended it, 0 when it exited
  std::string output;      ///< stdout and stderr together (the first `max_output` bytes)
  std::string error;       ///< why it could not be started or waited for
  /// "exit 0", "exit 3", "killed by signal 9", "timed out", "cannot start: ...", "status unknown: ...": for
  /// messages.
  std::string status() const;
};

/// Runs `argv[0]` (a path, not looked up in PATH) with `argv` and the environment without LD_PRELOAD (a preloaded
/// interposer stays out of it), stdin from /dev/null, waiting at most `timeout_s` seconds (then SIGKILL). Never
/// throws for a program that fails; thread-safe.
ProcessResult run_process(const std::vector<std::string>& argv, double timeout_s, size_t max_output = 64 * 1024);

}  // namespace dop
