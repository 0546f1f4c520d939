// A time limit for a whole command (dop run --timeout, dop bench split --timeout): a kernel cannot be cancelled
// once enqueued, so when the limit passes the process writes what timed out and exits with status 124 (as
// timeout(1) does), whatever its threads are doing.
#pragma once

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "dop/process.hpp"

namespace dop::cli {

class Watchdog {
 public:
  /// seconds <= 0: no limit. `what` names what is running ("dop run x.json").
  Watchdog(double seconds, const std::string& what) {
    if (seconds <= 0) return;
    message_ = "dop: error: " + what + ": " + timed_out_after(seconds) + " (--timeout)\n";
    thread_ = std::thread([this, seconds] {
      std::unique_lock<std::mutex> lock(m_);
      if (cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return done_; })) return;
      (void)::write(STDERR_FILENO, message_.data(), message_.size());
      ::_exit(kExitTimeout);
    });
  }
  ~Watchdog() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(m_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  static constexpr int kExitTimeout = 124;

 private:
  std::string message_;
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace dop::cli
