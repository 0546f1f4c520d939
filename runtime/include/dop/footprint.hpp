// dop memory footprints: the bytes of each buffer a range of work-items can touch, as the static analysis proved
// them (parse_footprint), and their evaluation for a launch's chunks (FootprintEvaluator). Runtime tier.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dop/spec.hpp"

namespace dop {

/// The bytes a kernel's work-items can touch through each buffer (and __local) argument, as the static analysis proved
/// them
/// (`dop features --json`, key "footprint"; docs/features.md gives the contract). In copy mode the GPU then receives
/// only the slices of such buffers that its chunks need, and sends back only what it may have written.
struct Footprint {
  struct Term {
    int64_t coef = 0;
    std::vector<size_t> atoms;  ///< indices into `atoms` (repeated for powers)
  };
  struct Access {
    bool write = false;
    int64_t bytes = 0;        ///< bytes accessed at the address (an element, a vector)
    std::vector<Term> terms;  ///< the byte offset from the argument's base: the sum of the terms
    /// Some work-items may not perform it (a condition, a loop that may exit early, ...; key "may"); false in
    /// footprints made before the key existed.
    bool may = false;
    /// Simple guards it runs under (key "guards"): performed by every work-item whose atom is at most (`upper`) or
    /// at least the bound, an expression.
    struct Guard {
      size_t atom = 0;
      bool upper = true;
      std::string bound;
    };
    std::vector<Guard> guards;
  };
  struct Arg {
    bool whole = true;  ///< not bounded: the whole buffer, always
    std::string why;
    std::vector<Access> accesses;
  };
  std::map<std::string, Arg> args;  ///< by argument name; an argument not listed is whole
  /// Atom names and their [lo, hi] range expressions (kernel scalar arguments, launch symbols, and the chunk's
  /// gid_lo_d, gid_hi_d, group_lo_d, group_hi_d).
  std::vector<std::string> atoms;
  std::vector<std::pair<std::string, std::string>> ranges;
  bool empty() const { return args.empty(); }
};
/// The footprint in a kernel's features JSON (a bundle's features_json or a kernel object of `dop features
/// --json`): an empty footprint when it has none. Throws std::runtime_error naming `origin` when it is malformed.
Footprint parse_footprint(const std::string& features_json, const std::string& origin);

/// A byte range [lo, hi) of a buffer; empty when lo >= hi.
struct ByteRange {
  int64_t lo = 0, hi = 0;
  bool empty() const { return lo >= hi; }
};
/// The byte ranges that work-items whose split-dimension global ids lie in [gid_begin, gid_end) can read and write
/// through each argument of `spec` (by argument index; std::nullopt: not bounded, the whole buffer), for the
/// launch `global`/`local` with the scalar argument values of `args`. Clamped to the buffer.
struct ArgRanges {
  std::optional<ByteRange> read, write;
};
std::vector<ArgRanges> footprint_ranges(const Footprint& fp, const Spec& spec, const std::vector<ArgData>& args,
                                        const std::vector<size_t>& local, size_t gid_begin, size_t gid_end);
/// What the work-items whose global ids lie in [0, gid_hi[d]] in each dimension d (every id of the launch where
/// gid_hi has no entry) can touch through each buffer and __local argument of `spec`: the bytes [lo, hi) from its
/// base (a __local argument's: in each work-group, its local ids taking every value), NOT
/// clamped to the buffer; std::nullopt where the footprint does not bound the argument. With `certain`, only the
/// accesses every work-item within their guards performs (not `may`, no atom of an empty range: a loop that does
/// not run), with each guarded atom's range cut at its guard, and whose terms all grow with their atoms (no
/// negative coefficient or atom range reaching below 0), so that the highest byte is one a work-item does touch;
/// ByteRange{0, 0} when there are none. For launch-time bounds checks (dop/bounds.hpp).
std::vector<std::optional<ByteRange>> footprint_extents(const Footprint& fp, const Spec& spec,
                                                        const std::vector<ArgData>& args,
                                                        const std::vector<size_t>& local,
                                                        const std::vector<size_t>& gid_hi = {}, bool certain = false);
/// footprint_ranges for the chunks of one launch: what does not depend on the chunk (scalars, launch symbols,
/// chunk-independent atoms) is evaluated once, and the split dimension's id ranges are taken without parsing. It
/// keeps references to `fp` and `spec`. Thread-compatible: calls are const.
class FootprintEvaluator {
 public:
  FootprintEvaluator(const Footprint& fp, const Spec& spec, const std::vector<ArgData>& args,
                     const std::vector<size_t>& local);
  ~FootprintEvaluator();
  std::vector<ArgRanges> operator()(size_t gid_begin, size_t gid_end) const;

 private:
  struct Atom;
  const Footprint& fp_;
  const Spec& spec_;
  std::map<std::string, int64_t> env_;
  size_t split_ = 0;
  int64_t split_local_ = 1;
  std::vector<Atom> atoms_;
  bool has_expr_ = false;
};

}  // namespace dop
