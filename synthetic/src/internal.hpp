// Shared by the code generator, the spec generator and the reference: what a workload's terms are and the values of
// its constants, so that the three cannot disagree.
#pragma once

#include <algorithm>
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

}  // namespace dop::synthetic::detail
