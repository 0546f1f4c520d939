// dop sweep's isolation (docs/cli.md, "dop sweep"): the sweep runs in a worker process (the dop binary itself, with
// the same arguments and a hidden --worker-fd), watched by a supervisor that never initialises OpenCL. The worker
// names each workload as it starts it and reports after each configuration; when it crashes (a signal: a guard page,
// a PoCL assertion) or sends nothing for the time limit, the supervisor kills it, and a new worker resumes the
// dataset with that workload's missing rows written invalid with the reason (--worker-failed). Linux (posix_spawn of
// /proc/self/exe).
#pragma once

#include <map>
#include <string>

namespace dop::cli {

/// Supervises workers until one finishes the sweep. timeout_s > 0: a worker silent that long (one configuration of
/// a workload, its setup included) is killed and the workload recorded "timed out". Returns the exit status for dop:
/// the worker's, or 1 when a workload fails twice (a crash outside any workload's rows).
int supervise_sweep(double timeout_s);

/// The worker's side of the channel: "W <workload>" when a workload starts, "D" after each configuration.
class WorkerChannel {
 public:
  explicit WorkerChannel(int fd);  ///< fd < 0: no supervisor (nothing is written)
  void progress(const std::string& workload);

 private:
  int fd_;
  std::string current_;
  bool started_ = false;
};

/// Parses a --worker-failed value "NAME<TAB>REASON" into `failed`; throws std::invalid_argument when malformed.
void add_failed_workload(const std::string& value, std::map<std::string, std::string>& failed);

}  // namespace dop::cli
