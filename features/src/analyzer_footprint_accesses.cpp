// The footprint's accesses: each access through a global/constant/local pointer argument as a byte-offset polynomial,
// and what makes an argument (or, for control flow the analysis does not model, every argument) whole.
#include <algorithm>

#include "analyzer.hpp"

namespace dop::features::detail {

std::string KernelAnalyzer::loc_str(clang::SourceLocation loc) const {
  if (loc.isInvalid()) loc = kernel_->getLocation();
  if (loc.isValid()) {
    const auto p = sm_.getPresumedLoc(sm_.getFileLoc(loc));
    if (p.isValid()) return std::string(p.getFilename()) + ":" + std::to_string(p.getLine());
  }
  return out_.file;
}

bool KernelAnalyzer::fp_arg(int b) const {
  if (b < 0 || size_t(b) >= objects_.size()) return false;
  const MemObj& o = objects_[size_t(b)];
  return o.arg >= 0 && size_t(o.arg) < out_.args.size() && out_.args[size_t(o.arg)].is_pointer &&
         (o.space == Space::global || o.space == Space::constant || o.space == Space::local);
}

void KernelAnalyzer::fp_mark(int arg, clang::SourceLocation loc, const std::string& why) {
  if (arg < 0 || size_t(arg) >= fp_whole_.size() || !fp_whole_[size_t(arg)].empty()) return;
  fp_whole_[size_t(arg)] = loc_str(loc) + ": " + why;
}

void KernelAnalyzer::fp_poison(clang::SourceLocation loc, const std::string& why) {
  if (fp_poison_.empty()) fp_poison_ = loc_str(loc) + ": " + why;
}

void KernelAnalyzer::fp_escape(const Val& v, clang::SourceLocation loc, const std::string& why) {
  bool any = false;
  for (int b : v.bases)
    if (fp_arg(b)) {
      fp_mark(objects_[size_t(b)].arg, loc, why);
      any = true;
    }
  if (!any && v.bases.empty()) fp_poison(loc, why + " (a pointer of unknown origin)");
}

void KernelAnalyzer::fp_record(const LV& l, Space space, Access kind) {
  bool any = false;
  for (int b : l.addr.bases) {
    if (!fp_arg(b)) continue;
    any = true;
    const int a = objects_[size_t(b)].arg;
    if (!fp_whole_[size_t(a)].empty()) continue;
    if (l.addr.bases.size() > 1) {
      fp_mark(a, l.loc, "the pointer may point into several buffers");
    } else if (l.addr.p.bad()) {
      fp_mark(a, l.loc, "address is not a polynomial");
    } else if (l.size <= 0) {
      fp_mark(a, l.loc, "access of unknown size");
    } else {
      auto& list = fp_acc_[size_t(a)];
      const bool may = fp_cond_ > 0 || fp_exited_;
      for (int w = 0; w < 2; ++w) {
        if ((w == 0 && kind == Access::store) || (w == 1 && kind == Access::load)) continue;
        const auto dup = std::find_if(list.begin(), list.end(), [&](const FpAccess& x) {
          return x.write == (w == 1) && x.size == l.size && x.addr == l.addr.p;
        });
        if (dup != list.end()) {
          // Certain when one of its occurrences is (with the fewest guards: each is a witness on its own).
          if (!may && (dup->may || fp_guards_.size() < dup->guards.size())) {
            dup->may = false;
            dup->guards = fp_guards_;
          }
          continue;
        }
        if (list.size() >= kMaxFpAccesses) {
          fp_mark(a, l.loc, "more than " + std::to_string(kMaxFpAccesses) + " distinct accesses");
          break;
        }
        list.push_back(FpAccess{l.addr.p, l.size, w == 1, l.loc, may, may ? std::vector<FpGuard>{} : fp_guards_});
      }
    }
  }
  if (!any && l.addr.bases.empty() && (space == Space::global || space == Space::constant || space == Space::unknown))
    fp_poison(l.loc, "access through a pointer of unknown origin");
}

void KernelAnalyzer::check_narrowing(const Val& v, clang::QualType t, clang::SourceLocation loc, bool saturating) {
  if (v.ptr || v.p.bad() || t.isNull() || !t->isIntegerType() || t->isBooleanType()) return;
  const uint64_t w = ctx_.getIntWidth(t);
  if (w >= 32 && !saturating) return;
  if (v.p.is_constant()) {
    const int64_t c = v.p.constant_value();
    if (w >= 64) return;
    const bool sig = t->isSignedIntegerType();
    const int64_t lo = sig ? -(int64_t(1) << (w - 1)) : 0;
    const int64_t hi = sig ? (int64_t(1) << (w - 1)) - 1 : int64_t((uint64_t(1) << w) - 1);
    if (c >= lo && c <= hi) return;
  } else {
    bool all_opaque = true;
    for (const auto& [m, c] : v.p.terms())
      for (AtomId a : m) all_opaque = all_opaque && atoms_[a].kind == AtomKind::opaque;
    if (all_opaque) return;
  }
  fp_poison(loc, saturating ? "saturating integer conversion" : "narrowing integer conversion (may wrap)");
}

void KernelAnalyzer::check_case(const clang::Stmt* s) {
  if (switch_entry_.empty()) return;
  const auto& [before, loops] = switch_entry_.back();
  bool same = loops == loop_stack_.size();
  for (auto it = before->begin(); same && it != before->end(); ++it) {
    auto e = env_.find(it->first);
    same = e != env_.end() && e->second.p == it->second.p && e->second.bases == it->second.bases;
  }
  if (!same) fp_poison(s->getBeginLoc(), "a switch case reached with values an earlier case changed");
}

}  // namespace dop::features::detail
