// Workload parameters: validation, names (print and parse), the paper and extended sets, extents and launch shapes.
#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "dop/synthetic.hpp"
#include "internal.hpp"

namespace dop::synthetic {

using detail::bad;
using detail::is_pow2;
using detail::read_number;

namespace {

constexpr int kMaxAlpha = 8;
constexpr int kMaxGamma = 16;
constexpr int kMaxSpecial = 8;  // δ, ε, θ each
constexpr int kMaxTerms = 16;
constexpr int kMaxRung = 8;
constexpr int kMaxCoarsen = 64;
// Size ladder (docs/synthetic.md, "Sizes"): rung r of a workload moves about kRungBytes * 2^(r-1) * scale bytes of
// DRAM traffic, estimated per element as below, so that every pattern runs about as long at the same rung.
constexpr double kRungBytes = 256.0 * 1024 * 1024;  // rung 1 at scale 1: ~2.8 ms at 96 GB/s (16-core Xeon, PoCL)
constexpr double kScatteredBytes = 128;             // a random or strided read: its cache line and the adjacent one
constexpr double kIndexBytes = 4;                   // the index array, read continuously once per element

// The fixed inner extents per β (their product is 256 elements: the work of one work-item in dim 1).
std::vector<size_t> inner_extents(int beta) {
  switch (beta) {
    case 2:
      return {256};
    case 3:
      return {16, 16};
    default:
      return {16, 4, 4};
  }
}

}  // namespace

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "float";
    case DType::i32:
      return "int";
    case DType::f64:
      return "double";
  }
  return "?";
}

const char* family_name(Family f) {
  switch (f) {
    case Family::elementwise:
      return "elementwise";
    case Family::triad:
      return "tri";
    case Family::matmul:
      return "mm";
    case Family::matmul_bt:
      return "mmt";
    case Family::matvec_rows:
      return "mvr";
    case Family::matvec_cols:
      return "mvc";
    case Family::stencil:
      return "st";
    case Family::gather:
      return "gv";
  }
  return "?";
}

int Params::terms() const { return std::max(alpha, delta + epsilon + theta); }

bool Params::extended() const {
  return !span() && (dtype == DType::f64 || dim > 2 || coarsen != 1 || divergent || local_mem);
}

bool Params::operator==(const Params& o) const {
  return family == o.family && radius == o.radius && alpha == o.alpha && beta == o.beta && gamma == o.gamma &&
         delta == o.delta && epsilon == o.epsilon && theta == o.theta && dim == o.dim && dtype == o.dtype &&
         size == o.size && wg == o.wg && coarsen == o.coarsen && divergent == o.divergent && local_mem == o.local_mem;
}

void validate(const Params& p) {
  if (p.span()) return detail::validate_span(p);
  if (p.radius != 0) bad("radius is for the span stencils only");
  if (p.alpha < 1 || p.alpha > kMaxAlpha) bad("α (matrices) must be 1.." + std::to_string(kMaxAlpha));
  if (p.beta < 2 || p.beta > 4) bad("β (matrix dimensions) must be 2..4");
  if (p.gamma < 0 || p.gamma > kMaxGamma) bad("γ (operations per term) must be 0.." + std::to_string(kMaxGamma));
  if (p.delta < 0 || p.delta > kMaxSpecial) bad("δ (transposed terms, T) must be 0.." + std::to_string(kMaxSpecial));
  if (p.epsilon < 0 || p.epsilon > kMaxSpecial) bad("ε (random terms, R) must be 0.." + std::to_string(kMaxSpecial));
  if (p.theta < 0 || p.theta > kMaxSpecial) bad("θ (constant terms, C) must be 0.." + std::to_string(kMaxSpecial));
  if (p.terms() > kMaxTerms) bad("at most " + std::to_string(kMaxTerms) + " terms (max(α, δ+ε+θ))");
  if (p.dim < 1 || p.dim > 3) bad("dim (work-item dimensions) must be 1..3");
  if (p.dim >= p.beta)
    bad("dim " + std::to_string(p.dim) +
        " needs β > dim (the innermost dimension is a loop), β = " + std::to_string(p.beta));
  if (p.size < 1 || p.size > kMaxRung) bad("size rung must be 1.." + std::to_string(kMaxRung));
  if (!is_pow2(p.wg) || p.wg > 1024) bad("work-group size must be a power of two up to 1024");
  if (p.coarsen < 1 || p.coarsen > kMaxCoarsen) bad("coarsening (_w) must be 2.." + std::to_string(kMaxCoarsen));
  if (p.local_mem && p.coarsen != 1) bad("_lm and _w cannot be combined");
}

std::string pattern(const Params& p) {
  if (p.span()) return detail::span_pattern(p);
  std::string s = std::to_string(p.alpha) + "mat" + std::to_string(p.beta) + "d";
  if (p.gamma) s += std::to_string(p.gamma) + "c";
  if (p.theta) s += std::to_string(p.theta) + "C";
  if (p.epsilon) s += std::to_string(p.epsilon) + "R";
  if (p.delta) s += std::to_string(p.delta) + "T";
  return s;
}

std::string name(const Params& p) {
  if (p.span()) return detail::span_name(p);
  std::string s = pattern(p) + "_d" + std::to_string(p.dim) + "_" + dtype_name(p.dtype) + "_s" +
                  std::to_string(p.size) + "_wg" + std::to_string(p.wg);
  if (p.coarsen != 1) s += "_w" + std::to_string(p.coarsen);
  if (p.divergent) s += "_div";
  if (p.local_mem) s += "_lm";
  return s;
}

Params parse_name(const std::string& text) {
  // A span name starts with its family (letters); "mat3d..." is an αmat name that lacks its α.
  const std::string first = text.substr(0, text.find('_'));
  if (!first.empty() && std::isalpha(static_cast<unsigned char>(first[0])) && first.find("mat") == std::string::npos)
    return detail::parse_span_name(text);
  const std::string where = "synthetic workload '" + text + "': ";
  const std::vector<std::string> tok = detail::name_parts(text);
  if (tok.size() < 5)
    bad(where +
        "expected <pattern>_d<dim>_<dtype>_s<rung>_wg<size>[_w<K>][_div][_lm], e.g. "
        "2mat3d2c1T_d1_float_s1_wg64");
  Params p;
  // Pattern: <α>mat<β>d then <n><c|C|R|T> groups.
  const std::string& pat = tok[0];
  size_t pos = 0;
  long v = read_number(pat, pos);
  if (v < 0 || pat.compare(pos, 3, "mat") != 0) bad(where + "the pattern must start with <α>mat (e.g. 2mat3d)");
  p.alpha = int(v);
  pos += 3;
  v = read_number(pat, pos);
  if (v < 0 || pos >= pat.size() || pat[pos] != 'd') bad(where + "the pattern needs <β>d after mat (e.g. 2mat3d)");
  p.beta = int(v);
  ++pos;
  bool seen[4] = {false, false, false, false};
  while (pos < pat.size()) {
    v = read_number(pat, pos);
    if (v < 0 || pos >= pat.size()) bad(where + "pattern suffixes are <n>c, <n>C, <n>R or <n>T");
    const char kind = pat[pos++];
    const char* kinds = "cCRT";
    const char* k = std::char_traits<char>::find(kinds, 4, kind);
    if (!k) bad(where + "unknown pattern suffix '" + std::string(1, kind) + "' (c, C, R or T)");
    const auto slot = size_t(k - kinds);
    if (seen[slot]) bad(where + "pattern suffix '" + std::string(1, kind) + "' given twice");
    seen[slot] = true;
    (kind == 'c' ? p.gamma : kind == 'C' ? p.theta : kind == 'R' ? p.epsilon : p.delta) = int(v);
  }
  // d<dim>
  if (tok[1].size() < 2 || tok[1][0] != 'd') bad(where + "expected d<dim> after the pattern, got '" + tok[1] + "'");
  pos = 1;
  v = read_number(tok[1], pos);
  if (v < 0 || pos != tok[1].size()) bad(where + "expected d<dim> after the pattern, got '" + tok[1] + "'");
  p.dim = int(v);
  // dtype
  if (tok[2] == "float")
    p.dtype = DType::f32;
  else if (tok[2] == "int")
    p.dtype = DType::i32;
  else if (tok[2] == "double")
    p.dtype = DType::f64;
  else
    bad(where + "unknown data type '" + tok[2] + "' (float, int or double)");
  // s<rung>
  pos = 1;
  v = tok[3].size() >= 2 && tok[3][0] == 's' ? read_number(tok[3], pos) : -1;
  if (v < 0 || pos != tok[3].size()) bad(where + "expected s<rung>, got '" + tok[3] + "'");
  p.size = int(v);
  // wg<size>
  pos = 2;
  v = tok[4].rfind("wg", 0) == 0 ? read_number(tok[4], pos) : -1;
  if (v < 0 || pos != tok[4].size()) bad(where + "expected wg<work-group size>, got '" + tok[4] + "'");
  p.wg = int(v);
  // Extensions.
  for (size_t i = 5; i < tok.size(); ++i) {
    const std::string& t = tok[i];
    if (t == "div") {
      p.divergent = true;
    } else if (t == "lm") {
      p.local_mem = true;
    } else if (t.size() >= 2 && t[0] == 'w') {
      pos = 1;
      v = read_number(t, pos);
      if (v < 0 || pos != t.size()) bad(where + "expected w<K> (coarsening), got '" + t + "'");
      p.coarsen = int(v);
    } else {
      bad(where + "unknown extension '" + t + "' (w<K>, div or lm)");
    }
  }
  return detail::require_canonical(p, text, where);
}

namespace detail {

std::vector<std::string> name_parts(const std::string& text) {
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t us = text.find('_', start);
    parts.push_back(text.substr(start, us == std::string::npos ? std::string::npos : us - start));
    if (us == std::string::npos) break;
    start = us + 1;
  }
  return parts;
}

Params require_canonical(const Params& p, const std::string& text, const std::string& where) {
  try {
    validate(p);
  } catch (const std::invalid_argument& e) {
    bad(where + e.what());
  }
  const std::string canonical = name(p);
  if (canonical != text) bad(where + "not in canonical form; did you mean '" + canonical + "'?");
  return p;
}

}  // namespace detail

const std::vector<std::string>& paper_patterns() {
  static const std::vector<std::string> patterns = {
      "1mat3d",     "1mat3d1R",     "1mat3d1T", "1mat3d1C",   "1mat3d1C1R", "1mat3d1C1T",
      "2mat3d",     "2mat3d1R",     "2mat3d1T", "2mat3d1R1T", "2mat3d1C",   "2mat3d1C1R",
      "2mat3d1C1T", "2mat3d1C1R1T", "1mat4d",   "1mat4d1R",   "1mat4d1T"};
  return patterns;
}

namespace {

// The pattern part of a name parsed into Params (γ = 0, everything else default).
Params from_pattern(const std::string& pat) { return parse_name(pat + "_d1_float_s1_wg64"); }

}  // namespace

std::vector<Params> paper_set() {
  std::vector<Params> set;
  set.reserve(1224);
  for (const auto& pat : paper_patterns()) {
    const Params base = from_pattern(pat);
    for (DType t : {DType::f32, DType::i32})
      for (int dim : {1, 2})
        for (int gamma : {0, 2, 4})
          for (int rung : {1, 2, 3})
            for (int wg : {64, 256}) {
              Params p = base;
              p.dtype = t;
              p.dim = dim;
              p.gamma = gamma;
              p.size = rung;
              p.wg = wg;
              set.push_back(p);
            }
  }
  return set;
}

std::vector<Params> extended_set() {
  std::vector<Params> set = paper_set();
  // Extension grid: every paper pattern, dim {1, 2}, γ {0, 4}, rung 2, wg {64, 256}.
  auto grid = [&](const std::vector<DType>& types, auto&& tweak) {
    for (const auto& pat : paper_patterns()) {
      const Params base = from_pattern(pat);
      for (DType t : types)
        for (int dim : {1, 2})
          for (int gamma : {0, 4})
            for (int wg : {64, 256}) {
              Params p = base;
              p.dtype = t;
              p.dim = dim;
              p.gamma = gamma;
              p.size = 2;
              p.wg = wg;
              if (tweak(p)) set.push_back(p);
            }
    }
  };
  const std::vector<DType> fi = {DType::f32, DType::i32};
  grid(fi, [](Params& p) {
    p.coarsen = 4;
    return true;
  });
  grid(fi, [](Params& p) {
    p.divergent = true;
    return true;
  });
  grid(fi, [](Params& p) {
    p.local_mem = true;
    return true;
  });
  grid({DType::f64}, [](Params&) { return true; });
  // 3D work-items: the 4d patterns with dim 3 (the dim 1/2 copies of the grid are dropped).
  grid(fi, [](Params& p) {
    if (p.beta != 4 || p.dim != 1) return false;
    p.dim = 3;
    return true;
  });
  return set;
}

double traffic_per_element(const Params& p) {
  validate(p);
  if (p.span()) bad(name(p) + ": traffic_per_element is defined for the element-wise family only");
  const double s = p.dtype == DType::f64 ? 8 : 4;
  const int continuous = std::max(0, p.alpha - p.delta - p.epsilon - p.theta);
  return s * (1 + continuous) + (p.epsilon ? kIndexBytes : 0) + kScatteredBytes * (p.delta + p.epsilon);
}

std::vector<size_t> extents(const Params& p, double scale) {
  validate(p);
  if (!(scale > 0) || !std::isfinite(scale)) bad("scale must be a positive number");
  if (p.span()) return detail::span_extents(p, scale);
  const double elements = kRungBytes * std::ldexp(1.0, p.size - 1) * scale / traffic_per_element(p);
  std::vector<size_t> n = inner_extents(p.beta);
  size_t inner = 1;
  for (size_t e : n) inner *= e;
  const double outer = std::round(elements / double(inner));
  const double limit = double(INT_MAX) / double(inner);
  if (outer > limit)
    bad(name(p) + ": scale " + std::to_string(scale) + " gives " + std::to_string(outer * double(inner)) +
        " elements, more than 32-bit indices allow (at most " + std::to_string(size_t(limit)) + " outer rows)");
  n.insert(n.begin(), std::max<size_t>(1, size_t(outer)));
  return n;
}

void launch_shape(const Params& p, const std::vector<size_t>& n, std::vector<size_t>& global,
                  std::vector<size_t>& local) {
  validate(p);
  if (p.span()) return detail::span_launch_shape(p, n, global, local);
  if (n.size() != size_t(p.beta)) bad(name(p) + ": expected " + std::to_string(p.beta) + " extents");
  const auto d = size_t(p.dim);
  local = detail::local_shape(p.wg, p.dim);
  global.assign(d, 0);
  for (size_t i = 0; i < d; ++i) {
    size_t items = n[i];
    if (i == 0) items = (items + size_t(p.coarsen) - 1) / size_t(p.coarsen);
    global[i] = (items + local[i] - 1) / local[i] * local[i];
  }
}

ImpliedFeatures implied_features(const Params& p) {
  validate(p);
  if (p.span()) bad(name(p) + ": implied_features is defined for the element-wise family only");
  ImpliedFeatures f;
  const int nt = p.terms();
  const int special = p.delta + p.epsilon + p.theta;
  f.mem_constant = p.theta;
  f.mem_stride = p.delta;
  f.mem_random = p.epsilon;
  f.mem_continuous = (nt - special) + (p.local_mem ? 0 : 1) + (p.epsilon > 0 ? 1 : 0);
  f.arith_data = (nt - 1) + nt * p.gamma + (p.divergent ? 2 : 0);
  f.data_is_float = p.dtype != DType::i32;
  return f;
}

}  // namespace dop::synthetic
