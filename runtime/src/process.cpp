// Child processes with a time limit and captured output (dop/process.hpp): posix_spawn, a pipe, poll, waitpid.
#include "dop/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

extern char** environ;

namespace dop {

namespace {

// The environment for the child: this process's, less LD_PRELOAD, with `set` ("NAME=VALUE") replacing or added.
std::vector<std::string> child_environment(const std::vector<std::string>& set) {
  auto name_of = [](const std::string& e) { return e.substr(0, e.find('=') + 1); };
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    if (entry.rfind("LD_PRELOAD=", 0) == 0) continue;
    bool replaced = false;
    for (const auto& s : set) replaced = replaced || name_of(s) == name_of(entry);
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), set.begin(), set.end());
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& v) {
  std::vector<char*> p;
  for (auto& s : v) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

// Reads the child's pipe until it closes or the deadline passes (moved on by each read when `idle`); false on
// timeout (never with no limit). Lines go to `on_line` as they complete.
bool read_until(int fd, double limit_s, bool idle, const ProcessOptions& o, std::string& out) {
  using Clock = std::chrono::steady_clock;
  const bool limited = std::isfinite(limit_s) && limit_s > 0;
  const auto limit = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limited ? limit_s : 0));
  auto deadline = Clock::now() + limit;
  std::string line;
  auto lines = [&](const char* p, size_t n) {
    if (!o.on_line) return;
    line.append(p, n);
    for (size_t nl; (nl = line.find('\n')) != std::string::npos; line.erase(0, nl + 1)) o.on_line(line.substr(0, nl));
  };
  char buf[4096];
  for (;;) {
    int wait_ms = 1000;
    if (limited) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return false;
      wait_ms = int(std::min<long long>(left.count(), 1000));
    }
    pollfd p{fd, POLLIN, 0};
    const int r = poll(&p, 1, wait_ms);
    if (r < 0 && errno != EINTR) return true;
    if (r <= 0) continue;
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {  // EOF: the child closed its output (it has exited, or is about to)
      if (o.on_line && !line.empty()) o.on_line(line);
      return true;
    }
    if (idle) deadline = Clock::now() + limit;
    if (out.size() < o.max_output) out.append(buf, std::min(size_t(n), o.max_output - out.size()));
    lines(buf, size_t(n));
  }
}

}  // namespace

std::string ProcessResult::status() const {
  if (!started) return "cannot start: " + error;
  if (timed_out) return "timed out";
  if (signal) return "killed by signal " + std::to_string(signal);
  if (exit_code < 0) return "status unknown: " + error;
  return "exit " + std::to_string(exit_code);
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& o) {
  ProcessResult res;
  if (argv.empty()) {
    res.error = "no program";
    return res;
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    res.error = std::string("pipe: ") + std::strerror(errno);
    return res;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (o.report_fd >= 0) {
    posix_spawn_file_actions_adddup2(&fa, fds[1], o.report_fd);  // dup2 clears CLOEXEC
  } else {
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  }
  std::vector<std::string> args = argv, env = child_environment(o.env);
  auto argp = pointers(args), envp = pointers(env);
  const std::string& program = o.program.empty() ? argv[0] : o.program;
  pid_t pid = -1;
  const int err = posix_spawn(&pid, program.c_str(), &fa, nullptr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (err != 0) {
    close(fds[0]);
    res.error = program + ": " + std::strerror(err);
    return res;
  }
  res.started = true;
  if (!read_until(fds[0], o.timeout_s, o.idle_timeout, o, res.output)) {
    res.timed_out = true;
    kill(pid, SIGKILL);
  }
  close(fds[0]);
  int status = 0;
  pid_t w;
  while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (w < 0) {  // e.g. the application ignores SIGCHLD: the child was reaped for us
    res.error = std::string("waitpid: ") + std::strerror(errno);
  } else if (WIFEXITED(status)) {
    res.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    res.signal = WTERMSIG(status);
  }
  return res;
}

ProcessResult run_process(const std::vector<std::string>& argv, double timeout_s, size_t max_output) {
  ProcessOptions o;
  o.timeout_s = timeout_s;
  o.max_output = max_output;
  return run_process(argv, o);
}

std::string timed_out_after(double seconds) {
  char b[48];
  std::snprintf(b, sizeof b, "timed out after %g s", seconds);
  return b;
}

}  // namespace dop
