// The pre-scan of a loop: which variables it assigns and how (induction form, conditions), and the work-item
// dimensions the variables it changes may depend on.
#include "analyzer.hpp"

namespace dop::features::detail {

void KernelAnalyzer::scan(const clang::Stmt* s, bool conditional, LoopScan& sc, int depth) {
  if (!s) return;
  if (depth > kMaxDepth) {
    scan_overflow_ = true;
    return;
  }
  auto record_update = [&](const clang::Expr* target, bool ind_form, const clang::Expr* step, bool negative,
                           const clang::Expr* source) {
    const clang::VarDecl* vd = direct_var(target);
    const bool whole = vd != nullptr;
    if (!vd) vd = root_var(target);
    if (!vd) return;
    Update& u = sc.updates[EnvKey{vd, -1}];
    ++u.count;
    u.conditional = u.conditional || conditional;
    u.induction_form = whole && ind_form;
    u.step = step;
    u.negative = negative;
    if (source) u.sources.push_back(source);
    u.sources.insert(u.sources.end(), scan_conds_.begin(), scan_conds_.end());
  };
  auto under = [&](const clang::Expr* cond, const clang::Stmt* sub) {
    if (cond) scan_conds_.push_back(cond);
    scan(sub, true, sc, depth + 1);
    if (cond) scan_conds_.pop_back();
  };
  if (const auto* ds = llvm::dyn_cast<clang::DeclStmt>(s)) {
    for (const clang::Decl* d : ds->decls()) sc.inner.insert(d);
  } else if (const auto* b = llvm::dyn_cast<clang::BinaryOperator>(s)) {
    const auto op = b->getOpcode();
    if (op == clang::BO_Assign) {
      // v = v + e, v = e + v, v = v - e
      const clang::VarDecl* v = direct_var(b->getLHS());
      const auto* r = llvm::dyn_cast<clang::BinaryOperator>(strip(b->getRHS()));
      bool form = false;
      const clang::Expr* step = nullptr;
      bool neg = false;
      if (v && r && (r->getOpcode() == clang::BO_Add || r->getOpcode() == clang::BO_Sub)) {
        if (direct_var(r->getLHS()) == v && !refers_to(r->getRHS(), v)) {
          form = true;
          step = r->getRHS();
          neg = r->getOpcode() == clang::BO_Sub;
        } else if (r->getOpcode() == clang::BO_Add && direct_var(r->getRHS()) == v && !refers_to(r->getLHS(), v)) {
          form = true;
          step = r->getLHS();
        }
      }
      record_update(b->getLHS(), form, step, neg, b->getRHS());
    } else if (op == clang::BO_AddAssign || op == clang::BO_SubAssign) {
      record_update(b->getLHS(), !refers_to(b->getRHS(), direct_var(b->getLHS())), b->getRHS(),
                    op == clang::BO_SubAssign, b->getRHS());
    } else if (b->isAssignmentOp()) {
      record_update(b->getLHS(), false, nullptr, false, b->getRHS());
    } else if (op == clang::BO_LAnd || op == clang::BO_LOr) {
      scan(b->getLHS(), conditional, sc, depth + 1);
      under(b->getLHS(), b->getRHS());
      return;
    }
  } else if (const auto* u = llvm::dyn_cast<clang::UnaryOperator>(s)) {
    if (u->isIncrementDecrementOp()) {
      record_update(u->getSubExpr(), true, nullptr, u->isDecrementOp(), nullptr);
    } else if (u->getOpcode() == clang::UO_AddrOf) {
      if (const auto* vd = root_var(u->getSubExpr())) {
        Update& up = sc.updates[EnvKey{vd, -1}];
        up.escaped = true;
        ++up.count;
      }
    }
  } else if (const auto* is = llvm::dyn_cast<clang::IfStmt>(s)) {
    scan(is->getInit(), conditional, sc, depth + 1);
    scan(is->getCond(), conditional, sc, depth + 1);
    under(is->getCond(), is->getThen());
    under(is->getCond(), is->getElse());
    return;
  } else if (const auto* co = llvm::dyn_cast<clang::ConditionalOperator>(s)) {
    scan(co->getCond(), conditional, sc, depth + 1);
    under(co->getCond(), co->getTrueExpr());
    under(co->getCond(), co->getFalseExpr());
    return;
  } else if (const auto* ss = llvm::dyn_cast<clang::SwitchStmt>(s)) {
    scan(ss->getInit(), conditional, sc, depth + 1);
    scan(ss->getCond(), conditional, sc, depth + 1);
    under(ss->getCond(), ss->getBody());
    return;
  } else if (const auto* fs = llvm::dyn_cast<clang::ForStmt>(s)) {
    scan(fs->getInit(), conditional, sc, depth + 1);
    scan(fs->getCond(), true, sc, depth + 1);
    under(fs->getCond(), fs->getBody());
    under(fs->getCond(), fs->getInc());
    return;
  } else if (const auto* ws = llvm::dyn_cast<clang::WhileStmt>(s)) {
    scan(ws->getCond(), true, sc, depth + 1);
    under(ws->getCond(), ws->getBody());
    return;
  } else if (const auto* dos = llvm::dyn_cast<clang::DoStmt>(s)) {
    scan(dos->getCond(), true, sc, depth + 1);
    under(dos->getCond(), dos->getBody());
    return;
  }
  for (const clang::Stmt* c : s->children()) scan(c, conditional, sc, depth + 1);
}

uint8_t KernelAnalyzer::syntactic_wi(const clang::Stmt* s, const LoopScan& sc, const std::map<EnvKey, uint8_t>& wi,
                                     int depth) {
  if (!s) return 0;
  if (depth > kMaxDepth) return 7;
  uint8_t r = 0;
  if (const auto* dr = llvm::dyn_cast<clang::DeclRefExpr>(s)) {
    const EnvKey k{dr->getDecl(), -1};
    auto it = wi.find(k);
    if (it != wi.end()) {
      r |= it->second;
    } else if (llvm::isa<clang::VarDecl>(dr->getDecl()) && !sc.updates.count(k)) {
      auto e = env_.find(k);
      if (e != env_.end()) r |= deps(e->second).wi;
    }
  } else if (const auto* call = llvm::dyn_cast<clang::CallExpr>(s)) {
    const std::string n = callee_name(call->getDirectCallee());
    if (n == "get_global_id" || n == "get_local_id") {
      const auto* lit = call->getNumArgs() ? llvm::dyn_cast<clang::IntegerLiteral>(strip(call->getArg(0))) : nullptr;
      const uint64_t d = lit ? lit->getValue().getLimitedValue() : 3;
      r |= d <= 2 ? uint8_t(1u << d) : uint8_t(7);
    } else if (n == "get_global_linear_id" || n == "get_local_linear_id") {
      r |= 7;
    }
  }
  for (const clang::Stmt* c : s->children()) r |= syntactic_wi(c, sc, wi, depth + 1);
  return r;
}

std::map<EnvKey, uint8_t> KernelAnalyzer::loop_variant_wi(const LoopScan& sc) {
  std::map<EnvKey, uint8_t> wi;
  for (const auto& [key, u] : sc.updates) {
    auto it = env_.find(key);
    wi[key] = u.escaped ? uint8_t(7) : (it != env_.end() ? deps(it->second).wi : uint8_t(0));
  }
  for (int round = 0; round < 24; ++round) {
    bool changed = false;
    for (const auto& [key, u] : sc.updates) {
      uint8_t w = wi[key];
      for (const clang::Expr* src : u.sources) w |= syntactic_wi(src, sc, wi, 0);
      if (w != wi[key]) {
        wi[key] = w;
        changed = true;
      }
    }
    if (!changed) return wi;
  }
  for (auto& [key, w] : wi) w = 7;  // did not settle: assume the worst
  return wi;
}

bool KernelAnalyzer::refers_to(const clang::Stmt* s, const clang::VarDecl* v, int depth) {
  if (!s || !v || depth > kMaxDepth) return s != nullptr && v != nullptr;
  if (const auto* dr = llvm::dyn_cast<clang::DeclRefExpr>(s))
    if (dr->getDecl() == v) return true;
  for (const clang::Stmt* c : s->children())
    if (refers_to(c, v, depth + 1)) return true;
  return false;
}

bool KernelAnalyzer::reads_updated(const clang::Stmt* s, const LoopScan& sc, int depth) const {
  if (!s) return false;
  if (depth > kMaxDepth) return true;
  if (const auto* dr = llvm::dyn_cast<clang::DeclRefExpr>(s))
    if (sc.updates.count(EnvKey{dr->getDecl(), -1})) return true;
  if (const auto* call = llvm::dyn_cast<clang::CallExpr>(s)) {
    const clang::FunctionDecl* def = nullptr;
    if (call->getDirectCallee() && call->getDirectCallee()->hasBody(def)) return true;  // may have effects
  }
  for (const clang::Stmt* c : s->children())
    if (reads_updated(c, sc, depth + 1)) return true;
  return false;
}

}  // namespace dop::features::detail
