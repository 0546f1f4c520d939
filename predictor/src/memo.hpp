// The predictor's memo (not installed): decisions by (kernel id, launch shape, argument values).
#pragma once

#include <array>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "dop/predictor.hpp"

namespace dop::pred {

/// Memoised decisions in 16 shards, each a map under a shared (reader) lock: lookups of different launches do not
/// wait on each other, and a lookup waits only for an insertion into its own shard. Bounded: a full shard starts
/// over rather than grow without limit. Thread-safe.
class Memo {
 public:
  /// Keeps about `capacity` decisions; 0 disables the memo (enabled() is false).
  explicit Memo(size_t capacity) : capacity_(capacity) {}
  bool enabled() const { return capacity_ > 0; }

  /// The key of a decision: the kernel id, the launch shape and the argument values, as bytes.
  static std::string key(const std::string& kernel_id, const LaunchShape& launch, const ArgValues& args);
  /// The memoised decision of `key` (cached = true), if there is one.
  std::optional<Decision> find(const std::string& key) const;
  void insert(const std::string& key, const Decision& d);
  size_t size() const;
  void clear();

 private:
  static constexpr size_t kShards = 16;
  struct Shard {
    mutable std::shared_mutex mu;
    std::unordered_map<std::string, Decision> map;
  };
  Shard& shard_of(const std::string& key) const;

  size_t capacity_;
  mutable std::array<Shard, kShards> shards_;
};

}  // namespace dop::pred
