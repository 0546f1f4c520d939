// Arithmetic: the operation counts by type, and integer / pointer arithmetic on symbolic values (quotients kept as
// atoms).
#include "analyzer.hpp"

namespace dop::features::detail {

void KernelAnalyzer::count_arith(clang::QualType t, bool bitwise) {
  if (dry_ || in_for_inc_ > 0 || t.isNull() || t->isDependentType()) return;
  clang::QualType et = t;
  unsigned lanes = 1;
  if (const auto* vt = t->getAs<clang::VectorType>()) {
    et = vt->getElementType();
    lanes = vt->getNumElements();
  }
  if (et->isRealFloatingType()) {
    if (bitwise) return;
    ++out_.arith_float;
  } else if (et->isIntegerType()) {
    if (bitwise)
      ++out_.arith_bitwise;
    else
      ++out_.arith_int;
  } else {
    return;  // pointer arithmetic is address computation, like a subscript
  }
  if (lanes > 1) {
    if (!bitwise) ++out_.arith_vector;
    out_.vector_width_max = std::max<int64_t>(out_.vector_width_max, lanes);
  }
}

Val KernelAnalyzer::quotient(const Val& a, const Val& b) {
  const Deps d = deps2(a, b);
  if (a.p.is_constant() && b.p.is_constant() && b.p.constant_value() != 0) {
    const int64_t x = a.p.constant_value(), y = b.p.constant_value();
    if (!(x == INT64_MIN && y == -1)) return constant(x / y);
  }
  if (b.p.is_constant() && b.p.constant_value() != 0) {
    Poly q = a.p.exact_div(b.p.constant_value());
    if (!q.bad()) return Val{q, {}, false};
  }
  if (a.p.bad() || b.p.bad()) return opaque(d);
  const bool renderable = a.p.renderable(atoms_) && b.p.renderable(atoms_);
  auto paren = [&](const Poly& p) {
    std::string s = p.str(atoms_);
    const bool simple = p.terms().size() == 1 && p.terms().begin()->second > 0 && p.terms().begin()->first.size() <= 1;
    return simple ? s : "(" + s + ")";
  };
  const std::string name = "(" + paren(a.p) + "/" + paren(b.p) + ")";
  const AtomId q = atoms_.intern(AtomKind::quot, "q:" + a.p.key() + "/" + b.p.key(), name, d, renderable);
  quots_.emplace(q, std::make_pair(a.p, b.p));
  return Val{Poly::atom(q), {}, false};
}

Val KernelAnalyzer::arith(clang::BinaryOperatorKind op, const Val& a, const Val& b, clang::QualType lt,
                          clang::QualType rt, clang::QualType result) {
  const Deps d = deps2(a, b);
  const bool floating = !result.isNull() && (result->isRealFloatingType() ||
                                             (result->isVectorType() && result->hasFloatingRepresentation()));
  if (floating) return opaque(d);
  switch (op) {
    case clang::BO_Add:
      if (a.ptr && !b.ptr) return checked(Val{a.p + b.p * Poly::constant(pointee_size(lt)), a.bases, true}, d);
      if (b.ptr && !a.ptr) return checked(Val{b.p + a.p * Poly::constant(pointee_size(rt)), b.bases, true}, d);
      return checked(Val{a.p + b.p, {}, false}, d);
    case clang::BO_Sub:
      if (a.ptr && b.ptr) {
        Poly q = (a.p - b.p).exact_div(pointee_size(lt));
        return checked(Val{q, {}, false}, d);
      }
      if (a.ptr) return checked(Val{a.p - b.p * Poly::constant(pointee_size(lt)), a.bases, true}, d);
      return checked(Val{a.p - b.p, {}, false}, d);
    case clang::BO_Mul:
      return checked(Val{a.p * b.p, {}, false}, d);
    case clang::BO_Div:
      return quotient(a, b);
    case clang::BO_Rem: {
      const Val q = quotient(a, b);
      return checked(Val{a.p - b.p * q.p, {}, false}, d);
    }
    case clang::BO_Shl:
      if (b.p.is_constant() && b.p.constant_value() >= 0 && b.p.constant_value() < 62)
        return checked(Val{a.p * Poly::constant(int64_t(1) << b.p.constant_value()), {}, false}, d);
      return opaque(d);
    case clang::BO_Shr:
      if (b.p.is_constant() && b.p.constant_value() >= 0 && b.p.constant_value() < 62)
        return quotient(a, constant(int64_t(1) << b.p.constant_value()));
      return opaque(d);
    case clang::BO_And: {
      // x & (2^k - 1) == x % 2^k for the non-negative indices kernels use.
      const Val* mask = b.p.is_constant() ? &b : (a.p.is_constant() ? &a : nullptr);
      const Val* x = mask == &b ? &a : &b;
      if (mask) {
        const int64_t m = mask->p.constant_value();
        if (m > 0 && m < INT64_MAX && ((m + 1) & m) == 0) {
          const Val q = quotient(*x, constant(m + 1));
          return checked(Val{x->p - Poly::constant(m + 1) * q.p, {}, false}, d);
        }
      }
      return opaque(d);
    }
    default:
      return opaque(d);
  }
}

}  // namespace dop::features::detail
