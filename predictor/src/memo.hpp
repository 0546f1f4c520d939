// The predictor's memo (not installed): decisions by (kernel id, launch shape and data, argument values).
#pragma once

#include <array>
#include <functional>
#include <mutex>
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

  /// The key of a decision: the kernel id, the launch shape with its data inputs and the argument values, as bytes.
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

// The lookups are inline: a memoised decision costs a key, a hash and a map lookup under a shared lock, no more.

inline std::string Memo::key(const std::string& kernel_id, const LaunchShape& l, const ArgValues& args) {
  std::string k = kernel_id;
  k += '\0';
  k.append(reinterpret_cast<const char*>(&l.work_dim), sizeof l.work_dim);
  k.append(reinterpret_cast<const char*>(l.global.data()), sizeof l.global);
  k.append(reinterpret_cast<const char*>(l.local.data()), sizeof l.local);
  k.append(reinterpret_cast<const char*>(&l.in_bytes), sizeof l.in_bytes);
  k.append(reinterpret_cast<const char*>(&l.out_bytes), sizeof l.out_bytes);
  k += char((l.data_on_gpu ? 1 : 0) | (l.data_pinned ? 2 : 0));
  for (const auto& [name, v] : args) {
    k += name;
    k += '=';
    k.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  return k;
}

inline Memo::Shard& Memo::shard_of(const std::string& key) const {
  return shards_[std::hash<std::string>{}(key) % kShards];
}

inline std::optional<Decision> Memo::find(const std::string& key) const {
  const Shard& shard = shard_of(key);
  std::shared_lock lock(shard.mu);
  const auto it = shard.map.find(key);
  if (it == shard.map.end()) return std::nullopt;
  Decision d = it->second;
  d.cached = true;
  return d;
}

}  // namespace dop::pred
