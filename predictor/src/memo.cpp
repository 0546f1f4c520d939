// The predictor's memo (memo.hpp).
#include "memo.hpp"

#include <algorithm>
#include <functional>
#include <mutex>

namespace dop::pred {

std::string Memo::key(const std::string& kernel_id, const LaunchShape& l, const ArgValues& args) {
  std::string k = kernel_id;
  k += '\0';
  k.append(reinterpret_cast<const char*>(&l.work_dim), sizeof l.work_dim);
  k.append(reinterpret_cast<const char*>(l.global.data()), sizeof l.global);
  k.append(reinterpret_cast<const char*>(l.local.data()), sizeof l.local);
  for (const auto& [name, v] : args) {
    k += name;
    k += '=';
    k.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  return k;
}

Memo::Shard& Memo::shard_of(const std::string& key) const { return shards_[std::hash<std::string>{}(key) % kShards]; }

std::optional<Decision> Memo::find(const std::string& key) const {
  const Shard& shard = shard_of(key);
  std::shared_lock lock(shard.mu);
  const auto it = shard.map.find(key);
  if (it == shard.map.end()) return std::nullopt;
  Decision d = it->second;
  d.cached = true;
  return d;
}

void Memo::insert(const std::string& key, const Decision& d) {
  Shard& shard = shard_of(key);
  std::unique_lock lock(shard.mu);
  const size_t per_shard = std::max<size_t>(1, capacity_ / kShards);
  if (shard.map.size() >= per_shard) shard.map.clear();  // bounded: start over rather than grow without limit
  shard.map.emplace(key, d);
}

size_t Memo::size() const {
  size_t n = 0;
  for (auto& s : shards_) {
    std::shared_lock lock(s.mu);
    n += s.map.size();
  }
  return n;
}

void Memo::clear() {
  for (auto& s : shards_) {
    std::unique_lock lock(s.mu);
    s.map.clear();
  }
}

}  // namespace dop::pred
