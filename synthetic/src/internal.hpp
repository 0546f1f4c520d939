// Shared by the code generator, the spec generator and the reference: what a workload's terms are and the values of
// its constants, so that the three cannot disagree; and the span families' entry points (span_*.cpp).
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "dop/synthetic.hpp"

namespace dop::synthetic::detail {

enum class TermAccess { continuous, transposed, random, constant };

struct Term {
  TermAccess access;
  int matrix;  ///< input matrix index (0 = A)
};

/// The terms summed per element, in source order: max(α, δ+ε+θ) of them; first the continuous ones (α-δ-ε-θ when
/// positive), then δ transposed, ε random, θ constant. Term k reads matrix k mod α, so every matrix is read and
/// "2mat2d2c1T" is A + B^T as in Table 2.
inline std::vector<Term> term_list(const Params& p) {
  std::vector<Term> terms;
  const int special = p.delta + p.epsilon + p.theta;
  for (int i = 0; i < std::max(0, p.alpha - special); ++i) terms.push_back({TermAccess::continuous, 0});
  for (int i = 0; i < p.delta; ++i) terms.push_back({TermAccess::transposed, 0});
  for (int i = 0; i < p.epsilon; ++i) terms.push_back({TermAccess::random, 0});
  for (int i = 0; i < p.theta; ++i) terms.push_back({TermAccess::constant, 0});
  for (size_t k = 0; k < terms.size(); ++k) terms[k].matrix = int(k % size_t(p.alpha));
  return terms;
}

/// Input matrix names: A, B, C, ...
inline std::string matrix_name(int k) { return std::string(1, char('A' + k)); }

/// Work-items of the _div branch apply this many rounds of s = s*b1 + b2.
constexpr int kDivRounds = 4;

/// _lm: tile width along the innermost dimension (it divides the fixed innermost extent: 256, 16 or 4).
inline int tile_width(const Params& p) { return p.beta == 4 ? 4 : 16; }

/// γ constant c_j (j = 1..γ): odd j multiply, even j add. Dyadic for floats (exact in every precision), small for
/// int so that no term overflows 32 bits for any γ allowed.
inline double gamma_constant(DType t, int j) {
  const bool mul = (j % 2) == 1;
  const bool first = (j % 4) == 1 || (j % 4) == 2;
  if (t == DType::i32) return mul ? (first ? 3 : -2) : (first ? 7 : -5);
  return mul ? (first ? 1.25 : 0.75) : (first ? 0.5 : -0.25);
}

/// _div constants b1 (multiply) and b2 (add).
inline double div_constant(DType t, int which) {
  if (t == DType::i32) return which == 1 ? 2 : -1;
  return which == 1 ? 0.5 : 0.25;
}

/// Input data ranges: floats uniform in [-1, 1), ints in [-100, 100].
inline double data_min(DType t) { return t == DType::i32 ? -100 : -1; }
inline double data_max(DType t) { return t == DType::i32 ? 100 : 1; }

/// Throws std::invalid_argument(what): every parameter and size check of synthetic/.
[[noreturn]] inline void bad(const std::string& what) { throw std::invalid_argument(what); }

inline bool is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

/// Reads a decimal number at s[pos...] (no sign, at most 6 digits); returns -1 if there is none.
inline long read_number(const std::string& s, size_t& pos) {
  const size_t start = pos;
  long v = 0;
  while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
    if (pos - start >= 6) return -1;  // far beyond every limit
    v = v * 10 + (s[pos] - '0');
    ++pos;
  }
  return pos == start ? -1 : v;
}

/// Work-group shape for `wg` work-items over `dim` dimensions: the bits of the (power-of-two) size spread round-robin
/// over the dimensions, dimension 0 first (64 -> 8x8 or 4x4x4, 256 -> 16x16 or 8x8x4).
inline std::vector<size_t> local_shape(int wg, int dim) {
  std::vector<size_t> local(size_t(dim), 1);
  int bits = 0;
  while ((1 << bits) < wg) ++bits;
  for (int b = 0; b < bits; ++b) local[size_t(b) % size_t(dim)] *= 2;
  return local;
}

/// Indented OpenCL C source, written line by line.
struct Writer {
  std::ostringstream out;
  int depth = 1;
  void line(const std::string& s) { out << std::string(size_t(depth) * 2, ' ') << s << "\n"; }
  void open(const std::string& s) {
    line(s + " {");
    ++depth;
  }
  void close() {
    --depth;
    line("}");
  }
};

/// A scalar kernel argument.
inline ArgSpec scalar(const std::string& name, ElemType type, double value) {
  ArgSpec a;
  a.name = name;
  a.kind = ArgKind::scalar;
  a.type = type;
  a.value = value;
  return a;
}

/// The parts of a workload name between underscores.
std::vector<std::string> name_parts(const std::string& text);
/// Returns p if it is valid and `text` is its canonical name; else throws std::invalid_argument `where` + the reason
/// (or "did you mean '<canonical>'?").
Params require_canonical(const Params& p, const std::string& text, const std::string& where);

/// Seed of an input buffer: FNV-1a (64 bit) of "<workload>/<argument>", kept below 2^53 so that every JSON reader
/// (doubles included) reproduces it exactly; the data is the same on every machine.
inline uint64_t seed(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h >> 11;
}

/// Throws SpecError "<spec>: synthetic reference: <what>".
[[noreturn]] void fail(const Spec& spec, const std::string& what);
/// Index of the spec's argument `name` of that kind; fail()s when there is none.
size_t find_arg(const Spec& spec, const std::string& name, ArgKind kind);

// ---- The span families (docs/synthetic.md, "The span set") ----

/// Work-item dimensions of a span family: 2 for mm, mmt and stencils, 1 for tri, mvr and mvc.
int span_dim(Family f);
/// Throws std::invalid_argument naming the offending parameter.
void validate_span(const Params& p);
/// "mm_c8" (family, radius, γ).
std::string span_pattern(const Params& p);
std::string span_name(const Params& p);
/// Parses a span name (one that starts with a letter); only the canonical spelling is accepted.
Params parse_span_name(const std::string& text);
std::string span_program_name(const Params& p);
std::string span_kernel_source(const Params& p);
/// Extents at a scale (span_sizes.cpp).
std::vector<size_t> span_extents(const Params& p, double scale);
void span_launch_shape(const Params& p, const std::vector<size_t>& n, std::vector<size_t>& global,
                       std::vector<size_t>& local);
/// Fills a span workload's arguments, tolerance and meta into w (name, kernel and launch already set).
void span_spec(const Params& p, const std::vector<size_t>& n, double scale, Workload& w);
void span_reference(const Params& p, const Spec& spec, std::vector<ArgData>& args);

/// What a span workload does at given extents, and what it is expected to cost on the reference platform
/// (h100-xeon16; the model and its sources are in span_sizes.cpp and docs/synthetic.md).
struct SpanCost {
  double bytes = 0;       ///< compulsory DRAM traffic: every input read once, the output written once
  double flops = 0;       ///< 2 * (1 + γ) per term (a multiply-add, then γ dependent FMAs)
  double terms = 0;       ///< terms summed, over all outputs
  double cpu_ms = 0;      ///< 16 CPU cores (PoCL)
  double gpu_ms = 0;      ///< the whole GPU, inputs copied in and the output copied out
  double best_ms = 0;     ///< the best of CPU, GPU and a split between them
  double slowest_ms = 0;  ///< the slowest configuration of the grid: 4 CPU cores or 1/8 of the GPU
  double footprint = 0;   ///< bytes of all buffers
};
SpanCost span_cost(const Params& p, const std::vector<size_t>& n);

/// γ chain of the span families: t = t*c1 + c2, γ times. c1 < 1 keeps values in [0, 1.5) for inputs there and
/// shrinks rounding differences (fma contraction) instead of amplifying them; the input still weighs
/// c1^64 = 0.37 after 64 steps, so a wrong input shows. Dyadic: exact in float.
constexpr double kChainMul = 0.984375;  // 63/64
constexpr double kChainAdd = 0.015625;  // 1/64
/// tri: Out[i] = f(A[i] + s*B[i]).
constexpr double kTriadScalar = 0.5;
/// Stencil weight of the points at distance d (d = 0 is the centre): 0.5, then 0.25, 0.125, ... (exact in float).
inline double stencil_weight(int d) { return d == 0 ? 0.5 : 0.5 / double(1 << d); }

}  // namespace dop::synthetic::detail
