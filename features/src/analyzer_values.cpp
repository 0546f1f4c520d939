// Values and the environment: merged and sized values, memory objects, work-item and launch atoms, and the values of
// variables (kernel arguments and program-scope constants as named symbols).
#include <algorithm>
#include <iterator>

#include "analyzer.hpp"

namespace dop::features::detail {

Val KernelAnalyzer::merge(const Val& a, const Val& b, const Deps& cond) {
  if (a.p == b.p && a.bases == b.bases && a.ptr == b.ptr) return a;
  Deps d = deps2(a, b);
  d.merge(cond);
  Val v = opaque(d);
  v.ptr = a.ptr || b.ptr;
  std::set_union(a.bases.begin(), a.bases.end(), b.bases.begin(), b.bases.end(), std::back_inserter(v.bases));
  return v;
}

int64_t KernelAnalyzer::size_of(clang::QualType t) const {
  if (t.isNull() || t->isDependentType() || t->containsErrors() || t->isIncompleteType() || t->isFunctionType() ||
      t->isSizelessType())
    return 0;
  if (const auto* rt = t->getAs<clang::RecordType>()) {
    const auto* rd = rt->getDecl();
    if (!rd || rd->isInvalidDecl() || !rd->isCompleteDefinition()) return 0;
  }
  if (const auto* at = llvm::dyn_cast<clang::ArrayType>(t.getCanonicalType().getTypePtr())) {
    if (!llvm::isa<clang::ConstantArrayType>(at)) return 0;
    if (size_of(at->getElementType()) == 0) return 0;
  }
  return ctx_.getTypeSizeInChars(t).getQuantity();
}

int64_t KernelAnalyzer::pointee_size(clang::QualType ptr_type) const {
  if (ptr_type.isNull()) return 1;
  clang::QualType pt;
  if (const auto* p = ptr_type->getAs<clang::PointerType>())
    pt = p->getPointeeType();
  else if (const auto* a = ptr_type->getAsArrayTypeUnsafe())
    pt = a->getElementType();
  const int64_t s = size_of(pt);
  return s > 0 ? s : 1;
}

int KernelAnalyzer::object_of(const clang::VarDecl* vd) {
  auto it = var_objects_.find(vd);
  if (it != var_objects_.end()) return it->second;
  MemObj o;
  o.space = space_of(vd->getType().getAddressSpace());
  if (o.space == Space::unknown) o.space = Space::priv;
  objects_.push_back(o);
  const int id = int(objects_.size() - 1);
  var_objects_.emplace(vd, id);
  object_vars_.emplace(id, vd);
  return id;
}

AtomId KernelAnalyzer::work_item_atom(const char* fn, unsigned dim) {
  const std::string name = std::string(fn) + "(" + std::to_string(dim) + ")";
  Deps d;
  d.wi = uint8_t(1u << dim);
  return atoms_.intern(AtomKind::work_item, name, name, d, false);
}

AtomId KernelAnalyzer::launch_atom(const std::string& name, bool renderable) {
  return atoms_.intern(AtomKind::launch, name, name, Deps{}, renderable);
}

void KernelAnalyzer::set_whole(const clang::Decl* d, const Val& v) {
  auto it = env_.lower_bound(EnvKey{d, INT32_MIN});
  while (it != env_.end() && it->first.d == d) it = env_.erase(it);
  env_[EnvKey{d, -1}] = v;
}

Val KernelAnalyzer::get(const EnvKey& k) {
  auto it = env_.find(k);
  if (it != env_.end()) return it->second;
  Val v;
  const auto* vd = llvm::dyn_cast<clang::VarDecl>(k.d);
  if (k.sub >= 0) {
    // A component of a struct/vector variable: a kernel struct argument's field is a launch-time symbol; otherwise
    // derive it from the whole variable's value.
    const auto* pd = llvm::dyn_cast<clang::ParmVarDecl>(k.d);
    auto whole = env_.find(EnvKey{k.d, -1});
    if (pd && pd->getDeclContext() == kernel_ && whole == env_.end()) {
      std::string name = pd->getName().str() + "." + component_name(pd->getType(), k.sub);
      v = Val{Poly::atom(atoms_.intern(AtomKind::param, "param:" + name, name, Deps{}, true)), {}, false};
      if (k.sub < 1000)  // a struct field (not a vector component): usable in the footprint if an integer
        if (const auto* rt = pd->getType()->getAs<clang::RecordType>())
          for (const auto* f : rt->getDecl()->fields())
            if (int(f->getFieldIndex()) == k.sub && f->getType()->isIntegerType())
              int_params_.insert(v.p.terms().begin()->first[0]);
    } else {
      const Val w = get(EnvKey{k.d, -1});
      v = opaque(deps(w));
      v.ptr = w.ptr;
      v.bases = w.bases;
    }
  } else if (const auto* pd = llvm::dyn_cast_or_null<clang::ParmVarDecl>(vd); pd && pd->getDeclContext() == kernel_) {
    const std::string name = pd->getName().str();
    v = Val{Poly::atom(atoms_.intern(AtomKind::param, "param:" + name, name, Deps{}, true)), {}, false};
    if (pd->getType()->isIntegerType()) int_params_.insert(v.p.terms().begin()->first[0]);
  } else if (vd && vd->hasGlobalStorage() && !vd->isLocalVarDecl()) {
    // Program-scope constant: its value if it has a constant integer initializer, else a named symbol.
    clang::Expr::EvalResult r;
    const clang::Expr* init = vd->getInit();
    if (init && !init->isValueDependent() && !init->containsErrors() && vd->getType()->isIntegerType() &&
        init->EvaluateAsInt(r, ctx_) && r.Val.isInt() && r.Val.getInt().getMinSignedBits() <= 63) {
      v = constant(r.Val.getInt().getSExtValue());
    } else {
      const std::string name = vd->getName().str();
      v = Val{Poly::atom(atoms_.intern(AtomKind::symbol, "global:" + name, name, Deps{}, true)), {}, false};
    }
  } else {
    v = opaque(Deps{});  // read before written
  }
  env_[k] = v;
  return v;
}

std::string KernelAnalyzer::component_name(clang::QualType t, int sub) const {
  if (sub >= 1000) return "s" + std::to_string(sub - 1000);
  if (const auto* rt = t->getAs<clang::RecordType>()) {
    for (const auto* f : rt->getDecl()->fields())
      if (int(f->getFieldIndex()) == sub) return f->getName().str();
  }
  return "s" + std::to_string(sub);
}

}  // namespace dop::features::detail
