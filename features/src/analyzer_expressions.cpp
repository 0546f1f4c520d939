// Expressions: the value of each expression (rvalues by kind, casts, unary and binary operators, what Clang kept of
// erroneous code), evaluated in order so that their memory and arithmetic operations count.
#include <clang/Lex/Lexer.h>

#include <algorithm>
#include <cctype>

#include "analyzer.hpp"

namespace dop::features::detail {

Val KernelAnalyzer::rv(const clang::Expr* e) {
  if (!e || !step()) return opaque(Deps{});
  DepthGuard g(depth_);
  if (too_deep()) return opaque(Deps{});
  e = e->IgnoreParens();
  // A sampler is a constant bit pattern (CLK_ADDRESS_CLAMP | ...), not computation.
  if (e->getType()->isSamplerT()) return opaque(Deps{});
  switch (e->getStmtClass()) {
    case clang::Stmt::IntegerLiteralClass: {
      const auto& v = llvm::cast<clang::IntegerLiteral>(e)->getValue();
      if (v.getActiveBits() <= 63) return constant(int64_t(v.getZExtValue()));
      return opaque(Deps{});
    }
    case clang::Stmt::CharacterLiteralClass:
      return constant(int64_t(llvm::cast<clang::CharacterLiteral>(e)->getValue()));
    case clang::Stmt::FloatingLiteralClass:
      return opaque(Deps{});
    case clang::Stmt::ImplicitCastExprClass:
    case clang::Stmt::CStyleCastExprClass:
      return cast(llvm::cast<clang::CastExpr>(e));
    case clang::Stmt::DeclRefExprClass: {
      const auto* dr = llvm::cast<clang::DeclRefExpr>(e);
      if (const auto* ec = llvm::dyn_cast<clang::EnumConstantDecl>(dr->getDecl())) {
        const std::string n = ec->getDeclName().isIdentifier() ? ec->getName().str() : std::string();
        if (!n.empty() && guessed_.count(n))  // declared by the front end's guess: a named symbol
          return Val{Poly::atom(atoms_.intern(AtomKind::symbol, "symbol:" + n, n, Deps{}, true)), {}, false};
        const auto& v = ec->getInitVal();
        if (v.getMinSignedBits() <= 63) return constant(v.getSExtValue());
        return opaque(Deps{});
      }
      if (e->isGLValue()) return value_of_glvalue(e);
      return opaque(Deps{});
    }
    case clang::Stmt::UnaryOperatorClass:
      return unary(llvm::cast<clang::UnaryOperator>(e));
    case clang::Stmt::BinaryOperatorClass:
    case clang::Stmt::CompoundAssignOperatorClass:
      return binary(llvm::cast<clang::BinaryOperator>(e));
    case clang::Stmt::ArraySubscriptExprClass:
    case clang::Stmt::MemberExprClass:
    case clang::Stmt::ExtVectorElementExprClass:
      if (e->isGLValue()) return value_of_glvalue(e);
      return rvalue_component(e);
    case clang::Stmt::CallExprClass:
      return call(llvm::cast<clang::CallExpr>(e));
    case clang::Stmt::ConditionalOperatorClass: {
      const auto* c = llvm::cast<clang::ConditionalOperator>(e);
      const Val cond = rv(c->getCond());
      count_branch(cond);
      ++fp_cond_;
      const Val a = rv(c->getTrueExpr());
      const Val b = rv(c->getFalseExpr());
      --fp_cond_;
      return merge(a, b, deps(cond));
    }
    case clang::Stmt::UnaryExprOrTypeTraitExprClass: {
      clang::Expr::EvalResult r;
      if (!e->isValueDependent() && !e->containsErrors() && e->EvaluateAsInt(r, ctx_) && r.Val.isInt() &&
          r.Val.getInt().getMinSignedBits() <= 63)
        return constant(r.Val.getInt().getSExtValue());
      return opaque(Deps{});
    }
    case clang::Stmt::BinaryConditionalOperatorClass: {  // a ?: b
      ++fp_cond_;
      const Val v = generic(e);
      --fp_cond_;
      return v;
    }
    case clang::Stmt::ConstantExprClass:
      return rv(llvm::cast<clang::ConstantExpr>(e)->getSubExpr());
    case clang::Stmt::RecoveryExprClass:
      return recovery(llvm::cast<clang::RecoveryExpr>(e));
    default:
      if (e->isGLValue()) return value_of_glvalue(e);
      return generic(e);
  }
}

Val KernelAnalyzer::value_of_glvalue(const clang::Expr* e) {
  const LV l = lv(e);
  if (l.kind == LV::Kind::var) return get(l.key);
  if (l.kind == LV::Kind::mem && !l.type.isNull() && !l.type->isArrayType() && !l.type->isFunctionType())
    return load(l);
  return opaque(l.kind == LV::Kind::mem ? deps(l.addr) : l.deps);
}

Val KernelAnalyzer::rvalue_component(const clang::Expr* e) {
  const clang::Expr* base = nullptr;
  if (const auto* m = llvm::dyn_cast<clang::MemberExpr>(e)) base = m->getBase();
  if (const auto* v = llvm::dyn_cast<clang::ExtVectorElementExpr>(e)) base = v->getBase();
  if (!base) return generic(e);
  const Val b = rv(base);
  return opaque(deps(b));
}

Val KernelAnalyzer::generic(const clang::Stmt* s) {
  Deps d;
  for (const clang::Stmt* c : s->children()) {
    if (!c) continue;
    if (const auto* ce = llvm::dyn_cast<clang::Expr>(c)) {
      d.merge(deps(rv(ce)));
    } else {
      stmt(c);
    }
  }
  return opaque(d);
}

Val KernelAnalyzer::recovery(const clang::RecoveryExpr* e) {
  if (e->child_begin() == e->child_end()) {
    const auto range = clang::CharSourceRange::getTokenRange(e->getSourceRange());
    const auto text = clang::Lexer::getSourceText(range, sm_, ctx_.getLangOpts()).str();
    const bool ident = !text.empty() && text.size() < 64 &&
                       (std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_') &&
                       std::all_of(text.begin(), text.end(),
                                   [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (ident) return Val{Poly::atom(atoms_.intern(AtomKind::symbol, "symbol:" + text, text, Deps{}, true)), {}, false};
  }
  return generic(e);
}

Val KernelAnalyzer::cast(const clang::CastExpr* c) {
  const clang::Expr* sub = c->getSubExpr();
  switch (c->getCastKind()) {
    case clang::CK_LValueToRValue:
      return load(lv(sub));
    case clang::CK_ArrayToPointerDecay:
      return address_of(lv(sub));
    case clang::CK_FunctionToPointerDecay:
    case clang::CK_BuiltinFnToFnPtr:
      return opaque(Deps{});
    case clang::CK_ToVoid:
      rv(sub);
      return opaque(Deps{});
    case clang::CK_IntegralToBoolean:
    case clang::CK_FloatingToBoolean:
    case clang::CK_PointerToBoolean:
      return opaque(deps(rv(sub)));
    case clang::CK_NullToPointer:
    case clang::CK_IntegralToPointer: {
      Val v = rv(sub);
      v.ptr = true;
      v.bases.clear();
      return v;
    }
    case clang::CK_PointerToIntegral: {
      Val v = rv(sub);
      v.ptr = false;
      v.bases.clear();
      return opaque(deps(v));
    }
    default: {
      // Integral/floating conversions, no-op, address-space and bit casts keep the value (pointer offsets are in
      // bytes, so a cast to another pointee type keeps the address).
      Val v = rv(sub);
      if (c->getCastKind() == clang::CK_IntegralCast) check_narrowing(v, c->getType(), c->getBeginLoc());
      const clang::QualType t = c->getType();
      if (!t.isNull() && t->isPointerType() && !v.ptr) {
        v.ptr = true;
        v.bases.clear();
      }
      return v;
    }
  }
}

void KernelAnalyzer::count_branch(const Val& cond) {
  if (dry_) return;
  ++out_.branches;
  if (deps(cond).wi) ++out_.branches_divergent;
}

Val KernelAnalyzer::unary(const clang::UnaryOperator* u) {
  const clang::Expr* sub = u->getSubExpr();
  switch (u->getOpcode()) {
    case clang::UO_Minus: {
      const Val v = rv(sub);
      if (v.ptr || u->getType()->hasFloatingRepresentation()) return opaque(deps(v));
      return checked(Val{-v.p, {}, false}, deps(v));
    }
    case clang::UO_Plus:
    case clang::UO_Extension:
    case clang::UO_Real:
      return rv(sub);
    case clang::UO_Imag:
      return opaque(deps(rv(sub)));
    case clang::UO_Not:
      count_arith(u->getType(), /*bitwise=*/true);
      return opaque(deps(rv(sub)));
    case clang::UO_LNot:
      return opaque(deps(rv(sub)));
    case clang::UO_Deref:
      return value_of_glvalue(u);
    case clang::UO_AddrOf: {
      const LV l = lv(sub);
      if (l.kind == LV::Kind::var && !dry_) {
        // The variable may now change behind our back: forget its exact value.
        const Val old = get(l.key);
        Val v = opaque(deps(old));
        v.ptr = old.ptr;
        v.bases = old.bases;
        const Val addr = address_of(l);
        assign(l, v);
        return addr;
      }
      return address_of(l);
    }
    case clang::UO_PreInc:
    case clang::UO_PostInc:
    case clang::UO_PreDec:
    case clang::UO_PostDec: {
      const LV l = lv(sub);
      Val old = load(l);
      const bool inc = u->getOpcode() == clang::UO_PreInc || u->getOpcode() == clang::UO_PostInc;
      const clang::QualType t = sub->getType();
      count_arith(t, false);
      Val nv;
      if (!t.isNull() && t->isPointerType()) {
        const int64_t s = pointee_size(t);
        nv = checked(Val{old.p + Poly::constant(inc ? s : -s), old.bases, true}, deps(old));
      } else if (!t.isNull() && t->isIntegerType()) {
        nv = checked(Val{old.p + Poly::constant(inc ? 1 : -1), {}, false}, deps(old));
      } else {
        nv = opaque(deps(old));
      }
      assign(l, nv);
      return u->isPostfix() ? old : nv;
    }
    default:
      return opaque(deps(rv(sub)));
  }
}

Val KernelAnalyzer::binary(const clang::BinaryOperator* b) {
  const auto op = b->getOpcode();
  const clang::Expr* lhs = b->getLHS();
  const clang::Expr* rhs = b->getRHS();
  if (op == clang::BO_Assign) {
    const Val r = rv(rhs);
    const LV l = lv(lhs);
    assign(l, r);
    return r;
  }
  if (b->isCompoundAssignmentOp()) {
    const LV l = lv(lhs);
    const Val r = rv(rhs);
    const Val old = load(l);
    const auto bop = clang::BinaryOperator::getOpForCompoundAssignment(op);
    const auto* ca = llvm::dyn_cast<clang::CompoundAssignOperator>(b);
    const clang::QualType ct = ca ? ca->getComputationResultType() : b->getType();
    const bool bitwise = bop == clang::BO_Shl || bop == clang::BO_Shr || bop == clang::BO_And || bop == clang::BO_Or ||
                         bop == clang::BO_Xor;
    if (!(lhs->getType()->isPointerType())) count_arith(ct, bitwise);
    const Val nv = arith(bop, old, r, lhs->getType(), rhs->getType(), ct);
    assign(l, nv);
    return nv;
  }
  if (op == clang::BO_Comma) {
    rv(lhs);
    return rv(rhs);
  }
  const Val a = rv(lhs);
  if (b->isLogicalOp()) ++fp_cond_;  // the right of && and || may not be evaluated
  const Val c = rv(rhs);
  if (b->isLogicalOp()) --fp_cond_;
  if (b->isComparisonOp() || b->isLogicalOp()) return opaque(deps2(a, c));
  switch (op) {
    case clang::BO_Add:
    case clang::BO_Sub:
    case clang::BO_Mul:
    case clang::BO_Div:
    case clang::BO_Rem:
      count_arith(b->getType(), false);
      break;
    case clang::BO_Shl:
    case clang::BO_Shr:
    case clang::BO_And:
    case clang::BO_Or:
    case clang::BO_Xor:
      count_arith(b->getType(), true);
      break;
    default:
      break;
  }
  return arith(op, a, c, lhs->getType(), rhs->getType(), b->getType());
}

}  // namespace dop::features::detail
