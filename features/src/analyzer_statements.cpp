// Statements in order: declarations, branches (each path evaluated, the environments merged), returns, and the
// dispatch of loops to analyzer_loops.cpp.
#include "analyzer.hpp"

namespace dop::features::detail {

void KernelAnalyzer::stmt(const clang::Stmt* s) {
  // Statements inside dry-evaluated expressions (GNU statement expressions in a condition) are not analysed.
  if (!s || dry_ || !step()) return;
  DepthGuard g(depth_);
  if (too_deep()) return;
  if (const auto* e = llvm::dyn_cast<clang::Expr>(s)) {
    rv(e);
    return;
  }
  switch (s->getStmtClass()) {
    case clang::Stmt::CompoundStmtClass:
      for (const clang::Stmt* c : llvm::cast<clang::CompoundStmt>(s)->body()) stmt(c);
      return;
    case clang::Stmt::DeclStmtClass:
      for (const clang::Decl* d : llvm::cast<clang::DeclStmt>(s)->decls())
        if (const auto* vd = llvm::dyn_cast<clang::VarDecl>(d)) declare(vd);
      return;
    case clang::Stmt::IfStmtClass:
      if_stmt(llvm::cast<clang::IfStmt>(s));
      return;
    case clang::Stmt::SwitchStmtClass: {
      const auto* ss = llvm::cast<clang::SwitchStmt>(s);
      if (ss->getInit()) stmt(ss->getInit());
      if (const auto* cv = ss->getConditionVariable()) declare(cv);
      const Val c = rv(ss->getCond());
      count_branch(c);
      Env before = env_;
      switch_entry_.emplace_back(&before, loop_stack_.size());
      ++fp_cond_;
      stmt(ss->getBody());
      --fp_cond_;
      switch_entry_.pop_back();
      merge_env(before, deps(c));
      return;
    }
    case clang::Stmt::ForStmtClass: {
      const auto* fs = llvm::cast<clang::ForStmt>(s);
      if (fs->getInit()) stmt(fs->getInit());
      if (const auto* cv = fs->getConditionVariable()) declare(cv);
      loop(s, fs->getCond(), fs->getInc(), fs->getBody(), false);
      return;
    }
    case clang::Stmt::WhileStmtClass: {
      const auto* ws = llvm::cast<clang::WhileStmt>(s);
      if (const auto* cv = ws->getConditionVariable()) declare(cv);
      loop(s, ws->getCond(), nullptr, ws->getBody(), false);
      return;
    }
    case clang::Stmt::DoStmtClass: {
      const auto* ds = llvm::cast<clang::DoStmt>(s);
      loop(s, ds->getCond(), nullptr, ds->getBody(), true);
      return;
    }
    case clang::Stmt::ReturnStmtClass: {
      const auto* r = llvm::cast<clang::ReturnStmt>(s);
      if (r->getRetValue()) {
        const Val v = rv(r->getRetValue());
        if (!frames_.empty()) frames_.back()->returns.push_back(v);
      }
      // What follows may not run (for a helper's return too: the kernel's later accesses are marked, safely).
      if (fp_cond_ > 0 || fp_guard_depth_ > 0) fp_exited_ = true;
      return;
    }
    case clang::Stmt::CaseStmtClass:
      check_case(s);
      stmt(llvm::cast<clang::CaseStmt>(s)->getSubStmt());
      return;
    case clang::Stmt::DefaultStmtClass:
      check_case(s);
      stmt(llvm::cast<clang::DefaultStmt>(s)->getSubStmt());
      return;
    case clang::Stmt::LabelStmtClass:
      stmt(llvm::cast<clang::LabelStmt>(s)->getSubStmt());
      return;
    case clang::Stmt::AttributedStmtClass:
      stmt(llvm::cast<clang::AttributedStmt>(s)->getSubStmt());
      return;
    case clang::Stmt::GotoStmtClass:
    case clang::Stmt::IndirectGotoStmtClass:
      fp_poison(s->getBeginLoc(), "goto (control flow the analysis does not follow)");
      return;
    case clang::Stmt::NullStmtClass:
    case clang::Stmt::BreakStmtClass:
    case clang::Stmt::ContinueStmtClass:
      return;
    default:
      for (const clang::Stmt* c : s->children()) stmt(c);
      return;
  }
}

namespace {

bool bare_return(const clang::Stmt* s) {
  if (const auto* c = llvm::dyn_cast_or_null<clang::CompoundStmt>(s))
    return c->size() == 1 && bare_return(c->body_front());
  const auto* r = llvm::dyn_cast_or_null<clang::ReturnStmt>(s);
  return r && !r->getRetValue();
}

}  // namespace

void KernelAnalyzer::if_stmt(const clang::IfStmt* is) {
  if (is->getInit()) stmt(is->getInit());
  if (const auto* cv = is->getConditionVariable()) declare(cv);
  const Val c = rv(is->getCond());
  count_branch(c);
  // Footprint: the then-branch of a simple guard runs its accesses for every work-item within the guard; other
  // branches are `may`. `if (i >= n) return;` in the kernel's own body guards everything after it.
  std::vector<FpGuard> guards;
  const bool guarded = simple_guards(is->getCond(), false, guards);
  std::vector<FpGuard> exit_guards;
  const bool exit_guard = !is->getElse() && bare_return(is->getThen()) && frames_.size() == 1 && loop_stack_.empty() &&
                          fp_cond_ == 0 && fp_guard_depth_ == 0 && simple_guards(is->getCond(), true, exit_guards);
  const size_t in_force = fp_guards_.size();
  const bool exited = fp_exited_;
  const Env before = env_;
  if (guarded) {
    fp_guards_.insert(fp_guards_.end(), guards.begin(), guards.end());
    ++fp_guard_depth_;
  } else {
    ++fp_cond_;
  }
  stmt(is->getThen());
  if (guarded) {
    fp_guards_.resize(in_force);
    --fp_guard_depth_;
  } else {
    --fp_cond_;
  }
  Env then_env = std::move(env_);
  env_ = before;
  ++fp_cond_;
  if (is->getElse()) stmt(is->getElse());
  --fp_cond_;
  merge_env(then_env, deps(c));
  if (exit_guard) {
    fp_exited_ = exited;  // the return leaves exactly the work-items outside the guards
    fp_guards_.insert(fp_guards_.end(), exit_guards.begin(), exit_guards.end());
  }
}

bool KernelAnalyzer::simple_guards(const clang::Expr* cond, bool negated, std::vector<FpGuard>& out) {
  const auto* b = llvm::dyn_cast_or_null<clang::BinaryOperator>(strip(cond));
  if (!b) return false;
  const auto op = b->getOpcode();
  if (op == (negated ? clang::BO_LOr : clang::BO_LAnd))
    return simple_guards(b->getLHS(), negated, out) && simple_guards(b->getRHS(), negated, out);
  if (!b->isComparisonOp() || op == clang::BO_EQ || op == clang::BO_NE) return false;
  const bool saved = dry_;
  dry_ = true;
  const Val lv = rv(b->getLHS());
  const Val rv_ = rv(b->getRHS());
  dry_ = saved;
  // The id on the left: x < E, x <= E, x > E, x >= E (the id on the right: flipped); negated, the opposite holds.
  auto id_atom = [&](const Val& v) -> std::optional<AtomId> {
    if (v.ptr || v.p.bad() || v.p.terms().size() != 1) return std::nullopt;
    const auto& [m, coef] = *v.p.terms().begin();
    if (coef != 1 || m.size() != 1) return std::nullopt;
    const auto& at = atoms_[m.front()];
    if (at.kind != AtomKind::work_item || !starts_with(at.name, "get_global_id(")) return std::nullopt;
    return m.front();
  };
  auto o = op;
  auto x = id_atom(lv);
  const Val* e = &rv_;
  if (!x) {
    x = id_atom(rv_);
    e = &lv;
    o = o == clang::BO_LT   ? clang::BO_GT
        : o == clang::BO_GT ? clang::BO_LT
        : o == clang::BO_LE ? clang::BO_GE
                            : clang::BO_LE;
  }
  if (!x || e->ptr || e->p.bad() || !launch_uniform(e->p)) return false;
  if (negated)
    o = o == clang::BO_LT   ? clang::BO_GE
        : o == clang::BO_GT ? clang::BO_LE
        : o == clang::BO_LE ? clang::BO_GT
                            : clang::BO_LT;
  const bool upper = o == clang::BO_LT || o == clang::BO_LE;
  const int64_t step = o == clang::BO_LT ? -1 : o == clang::BO_GT ? 1 : 0;  // x < E: x <= E - 1; x > E: x >= E + 1
  const Poly bound = e->p + Poly::constant(step);
  if (bound.bad()) return false;
  out.push_back(FpGuard{*x, upper, bound});
  return true;
}

void KernelAnalyzer::declare(const clang::VarDecl* vd) {
  const clang::QualType t = vd->getType();
  const Space sp = space_of(t.getAddressSpace());
  const clang::Expr* init = vd->getInit();
  if (t->isArrayType() || sp == Space::local || sp == Space::global || sp == Space::constant) {
    object_of(vd);
    if (init) generic(init);  // initialisers' expressions count; the initialisation itself is not a store
    return;
  }
  if (init) {
    if (llvm::isa<clang::InitListExpr>(init->IgnoreParenImpCasts()) && !t->isScalarType()) {
      set_whole(vd, generic(init->IgnoreParenImpCasts()));
    } else {
      set_whole(vd, rv(init));
    }
  } else {
    set_whole(vd, opaque(Deps{}));
  }
}

void KernelAnalyzer::merge_env(const Env& other, const Deps& cond) {
  for (const auto& [k, v] : other) {
    auto it = env_.find(k);
    if (it == env_.end()) {
      env_.emplace(k, v);
    } else if (!(it->second.p == v.p && it->second.bases == v.bases && it->second.ptr == v.ptr)) {
      it->second = merge(it->second, v, cond);
    }
  }
}

}  // namespace dop::features::detail
