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
    case clang::Stmt::IfStmtClass: {
      const auto* is = llvm::cast<clang::IfStmt>(s);
      if (is->getInit()) stmt(is->getInit());
      if (const auto* cv = is->getConditionVariable()) declare(cv);
      const Val c = rv(is->getCond());
      count_branch(c);
      const Env before = env_;
      stmt(is->getThen());
      Env then_env = std::move(env_);
      env_ = before;
      if (is->getElse()) stmt(is->getElse());
      merge_env(then_env, deps(c));
      return;
    }
    case clang::Stmt::SwitchStmtClass: {
      const auto* ss = llvm::cast<clang::SwitchStmt>(s);
      if (ss->getInit()) stmt(ss->getInit());
      if (const auto* cv = ss->getConditionVariable()) declare(cv);
      const Val c = rv(ss->getCond());
      count_branch(c);
      Env before = env_;
      switch_entry_.emplace_back(&before, loop_stack_.size());
      stmt(ss->getBody());
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
