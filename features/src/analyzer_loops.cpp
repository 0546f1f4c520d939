// Loops: induction variables as polynomials of the iteration counter, trip counts (constant, symbolic or unknown),
// the body counted once in the loop's context, and what the loop leaves behind.
#include <algorithm>
#include <cctype>

#include "analyzer.hpp"

namespace dop::features::detail {

void KernelAnalyzer::loop(const clang::Stmt* s, const clang::Expr* cond, const clang::Expr* inc,
                          const clang::Stmt* body, bool is_do) {
  const int id = int(loops_.size());
  LoopRec rec;
  rec.info.line = sm_.getPresumedLoc(sm_.getFileLoc(s->getBeginLoc())).isValid()
                      ? sm_.getPresumedLoc(sm_.getFileLoc(s->getBeginLoc())).getLine()
                      : 0;
  rec.info.depth = unsigned(loop_stack_.size() + 1);
  rec.info.parent = loop_stack_.empty() ? -1 : loop_stack_.back();
  Deps own;
  own.add_loop(id);
  rec.iter = atoms_.intern(AtomKind::iter, "iter:" + std::to_string(id), "iter" + std::to_string(id), own, false);
  loops_.push_back(rec);

  // Pre-scan: which variables change inside the loop, and which of them are induction variables.
  LoopScan sc;
  scan_overflow_ = false;
  scan_conds_.clear();
  scan(cond, false, sc, 0);
  if (cond) scan_conds_.push_back(cond);  // everything in the loop is control-dependent on its condition
  scan(inc, false, sc, 0);
  scan(body, false, sc, 0);
  scan_conds_.clear();
  const bool overflow = scan_overflow_;
  const std::map<EnvKey, uint8_t> variant_wi = loop_variant_wi(sc);
  std::map<EnvKey, InductionInfo> inductions;
  std::vector<std::pair<EnvKey, Val>> entry;
  // In source order (the map is ordered by pointer), so that everything created here is deterministic.
  std::vector<std::pair<EnvKey, const Update*>> ordered;
  for (const auto& [key, u] : sc.updates)
    if (!sc.inner.count(key.d)) ordered.emplace_back(key, &u);
  std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    return a.first.d->getLocation().getRawEncoding() < b.first.d->getLocation().getRawEncoding();
  });
  for (const auto& [key, up] : ordered) {
    const Update& u = *up;
    const Val v0 = get(key);
    entry.emplace_back(key, v0);
    bool ind =
        !overflow && u.count == 1 && !u.conditional && u.induction_form && !u.escaped && !reads_updated(u.step, sc);
    if (ind) {
      const bool saved = dry_;
      dry_ = true;
      Val s = u.step ? rv(u.step) : constant(1);
      dry_ = saved;
      Poly st = u.negative ? -s.p : s.p;
      const auto* vd = llvm::dyn_cast<clang::VarDecl>(key.d);
      if (vd && vd->getType()->isPointerType()) st = st * Poly::constant(pointee_size(vd->getType()));
      if (s.ptr || st.bad() || deps(Val{st, {}, false}).has_loop(id)) ind = false;
      if (ind) {
        Val nv{v0.p + st * Poly::atom(rec.iter), v0.bases, v0.ptr};
        if (nv.p.bad()) {
          ind = false;
        } else {
          set_whole(key.d, nv);
          inductions[key] = InductionInfo{v0, st};
          if (loops_[size_t(id)].info.induction.empty())  // the first one declared; the condition's wins below
            if (const auto* nd = llvm::dyn_cast<clang::NamedDecl>(key.d))
              if (nd->getDeclName().isIdentifier()) loops_[size_t(id)].info.induction = nd->getName().str();
        }
      }
    }
    if (!ind) {
      Deps d = deps(v0);
      auto w = variant_wi.find(key);
      d.wi |= (overflow || w == variant_wi.end()) ? uint8_t(7) : w->second;
      d.add_loop(id);
      Val nv = opaque(d);
      nv.ptr = v0.ptr;
      nv.bases = v0.bases;
      set_whole(key.d, nv);
    }
  }

  // Footprint: a `continue` may skip an induction update in the body, so that the loop runs more iterations than
  // the counter model says (an update in the for-increment is not skipped).
  if (!inductions.empty() && has_continue(body, 0)) {
    LoopScan isc;
    scan(inc, false, isc, 0);
    scan_conds_.clear();
    for (const auto& [key, info] : inductions)
      if (!isc.updates.count(key)) {
        loops_[size_t(id)].fp_unsafe = "a continue in the loop at line " +
                                       std::to_string(loops_[size_t(id)].info.line) +
                                       " may skip the update of an induction variable";
        break;
      }
  }

  // Trip count (from the condition and the induction variables) and the condition's dependences.
  Deps cond_deps;
  if (cond) {
    const bool saved = dry_;
    dry_ = true;
    cond_deps = deps(rv(cond));
    dry_ = saved;
  }
  cond_deps.remove_loop(id);
  bool divergent = false;
  TripCount trip = trip_count(id, cond, sc, inductions, is_do, divergent);
  loops_[size_t(id)].info.trip = std::move(trip);
  loops_[size_t(id)].info.divergent = divergent;
  if (cond_deps.wi) loops_[size_t(id)].info.divergent = true;

  // Footprint: every work-item runs the body at every value of the counter's range when the trip count is the same
  // for all of them (and for every iteration of outer loops) and nothing leaves the loop early; otherwise its
  // accesses are `may`.
  const LoopRec& lr = loops_[size_t(id)];
  const bool full =
      lr.fp_unsafe.empty() && !has_exit(body, 0) &&
      (lr.info.trip.kind == TripCount::Kind::constant ? lr.info.trip.value >= 1 : lr.fp_known && lr.fp_uniform);
  if (!full) ++fp_cond_;

  // The body, counted once, in the loop's context.
  loop_stack_.push_back(id);
  max_depth_ = std::max<int64_t>(max_depth_, int64_t(loop_stack_.size()));
  if (is_do) {
    stmt(body);
    if (cond) rv(cond);
  } else {
    if (cond) rv(cond);
    stmt(body);
  }
  if (inc) {
    ++in_for_inc_;  // loop-control arithmetic (i++, i += 4) is not counted
    rv(inc);
    --in_for_inc_;
  }
  loop_stack_.pop_back();
  if (!full) --fp_cond_;

  // After the loop, what it changed is known only through its dependences.
  for (const auto& [key, v0] : entry) {
    const Val end = get(key);
    Deps d = deps2(end, v0);
    d.remove_loop(id);
    d.merge(cond_deps);
    Val nv = opaque(d);
    nv.ptr = end.ptr || v0.ptr;
    nv.bases = end.bases;
    set_whole(key.d, nv);
  }
}

TripCount KernelAnalyzer::trip_count(int id, const clang::Expr* cond, const LoopScan& sc,
                                     const std::map<EnvKey, InductionInfo>& inductions, bool is_do, bool& divergent) {
  TripCount t;
  if (const auto* lit = llvm::dyn_cast_or_null<clang::IntegerLiteral>(strip(cond));
      lit && lit->getValue().isZero()) {  // while (0), do { } while (0)
    t.kind = TripCount::Kind::constant;
    t.value = is_do ? 1 : 0;
    t.expr = std::to_string(t.value);
    return t;
  }
  const auto* b = llvm::dyn_cast_or_null<clang::BinaryOperator>(strip(cond));
  if (!b) return t;
  auto op = b->getOpcode();
  const clang::Expr* var_side = b->getLHS();
  const clang::Expr* bound_side = b->getRHS();
  const clang::VarDecl* v = direct_var(var_side);
  if (!v || !inductions.count(EnvKey{v, -1})) {
    v = direct_var(bound_side);
    std::swap(var_side, bound_side);
    switch (op) {  // flip: E < v  ==  v > E
      case clang::BO_LT:
        op = clang::BO_GT;
        break;
      case clang::BO_GT:
        op = clang::BO_LT;
        break;
      case clang::BO_LE:
        op = clang::BO_GE;
        break;
      case clang::BO_GE:
        op = clang::BO_LE;
        break;
      default:
        break;
    }
  }
  if (!v) return t;
  auto it = inductions.find(EnvKey{v, -1});
  if (it == inductions.end()) return t;
  if (v->getDeclName().isIdentifier()) loops_[size_t(id)].info.induction = v->getName().str();
  if (reads_updated(bound_side, sc)) return t;
  const bool saved = dry_;
  dry_ = true;
  const Val bound = rv(bound_side);
  dry_ = saved;
  const Val& start = it->second.start;
  const Poly& st = it->second.step;
  Deps all = deps2(bound, start);
  all.merge(deps(Val{st, {}, false}));
  if (all.wi) divergent = true;
  loops_[size_t(id)].fp_uniform = launch_uniform(bound.p) && launch_uniform(start.p) && launch_uniform(st);
  if (!st.is_constant() && positive_launch(st) && (op == clang::BO_LT || op == clang::BO_LE)) {
    // A step of launch sizes (i += get_local_size(0)): the footprint bounds the count by (E - v0 + step - 1)/step.
    const Poly n = bound.p - start.p + (op == clang::BO_LT ? st - Poly::constant(1) : st);
    if (!n.bad()) {
      loops_[size_t(id)].fp_known = true;
      loops_[size_t(id)].fp_num = n;
      loops_[size_t(id)].fp_den = st;
    }
  }
  if (!st.is_constant() || st.constant_value() == 0) return t;
  const int64_t s = st.constant_value();
  const int64_t mag = s > 0 ? s : -s;
  Poly num;
  const Poly diff_up = bound.p - start.p;    // E - v0
  const Poly diff_down = start.p - bound.p;  // v0 - E
  if ((op == clang::BO_LT || op == clang::BO_NE) && s > 0)
    num = diff_up + Poly::constant(mag - 1);
  else if (op == clang::BO_LE && s > 0)
    num = diff_up + Poly::constant(mag);
  else if ((op == clang::BO_GT || op == clang::BO_NE) && s < 0)
    num = diff_down + Poly::constant(mag - 1);
  else if (op == clang::BO_GE && s < 0)
    num = diff_down + Poly::constant(mag);
  else
    return t;
  if (num.bad()) return t;
  loops_[size_t(id)].fp_known = true;  // trip count = max(0, floor(num / mag)), rendered or not (work-item dependent)
  loops_[size_t(id)].fp_num = num;
  loops_[size_t(id)].fp_den = Poly::constant(mag);
  if (num.is_constant()) {
    int64_t n = num.constant_value() / mag;
    if (num.constant_value() < 0) n = 0;
    if (is_do) n = std::max<int64_t>(n, 1);
    t.kind = TripCount::Kind::constant;
    t.value = n;
    t.expr = std::to_string(n);
    return t;
  }
  if (!num.renderable(atoms_)) return t;
  t.kind = TripCount::Kind::symbolic;
  // num = mag*X + c with X a polynomial: the count is X + floor(c / mag) (e.g. a pointer loop: 4*n + 3 over 4 is n).
  const int64_t c = num.constant_value();
  const Poly x = (num - Poly::constant(c)).exact_div(mag);
  Poly simple;
  if (!x.bad()) {
    const int64_t q = c >= 0 ? c / mag : -((-c + mag - 1) / mag);
    simple = x + Poly::constant(q);
  }
  const std::string ns = num.str(atoms_);
  t.expr = mag == 1 ? ns : (!x.bad() && !simple.bad()) ? simple.str(atoms_) : "(" + ns + ")/" + std::to_string(mag);
  std::set<std::string> syms;
  for (const auto& [m, c] : num.terms())
    for (AtomId a : m) collect_symbols(a, syms);
  t.symbols.assign(syms.begin(), syms.end());
  return t;
}

void KernelAnalyzer::collect_symbols(AtomId a, std::set<std::string>& out) const {
  const auto& at = atoms_[a];
  if (at.kind == AtomKind::quot) {
    // names inside "(N/4)": every identifier
    std::string cur;
    for (char c : at.name + " ") {
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.') {
        cur += c;
      } else {
        if (!cur.empty() && !std::isdigit(static_cast<unsigned char>(cur[0]))) out.insert(cur);
        cur.clear();
      }
    }
    return;
  }
  out.insert(at.name);
}

bool KernelAnalyzer::has_exit(const clang::Stmt* s, int depth) {
  if (!s) return false;
  if (depth > kMaxDepth) return true;
  // A break of a nested loop or switch counts too (safe: the loop's accesses are only marked `may`).
  if (llvm::isa<clang::BreakStmt>(s) || llvm::isa<clang::ContinueStmt>(s) || llvm::isa<clang::ReturnStmt>(s) ||
      llvm::isa<clang::GotoStmt>(s) || llvm::isa<clang::IndirectGotoStmt>(s))
    return true;
  for (const clang::Stmt* c : s->children())
    if (has_exit(c, depth + 1)) return true;
  return false;
}

bool KernelAnalyzer::launch_uniform(const Poly& p) const {
  if (p.bad()) return false;
  for (const auto& [m, c] : p.terms())
    for (AtomId a : m) {
      const auto& at = atoms_[a];
      if (!(at.kind == AtomKind::param || (at.kind == AtomKind::launch && launch_size_name(at.name)))) return false;
    }
  return true;
}

bool KernelAnalyzer::has_continue(const clang::Stmt* s, int depth) {
  if (!s) return false;
  if (depth > kMaxDepth) return true;
  if (llvm::isa<clang::ContinueStmt>(s)) return true;
  if (llvm::isa<clang::ForStmt>(s) || llvm::isa<clang::WhileStmt>(s) || llvm::isa<clang::DoStmt>(s)) return false;
  for (const clang::Stmt* c : s->children())
    if (has_continue(c, depth + 1)) return true;
  return false;
}

}  // namespace dop::features::detail
