// dop sweep's supervisor and the worker's reports (sweep_isolation.hpp).
#include "sweep_isolation.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "dop/guard.hpp"
#include "dop/process.hpp"

namespace dop::cli {

namespace {

std::vector<std::string> own_arguments() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> out;
  for (size_t b = 0; b < all.size();) {
    const size_t e = all.find('\0', b);
    out.push_back(all.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  if (out.empty()) throw std::runtime_error("sweep: cannot read this process's arguments (/proc/self/cmdline)");
  return out;
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGABRT:
      return "SIGABRT";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGKILL:
      return "SIGKILL";
    default:
      return "signal " + std::to_string(sig);
  }
}

// One worker: the workload it last named, what it said before dying, and why it ended.
struct WorkerEnd {
  bool ok = false;
  int exit_status = 0;   // an exit without a signal: its status
  std::string workload;  // the workload in progress ("" before the first)
  std::string reason;    // why that workload is recorded invalid
};

// Runs one worker (this binary, /proc/self/exe, with `args`), reading its channel (its fd 3) line by line; killed
// when silent for timeout_s.
WorkerEnd run_worker(const std::vector<std::string>& args, double timeout_s) {
  WorkerEnd end;
  std::string said;
  ProcessOptions o;
  o.program = "/proc/self/exe";
  o.report_fd = 3;  // the worker's channel; its stdout and stderr are ours
  o.timeout_s = timeout_s;
  o.idle_timeout = true;
  o.max_output = 0;
  o.on_line = [&](const std::string& line) {
    if (line.rfind("W ", 0) == 0)
      end.workload = line.substr(2), said.clear();
    else if (line.rfind("dop: ", 0) == 0)
      said = line.substr(5);  // the guard page's message (dop/guard.hpp)
  };
  // AddressSanitizer told to abort on an error it reports (a sanitizer build): a worker it stops then dies of a
  // signal like any crashing worker, instead of exiting as if the sweep had failed.
  const char* asan = std::getenv("ASAN_OPTIONS");
  o.env = {std::string("ASAN_OPTIONS=") + (asan && *asan ? std::string(asan) + ":" : "") + "abort_on_error=1"};
  const ProcessResult r = run_process(args, o);
  if (!r.started) throw std::runtime_error("sweep: cannot start a worker: " + r.error);
  if (r.timed_out) {
    end.reason = timed_out_after(timeout_s) + " (--timeout)";
  } else if (r.signal) {
    end.reason = "crashed: " + signal_name(r.signal) + (said.empty() ? "" : ": " + said);
  } else {
    end.exit_status = r.exit_code >= 0 ? r.exit_code : 1;
    end.ok = end.exit_status == 0;
  }
  return end;
}

}  // namespace

int supervise_sweep(double timeout_s) {
  const std::vector<std::string> base = own_arguments();
  std::map<std::string, std::string> failed;
  for (;;) {
    std::vector<std::string> args = base;
    args.insert(args.end(), {"--worker-fd", "3"});
    for (const auto& [name, why] : failed) args.insert(args.end(), {"--worker-failed", name + '\t' + why});
    const WorkerEnd end = run_worker(args, timeout_s);
    if (end.ok) return 0;
    // An exit (not a signal, not the time limit) is the sweep's own error, which the worker has reported: bad
    // arguments, an unwritable dataset. So is anything before the first workload.
    if (end.exit_status != 0 || end.workload.empty()) return end.exit_status ? end.exit_status : 1;
    if (failed.count(end.workload)) {
      std::fprintf(stderr, "dop: error: sweep: the worker failed again after workload '%s' was recorded invalid (%s)\n",
                   end.workload.c_str(), end.reason.c_str());
      return 1;
    }
    std::fprintf(stderr, "sweep: workload %s recorded invalid: %s; a new worker resumes\n", end.workload.c_str(),
                 end.reason.c_str());
    failed[end.workload] = end.reason;
  }
}

WorkerChannel::WorkerChannel(int fd) : fd_(fd) {
  if (fd_ < 0) return;
  set_guard_report_fd(fd_);
  // The worker dies with its supervisor (killed, say, by a user or a test): never two sweeps on one dataset.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) ::_exit(1);  // the supervisor is already gone
}

void WorkerChannel::progress(const std::string& workload) {
  if (fd_ < 0) return;
  std::string msg = (!started_ || workload != current_) ? "W " + workload + "\n" : "D\n";
  started_ = true;
  current_ = workload;
  for (const char* p = msg.data(); !msg.empty();) {
    const ssize_t w = ::write(fd_, p, msg.size());
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    msg.erase(0, size_t(w));
    p = msg.data();
  }
}

void add_failed_workload(const std::string& value, std::map<std::string, std::string>& failed) {
  const auto tab = value.find('\t');
  if (tab == std::string::npos || tab == 0)
    throw std::invalid_argument("--worker-failed '" + value + "': NAME<TAB>REASON");
  failed[value.substr(0, tab)] = value.substr(tab + 1);
}

}  // namespace dop::cli
