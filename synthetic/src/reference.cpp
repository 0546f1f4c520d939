// CPU reference of the synthetic family: plain C++ over dop::ArgData, element by element in the kernel's order of
// operations. Integer arithmetic wraps modulo 2^32 like OpenCL's (computed unsigned: no undefined behaviour).
#include <cstdint>
#include <string>
#include <vector>

#include "dop/synthetic.hpp"
#include "internal.hpp"

namespace dop::synthetic {

namespace detail {

void fail(const Spec& spec, const std::string& what) {
  throw SpecError((spec.path.empty() ? spec.name : spec.path) + ": synthetic reference: " + what);
}

size_t find_arg(const Spec& spec, const std::string& name, ArgKind kind) {
  for (size_t i = 0; i < spec.args.size(); ++i)
    if (spec.args[i].name == name) {
      if (spec.args[i].kind != kind) fail(spec, "argument '" + name + "' has the wrong kind");
      return i;
    }
  fail(spec, "no argument named '" + name + "'");
}

}  // namespace detail

namespace {

using detail::fail;
using detail::find_arg;
using detail::Term;
using detail::TermAccess;

template <typename T>
struct Arith {
  static T add(T a, T b) { return a + b; }
  static T mul(T a, T b) { return a * b; }
};
template <>
struct Arith<int32_t> {
  static int32_t add(int32_t a, int32_t b) { return int32_t(uint32_t(a) + uint32_t(b)); }
  static int32_t mul(int32_t a, int32_t b) { return int32_t(uint32_t(a) * uint32_t(b)); }
};

template <typename T>
void compute(const Params& p, const Spec& spec, std::vector<ArgData>& args) {
  using A = Arith<T>;
  if (args.size() != spec.args.size()) fail(spec, "argument data does not match the spec");
  // Extents and constants come from the spec's scalars, so the reference follows any scale.
  std::vector<size_t> n(size_t(p.beta));
  size_t count = 1;
  for (int k = 0; k < p.beta; ++k) {
    const double v = spec.args[find_arg(spec, "N" + std::to_string(k), ArgKind::scalar)].value;
    if (!(v >= 1)) fail(spec, "N" + std::to_string(k) + " must be positive");
    n[size_t(k)] = size_t(v);
    count *= n[size_t(k)];
  }
  auto buffer = [&](const std::string& name, ElemType type) -> ArgData& {
    const size_t i = find_arg(spec, name, ArgKind::buffer);
    if (spec.args[i].type != type) fail(spec, "buffer '" + name + "' has the wrong type");
    if (spec.args[i].count < count || args[i].bytes < count * type_size(type))
      fail(spec, "buffer '" + name + "' holds fewer than " + std::to_string(count) + " elements");
    return args[i];
  };
  const ElemType et = p.dtype == DType::f32 ? ElemType::f32 : p.dtype == DType::i32 ? ElemType::i32 : ElemType::f64;
  std::vector<const T*> m;
  for (int k = 0; k < p.alpha; ++k) m.push_back(buffer(detail::matrix_name(k), et).template as<T>());
  T* out = buffer("Out", et).template as<T>();
  const int32_t* idx = p.epsilon ? buffer("Idx", ElemType::i32).template as<int32_t>() : nullptr;
  size_t kaddr = 0;
  if (p.theta) {
    const double v = spec.args[find_arg(spec, "K", ArgKind::scalar)].value;
    if (!(v >= 0 && v < double(count))) fail(spec, "K is outside the matrices");
    kaddr = size_t(v);
  }
  std::vector<T> c(size_t(p.gamma) + 1);
  for (int j = 1; j <= p.gamma; ++j)
    c[size_t(j)] = T(spec.args[find_arg(spec, "c" + std::to_string(j), ArgKind::scalar)].value);
  T b1{}, b2{};
  if (p.divergent) {
    b1 = T(spec.args[find_arg(spec, "b1", ArgKind::scalar)].value);
    b2 = T(spec.args[find_arg(spec, "b2", ArgKind::scalar)].value);
  }
  if (idx)
    for (size_t e = 0; e < count; ++e)
      if (idx[e] < 0 || size_t(idx[e]) >= count) fail(spec, "Idx[" + std::to_string(e) + "] is out of range");

  const std::vector<Term> terms = detail::term_list(p);
  const size_t inner = count / n[0];
  std::vector<size_t> coord(size_t(p.beta), 0);  // odometer over the coordinates, innermost fastest
  for (size_t e = 0; e < count; ++e) {
    size_t t = coord[size_t(p.beta - 1)];  // transposed index: reversed coordinates in reversed extents
    for (int k = p.beta - 2; k >= 0; --k) t = t * n[size_t(k)] + coord[size_t(k)];
    T s{};
    for (size_t k = 0; k < terms.size(); ++k) {
      const T* mat = m[size_t(terms[k].matrix)];
      T v{};
      switch (terms[k].access) {
        case TermAccess::continuous:
          v = mat[e];
          break;
        case TermAccess::transposed:
          v = mat[t];
          break;
        case TermAccess::random:
          v = mat[size_t(idx[e])];
          break;
        case TermAccess::constant:
          v = mat[kaddr];
          break;
      }
      for (int j = 1; j <= p.gamma; ++j) v = j % 2 ? A::mul(v, c[size_t(j)]) : A::add(v, c[size_t(j)]);
      s = k == 0 ? v : A::add(s, v);
    }
    if (p.divergent && (e / inner) % 2 == 1)
      for (int r = 0; r < detail::kDivRounds; ++r) s = A::add(A::mul(s, b1), b2);
    out[e] = s;
    for (int k = p.beta - 1; k >= 0; --k) {
      if (++coord[size_t(k)] < n[size_t(k)]) break;
      coord[size_t(k)] = 0;
    }
  }
}

}  // namespace

void reference(const Spec& spec, std::vector<ArgData>& args) {
  const std::string prefix = "synthetic:";
  const std::string wname = spec.reference.rfind(prefix, 0) == 0 && spec.reference.size() > prefix.size()
                                ? spec.reference.substr(prefix.size())
                                : spec.name;
  Params p;
  try {
    p = parse_name(wname);
  } catch (const std::invalid_argument& e) {
    fail(spec, e.what());
  }
  if (p.span()) return detail::span_reference(p, spec, args);
  switch (p.dtype) {
    case DType::f32:
      compute<float>(p, spec, args);
      break;
    case DType::i32:
      compute<int32_t>(p, spec, args);
      break;
    case DType::f64:
      compute<double>(p, spec, args);
      break;
  }
}

void register_references() { register_reference("synthetic:", reference); }

}  // namespace dop::synthetic
