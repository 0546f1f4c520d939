// Memory: lvalues (variables or addresses), loads and stores, and the classification of each access (constant,
// continuous, stride, random) and of each argument (read, write).
#include <clang/AST/RecordLayout.h>

#include <algorithm>

#include "analyzer.hpp"

namespace dop::features::detail {

Pattern KernelAnalyzer::classify(const Val& addr, int64_t size) const {
  if (addr.p.bad()) return Pattern::random;
  const bool in_loop = !loop_stack_.empty();
  const int loop = in_loop ? loop_stack_.back() : -1;
  const AtomId iter = in_loop ? loops_[size_t(loop)].iter : 0;
  auto varies = [&](AtomId a) { return in_loop ? atoms_[a].deps.has_loop(loop) : (atoms_[a].deps.wi & 1u) != 0; };
  auto primary = [&](AtomId a) {
    if (in_loop) return a == iter;
    const auto& at = atoms_[a];
    return at.kind == AtomKind::work_item && (at.name == "get_global_id(0)" || at.name == "get_local_id(0)");
  };
  Poly stride;
  for (const auto& [m, c] : addr.p.terms()) {
    int n_var = 0;
    size_t var_pos = 0;
    for (size_t i = 0; i < m.size(); ++i)
      if (varies(m[i])) {
        ++n_var;
        var_pos = i;
      }
    if (n_var == 0) continue;
    if (n_var > 1 || !primary(m[var_pos])) return Pattern::random;
    Poly term = Poly::constant(c);
    for (size_t i = 0; i < m.size(); ++i)
      if (i != var_pos) term = term * Poly::atom(m[i]);
    stride = stride + term;
  }
  if (stride.bad()) return Pattern::stride;
  if (stride.is_zero()) return Pattern::constant;
  if (stride.is_constant()) {
    const int64_t s = stride.constant_value();
    return (size > 0 && (s == size || s == -size)) ? Pattern::continuous : Pattern::stride;
  }
  return Pattern::stride;  // a launch-time constant stride (row length, ...)
}

Space KernelAnalyzer::resolve_space(Space s, const Val& addr) const {
  if (s != Space::unknown) return s;
  for (int b : addr.bases)
    if (b >= 0 && size_t(b) < objects_.size()) return objects_[size_t(b)].space;
  return Space::global;
}

void KernelAnalyzer::record(const LV& l, Access kind, const Pattern* forced) {
  if (dry_ || l.kind != LV::Kind::mem) return;
  const Space space = resolve_space(l.space, l.addr);
  const unsigned lanes = lanes_of(l.type);
  if (lanes > 1) out_.vector_width_max = std::max<int64_t>(out_.vector_width_max, lanes);
  switch (space) {
    case Space::global:
    case Space::constant:
    case Space::unknown: {
      const Pattern p = forced ? *forced : classify(l.addr, l.size);
      switch (p) {
        case Pattern::constant:
          ++out_.mem_constant;
          break;
        case Pattern::continuous:
          ++out_.mem_continuous;
          break;
        case Pattern::stride:
          ++out_.mem_stride;
          break;
        case Pattern::random:
          ++out_.mem_random;
          break;
      }
      if (kind == Access::load) ++out_.mem_global_loads;
      if (kind == Access::store) ++out_.mem_global_stores;
      if (kind == Access::atomic) ++out_.mem_global_atomics;
      if (space == Space::constant) ++out_.mem_constant_space;
      bytes_[loop_stack_] += l.size > 0 ? l.size : 0;
      break;
    }
    case Space::local:
      if (kind == Access::load) ++out_.mem_local_loads;
      if (kind == Access::store) ++out_.mem_local_stores;
      if (kind == Access::atomic) ++out_.mem_local_atomics;
      break;
    case Space::priv:
      if (kind == Access::load) ++out_.mem_private_loads;
      if (kind == Access::store || kind == Access::atomic) ++out_.mem_private_stores;
      break;
  }
  for (int b : l.addr.bases) {
    if (b < 0 || size_t(b) >= objects_.size() || objects_[size_t(b)].arg < 0) continue;
    auto& a = out_.args[size_t(objects_[size_t(b)].arg)];
    if (kind != Access::store) a.read = true;
    if (kind != Access::load) a.write = true;
  }
  fp_record(l, space, kind);
}

void KernelAnalyzer::escape_pointer(const Val& v, clang::SourceLocation loc) {
  if (dry_ || !v.ptr) return;
  fp_escape(v, loc, "pointer passed to a function that is not analysed");
  for (int b : v.bases) {
    if (b < 0 || size_t(b) >= objects_.size() || objects_[size_t(b)].arg < 0) continue;
    auto& a = out_.args[size_t(objects_[size_t(b)].arg)];
    a.read = a.write = true;
  }
}

Val KernelAnalyzer::load(const LV& l) {
  switch (l.kind) {
    case LV::Kind::var:
      return get(l.key);
    case LV::Kind::mem: {
      record(l, Access::load);
      Val v = opaque(deps(l.addr), /*loaded=*/true);
      v.ptr = !l.type.isNull() && l.type->isPointerType();
      return v;
    }
    case LV::Kind::none:
      break;
  }
  Val v = opaque(l.deps);
  v.ptr = !l.type.isNull() && l.type->isPointerType();
  return v;
}

void KernelAnalyzer::assign(const LV& l, const Val& v) {
  if (l.kind == LV::Kind::mem) {
    record(l, Access::store);
    forget_pointees(l.addr);
    return;
  }
  if (l.kind != LV::Kind::var || dry_) return;
  if (l.key.sub < 0) {
    set_whole(l.key.d, v);
  } else {
    // A component changed: the whole variable's value is no longer known exactly.
    const Val whole = get(EnvKey{l.key.d, -1});
    Deps d = deps2(whole, v);
    Val w = opaque(d);
    w.ptr = whole.ptr;
    w.bases = whole.bases;
    env_[EnvKey{l.key.d, -1}] = w;
    env_[l.key] = v;
  }
}

Val KernelAnalyzer::address_of(const LV& l) {
  if (l.kind == LV::Kind::mem) {
    Val v = l.addr;
    v.ptr = true;
    return v;
  }
  if (l.kind == LV::Kind::var) {
    const auto* vd = llvm::dyn_cast<clang::VarDecl>(l.key.d);
    Val v = constant(0);
    v.ptr = true;
    if (vd) v.bases = {object_of(vd)};
    return v;
  }
  Val v = opaque(l.deps);
  v.ptr = true;
  return v;
}

LV KernelAnalyzer::lv(const clang::Expr* e) {
  LV l;
  if (!e || !step()) return l;
  DepthGuard g(depth_);
  if (too_deep()) return l;
  e = e->IgnoreParens();
  l.type = e->getType();
  l.loc = e->getBeginLoc();
  if (const auto* dr = llvm::dyn_cast<clang::DeclRefExpr>(e)) {
    const auto* vd = llvm::dyn_cast<clang::VarDecl>(dr->getDecl());
    if (!vd) return l;
    const clang::QualType t = vd->getType();
    const Space sp = space_of(t.getAddressSpace());
    bool in_memory = t->isArrayType() || sp == Space::local;
    if (!in_memory && (sp == Space::global || sp == Space::constant) && vd->hasGlobalStorage()) {
      // Program-scope data lives in memory, except a scalar constant with an initializer: a compile-time value.
      const bool folded = t->isIntegerType() && vd->getInit() && (sp == Space::constant || t.isConstQualified());
      in_memory = !folded;
    }
    if (in_memory) {
      l.kind = LV::Kind::mem;
      l.addr = Val{Poly(), {object_of(vd)}, true};
      l.space = sp == Space::unknown ? Space::priv : sp;
      l.size = size_of(t);
      return l;
    }
    l.kind = LV::Kind::var;
    l.key = EnvKey{vd, -1};
    return l;
  }
  if (const auto* as = llvm::dyn_cast<clang::ArraySubscriptExpr>(e)) {
    const Val base = rv(as->getBase());
    const Val idx = rv(as->getIdx());
    const int64_t esize = size_of(e->getType());
    l.kind = LV::Kind::mem;
    l.addr = checked(Val{base.p + idx.p * Poly::constant(esize > 0 ? esize : 1), base.bases, true}, deps2(base, idx));
    l.space = space_of(e->getType().getAddressSpace());
    l.size = esize;
    return l;
  }
  if (const auto* u = llvm::dyn_cast<clang::UnaryOperator>(e); u && u->getOpcode() == clang::UO_Deref) {
    const Val p = rv(u->getSubExpr());
    l.kind = LV::Kind::mem;
    l.addr = p;
    l.addr.ptr = true;
    l.space = space_of(e->getType().getAddressSpace());
    l.size = size_of(e->getType());
    return l;
  }
  if (const auto* m = llvm::dyn_cast<clang::MemberExpr>(e)) {
    const auto* fd = llvm::dyn_cast<clang::FieldDecl>(m->getMemberDecl());
    int64_t offset = 0;
    if (fd && !fd->isInvalidDecl() && fd->getParent() && !fd->getParent()->isInvalidDecl() &&
        fd->getParent()->isCompleteDefinition())
      offset = int64_t(ctx_.getFieldOffset(fd) / 8);
    LV base;
    if (m->isArrow()) {
      const Val p = rv(m->getBase());
      base.kind = LV::Kind::mem;
      base.addr = p;
      base.space = space_of(e->getType().getAddressSpace());
    } else {
      base = lv(m->getBase());
    }
    if (base.kind == LV::Kind::mem) {
      l.kind = LV::Kind::mem;
      l.addr = checked(Val{base.addr.p + Poly::constant(offset), base.addr.bases, true}, deps(base.addr));
      l.space = space_of(e->getType().getAddressSpace());
      if (l.space == Space::unknown || l.space == Space::priv) l.space = base.space;
      l.size = size_of(e->getType());
      return l;
    }
    if (base.kind == LV::Kind::var && base.key.sub < 0 && fd) {
      l.kind = LV::Kind::var;
      l.key = EnvKey{base.key.d, int(fd->getFieldIndex())};
      return l;
    }
    if (base.kind == LV::Kind::var) {
      l.kind = LV::Kind::var;  // nested member of a variable: tracked as the whole variable
      l.key = EnvKey{base.key.d, -1};
      return l;
    }
    l.deps = base.deps;
    return l;
  }
  if (const auto* v = llvm::dyn_cast<clang::ExtVectorElementExpr>(e)) {
    if (!v->getBase()->isGLValue() || v->isArrow()) {
      l.deps = deps(rv(v->getBase()));
      return l;
    }
    LV base = lv(v->getBase());
    llvm::SmallVector<uint32_t, 16> idx;
    v->getEncodedElementAccess(idx);
    if (base.kind == LV::Kind::mem) {
      const int64_t esize = size_of(e->getType()) / std::max<int64_t>(1, int64_t(lanes_of(e->getType())));
      bool consecutive = !idx.empty();
      for (size_t i = 1; i < idx.size(); ++i) consecutive = consecutive && idx[i] == idx[i - 1] + 1;
      l.kind = LV::Kind::mem;
      l.addr = base.addr;
      if (consecutive && esize > 0)
        l.addr =
            checked(Val{base.addr.p + Poly::constant(int64_t(idx[0]) * esize), base.addr.bases, true}, deps(base.addr));
      l.space = base.space;
      l.size = consecutive ? size_of(e->getType()) : base.size;
      return l;
    }
    if (base.kind == LV::Kind::var && base.key.sub < 0 && idx.size() == 1) {
      l.kind = LV::Kind::var;
      l.key = EnvKey{base.key.d, 1000 + int(idx[0])};
      return l;
    }
    if (base.kind == LV::Kind::var) {
      l.kind = LV::Kind::var;
      l.key = EnvKey{base.key.d, -1};
      return l;
    }
    l.deps = base.deps;
    return l;
  }
  if (const auto* ce = llvm::dyn_cast<clang::CastExpr>(e)) {
    if (ce->getCastKind() == clang::CK_NoOp || ce->getCastKind() == clang::CK_LValueBitCast ||
        ce->getCastKind() == clang::CK_AddressSpaceConversion) {
      LV inner = lv(ce->getSubExpr());
      inner.type = e->getType();
      return inner;
    }
  }
  // Anything else (compound literals, calls, recovery expressions): evaluate for its counts.
  l.deps = deps(generic(e));
  return l;
}

void KernelAnalyzer::forget_pointees(const Val& addr) {
  if (dry_) return;
  for (int b : addr.bases) {
    auto it = object_vars_.find(b);
    if (it == object_vars_.end()) continue;
    const Val old = get(EnvKey{it->second, -1});
    Val v = opaque(deps(old));
    v.ptr = old.ptr;
    v.bases = old.bases;
    set_whole(it->second, v);
  }
}

}  // namespace dop::features::detail
