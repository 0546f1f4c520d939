// dop sweep's supervisor and the worker's reports (sweep_isolation.hpp).
#include "sweep_isolation.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "dop/guard.hpp"

extern char** environ;

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

std::string seconds(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", s);
  return b;
}

// One worker: its process, the workload it last named, what it said before dying, and why it ended.
struct WorkerEnd {
  bool ok = false;
  int exit_status = 0;   // an exit without a signal: its status
  std::string workload;  // the workload in progress ("" before the first)
  std::string reason;    // why that workload is recorded invalid
};

WorkerEnd run_worker(const std::vector<std::string>& args, double timeout_s) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("sweep: pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 3);  // the worker's channel is its fd 3 (dup2 clears CLOEXEC)
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // The worker's environment: ours, with AddressSanitizer told to abort on an error it reports (a sanitizer build):
  // a worker it stops then dies of a signal like any crashing worker, instead of exiting as if the sweep had failed.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "ASAN_OPTIONS=", 13) != 0) env_strings.emplace_back(*e);
  const char* asan = std::getenv("ASAN_OPTIONS");
  env_strings.push_back(std::string("ASAN_OPTIONS=") + (asan && *asan ? std::string(asan) + ":" : "") +
                        "abort_on_error=1");
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw std::runtime_error(std::string("sweep: cannot start a worker: ") + std::strerror(rc));
  }
  WorkerEnd end;
  std::string buf, said;
  bool timed_out = false;
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    const int n = ::poll(&p, 1, timeout_s > 0 ? int(timeout_s * 1000) : -1);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    char chunk[4096];
    const ssize_t got = ::read(fds[0], chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // the worker has gone
    buf.append(chunk, size_t(got));
    for (size_t nl; (nl = buf.find('\n')) != std::string::npos; buf.erase(0, nl + 1)) {
      const std::string line = buf.substr(0, nl);
      if (line.rfind("W ", 0) == 0)
        end.workload = line.substr(2), said.clear();
      else if (line.rfind("dop: ", 0) == 0)
        said = line.substr(5);  // the guard page's message (dop/guard.hpp)
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    end.reason = "timed out after " + seconds(timeout_s) + " s (--timeout)";
  } else if (WIFSIGNALED(status)) {
    end.reason = "crashed: " + signal_name(WTERMSIG(status)) + (said.empty() ? "" : ": " + said);
  } else {
    end.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
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
