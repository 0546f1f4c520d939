// Sorted, disjoint byte ranges: the bookkeeping of which bytes of a buffer are current in a memory, shared by the
// interposer's residency (runtime/intercept/residency.hpp) and the C++ API's resident buffers (dop/device_data.hpp).
// Runtime tier, no OpenCL.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace dop {

/// Sorted, disjoint byte ranges [lo, hi); touching ranges are merged.
class RangeSet {
 public:
  using Range = std::pair<size_t, size_t>;
  void add(size_t lo, size_t hi);
  void remove(size_t lo, size_t hi);
  bool covers(size_t lo, size_t hi) const;                 ///< every byte of [lo, hi) is in the set (true when empty)
  bool intersects(size_t lo, size_t hi) const;             ///< some byte of [lo, hi) is in the set
  std::vector<Range> missing(size_t lo, size_t hi) const;  ///< the parts of [lo, hi) outside the set
  std::vector<Range> within(size_t lo, size_t hi) const;   ///< the parts of [lo, hi) inside the set
  bool empty() const { return r_.empty(); }
  void clear() { r_.clear(); }

 private:
  std::vector<Range> r_;
};

}  // namespace dop
