// The predictor's memo (memo.hpp).
#include "memo.hpp"

#include <algorithm>
#include <functional>
#include <mutex>

namespace dop::pred {

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
