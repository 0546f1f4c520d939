// Sorted, disjoint byte ranges (dop/range_set.hpp): add, remove and the queries the residency protocols ask.
#include "dop/range_set.hpp"

#include <algorithm>

namespace dop {

void RangeSet::add(size_t lo, size_t hi) {
  if (lo >= hi) return;
  std::vector<Range> out;
  out.reserve(r_.size() + 1);
  size_t i = 0;
  for (; i < r_.size() && r_[i].second < lo; ++i) out.push_back(r_[i]);  // entirely before (not touching)
  for (; i < r_.size() && r_[i].first <= hi; ++i) {                      // overlapping or touching: merged
    lo = std::min(lo, r_[i].first);
    hi = std::max(hi, r_[i].second);
  }
  out.emplace_back(lo, hi);
  for (; i < r_.size(); ++i) out.push_back(r_[i]);
  r_ = std::move(out);
}

void RangeSet::remove(size_t lo, size_t hi) {
  if (lo >= hi || r_.empty()) return;
  std::vector<Range> out;
  out.reserve(r_.size() + 1);
  for (const Range& r : r_) {
    if (r.second <= lo || r.first >= hi) {
      out.push_back(r);
      continue;
    }
    if (r.first < lo) out.emplace_back(r.first, lo);
    if (r.second > hi) out.emplace_back(hi, r.second);
  }
  r_ = std::move(out);
}

bool RangeSet::covers(size_t lo, size_t hi) const {
  if (lo >= hi) return true;
  for (const Range& r : r_)
    if (r.first <= lo && r.second >= hi) return true;
  return false;
}

bool RangeSet::intersects(size_t lo, size_t hi) const {
  for (const Range& r : r_)
    if (r.first < hi && r.second > lo) return true;
  return false;
}

std::vector<RangeSet::Range> RangeSet::within(size_t lo, size_t hi) const {
  std::vector<Range> out;
  for (const Range& r : r_) {
    const size_t b = std::max(lo, r.first), e = std::min(hi, r.second);
    if (b < e) out.emplace_back(b, e);
  }
  return out;
}

std::vector<RangeSet::Range> RangeSet::missing(size_t lo, size_t hi) const {
  std::vector<Range> out;
  size_t at = lo;
  for (const Range& r : r_) {
    if (r.second <= at) continue;
    if (r.first >= hi) break;
    if (r.first > at) out.emplace_back(at, r.first);
    at = std::max(at, r.second);
    if (at >= hi) break;
  }
  if (at < hi) out.emplace_back(at, hi);
  return out;
}

}  // namespace dop
