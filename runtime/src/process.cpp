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
#include <cstring>

extern char** environ;

namespace dop {

namespace {

// The environment for the child: this process's, less LD_PRELOAD.
std::vector<std::string> child_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0) env.emplace_back(*e);
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& v) {
  std::vector<char*> p;
  for (auto& s : v) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

// Reads the child's output until it closes the pipe or the deadline passes; false on timeout.
bool read_until(int fd, std::chrono::steady_clock::time_point deadline, size_t max_output, std::string& out) {
  char buf[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int r = poll(&p, 1, int(std::min<long long>(left.count(), 1000)));
    if (r < 0 && errno != EINTR) return true;
    if (r <= 0) continue;
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return true;  // EOF: the child closed its output (it has exited, or is about to)
    if (out.size() < max_output) out.append(buf, std::min(size_t(n), max_output - out.size()));
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

ProcessResult run_process(const std::vector<std::string>& argv, double timeout_s, size_t max_output) {
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
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  std::vector<std::string> args = argv, env = child_environment();
  auto argp = pointers(args), envp = pointers(env);
  pid_t pid = -1;
  const int err = posix_spawn(&pid, argv[0].c_str(), &fa, nullptr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (err != 0) {
    close(fds[0]);
    res.error = argv[0] + ": " + std::strerror(err);
    return res;
  }
  res.started = true;
  const auto limit = std::chrono::duration<double>(std::isfinite(timeout_s) && timeout_s > 0 ? timeout_s : 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(limit);
  if (!read_until(fds[0], deadline, max_output, res.output)) {
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

}  // namespace dop
