// The span families' parameters: validation, names (print and parse), the set and launch shapes.
// Grammar: <family>_c<γ>_s<rung>_wg<size> (1D) or _wg<x>x<y> (2D); family tri, mm, mmt, mvr, mvc, st<r> or gv.
#include <stdexcept>
#include <string>
#include <vector>

#include "dop/synthetic.hpp"
#include "internal.hpp"

namespace dop::synthetic {

namespace {

constexpr int kMaxChain = 256;  // γ: dependent FMAs per term
constexpr int kMaxRadius = 8;
constexpr int kSpanRungs = 5;

const Family kSpanFamilies[] = {Family::triad,       Family::matmul,  Family::matmul_bt, Family::matvec_rows,
                                Family::matvec_cols, Family::stencil, Family::gather};

// The family part of a name: "mm", "st2".
std::string family_token(const Params& p) {
  std::string s = family_name(p.family);
  if (p.family == Family::stencil) s += std::to_string(p.radius);
  return s;
}

std::string wg_token(const Params& p) {
  const auto local = detail::local_shape(p.wg, p.dim);
  std::string s = "wg" + std::to_string(local[0]);
  for (size_t k = 1; k < local.size(); ++k) s += "x" + std::to_string(local[k]);
  return s;
}

}  // namespace

namespace detail {

int span_dim(Family f) { return f == Family::matmul || f == Family::matmul_bt || f == Family::stencil ? 2 : 1; }

void validate_span(const Params& p) {
  const Params plain;  // the element-wise fields keep their defaults
  if (p.alpha != plain.alpha || p.beta != plain.beta || p.delta || p.epsilon || p.theta || p.coarsen != 1 ||
      p.divergent || p.local_mem)
    bad(std::string(family_name(p.family)) + ": the αmat parameters (α, β, δ, ε, θ) and extensions are not used");
  if (p.dtype != DType::f32) bad(std::string(family_name(p.family)) + ": the span families are float only");
  if (p.gamma < 0 || p.gamma > kMaxChain) bad("γ (dependent FMAs per term, c) must be 0.." + std::to_string(kMaxChain));
  if (p.family == Family::stencil) {
    if (p.radius < 1 || p.radius > kMaxRadius) bad("stencil radius must be 1.." + std::to_string(kMaxRadius));
  } else if (p.radius != 0) {
    bad(std::string(family_name(p.family)) + ": radius is for stencils only");
  }
  if (p.dim != span_dim(p.family))
    bad(std::string(family_name(p.family)) + " has " + std::to_string(span_dim(p.family)) + "D work-items, not " +
        std::to_string(p.dim) + "D");
  if (p.size < 1 || p.size > kSpanRungs) bad("size rung must be 1.." + std::to_string(kSpanRungs));
  if (!is_pow2(p.wg) || p.wg > 1024) bad("work-group size must be a power of two up to 1024");
}

std::string span_pattern(const Params& p) { return family_token(p) + "_c" + std::to_string(p.gamma); }

std::string span_name(const Params& p) { return span_pattern(p) + "_s" + std::to_string(p.size) + "_" + wg_token(p); }

std::string span_program_name(const Params& p) { return "span_" + span_pattern(p); }

Params parse_span_name(const std::string& text) {
  const std::string where = "span workload '" + text + "': ";
  const std::string form =
      "expected <family>_c<γ>_s<rung>_wg<size> (family tri, mm, mmt, mvr, mvc, st<r> or gv), e.g. " +
      std::string("mm_c8_s3_wg16x16 or mvr_c0_s2_wg256");
  const std::vector<std::string> tok = name_parts(text);
  Params p;
  bool known = false;
  for (Family f : kSpanFamilies) {
    const std::string fam = family_name(f);
    if (f == Family::stencil) {
      size_t pos = fam.size();
      if (tok[0].rfind(fam, 0) != 0) continue;
      const long r = read_number(tok[0], pos);
      if (r < 0 || pos != tok[0].size()) bad(where + "a stencil is st<radius>, e.g. st2; got '" + tok[0] + "'");
      p.radius = int(r);
    } else if (tok[0] != fam) {
      continue;
    }
    p.family = f;
    known = true;
    break;
  }
  if (!known) bad(where + "unknown family '" + tok[0] + "'; " + form);
  p.dim = span_dim(p.family);
  // The other parts are read in any order, so that a misordered name gets a "did you mean" below.
  bool seen_c = false, seen_s = false, seen_wg = false;
  for (size_t i = 1; i < tok.size(); ++i) {
    const std::string& t = tok[i];
    size_t pos = 0;
    long v = -1;
    if (t.rfind("wg", 0) == 0) {
      if (seen_wg) bad(where + "the work-group size is given twice");
      seen_wg = true;
      pos = 2;
      long items = 1;
      for (;;) {  // wg<x> or wg<x>x<y>[x<z>]: the work-items per group are the product
        v = read_number(t, pos);
        if (v <= 0) bad(where + "expected wg<size> or wg<x>x<y>, got '" + t + "'");
        items *= v;
        if (items > 1024) bad(where + "work-group size must be a power of two up to 1024, got '" + t + "'");
        if (pos == t.size()) break;
        if (t[pos] != 'x') bad(where + "expected wg<size> or wg<x>x<y>, got '" + t + "'");
        ++pos;
      }
      p.wg = int(items);
    } else if (!t.empty() && (t[0] == 'c' || t[0] == 's')) {
      bool& seen = t[0] == 'c' ? seen_c : seen_s;
      if (seen) bad(where + "'" + t.substr(0, 1) + "' is given twice");
      seen = true;
      pos = 1;
      v = read_number(t, pos);
      if (v < 0 || pos != t.size()) bad(where + "expected " + (t[0] == 'c' ? "c<γ>" : "s<rung>") + ", got '" + t + "'");
      (t[0] == 'c' ? p.gamma : p.size) = int(v);
    } else {
      bad(where + "unexpected part '" + t + "'; " + form);
    }
  }
  if (!seen_c || !seen_s || !seen_wg) bad(where + form);
  return require_canonical(p, text, where);
}

void span_launch_shape(const Params& p, const std::vector<size_t>& n, std::vector<size_t>& global,
                       std::vector<size_t>& local) {
  // Extents: {N} (tri), {M, N, K} (mm, mmt), {M, N} (mvr, mvc, stencils), {N, K} (gv). Work-items: one per output
  // element; 2D launches run dimension 0 along a row of the output (its columns), dimension 1 down its rows.
  const size_t want = p.family == Family::triad                                     ? 1
                      : p.family == Family::matmul || p.family == Family::matmul_bt ? 3
                                                                                    : 2;
  if (n.size() != want) bad(span_name(p) + ": expected " + std::to_string(want) + " extents");
  std::vector<size_t> items;
  switch (p.family) {
    case Family::triad:
    case Family::matvec_rows:
    case Family::gather:
      items = {n[0]};
      break;
    case Family::matvec_cols:
      items = {n[1]};
      break;
    default:  // mm, mmt, stencils: the M x N output
      items = {n[1], n[0]};
      break;
  }
  local = local_shape(p.wg, p.dim);
  global.assign(items.size(), 0);
  for (size_t i = 0; i < items.size(); ++i) global[i] = (items[i] + local[i] - 1) / local[i] * local[i];
}

}  // namespace detail

std::vector<Params> span_set() {
  std::vector<Params> set;
  set.reserve(360);
  auto add = [&](Family f, int radius) {
    for (int gamma : {0, 4, 16, 64})
      for (int rung = 1; rung <= kSpanRungs; ++rung)
        for (int wg : {64, 256}) {
          Params p;
          p.family = f;
          p.radius = radius;
          p.dim = detail::span_dim(f);
          p.gamma = gamma;
          p.size = rung;
          p.wg = wg;
          set.push_back(p);
        }
  };
  add(Family::triad, 0);
  add(Family::matmul, 0);
  add(Family::matmul_bt, 0);
  add(Family::matvec_rows, 0);
  add(Family::matvec_cols, 0);
  for (int r : {1, 2, 4}) add(Family::stencil, r);
  add(Family::gather, 0);
  return set;
}

}  // namespace dop::synthetic
