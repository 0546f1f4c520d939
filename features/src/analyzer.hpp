// The feature extractor: a symbolic evaluation of each kernel's AST (statements in order, helper functions inlined at
// their call sites), tracking integer values as polynomials over loop iteration counters, work-item ids and kernel
// arguments, so that every memory address is known as a function of the innermost loop's iteration (or of the
// work-item index outside loops). docs/features.md defines every count; the comments here say how it is computed.
//
// One class, KernelAnalyzer, declared here; its methods live in files by concern (analyzer_<concern>.cpp, named at
// each section below). Internal to features/ (not installed).
#pragma once

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/Expr.h>
#include <clang/AST/Stmt.h>
#include <clang/Basic/SourceManager.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dop/features.hpp"
#include "symbolic.hpp"

namespace dop::features::detail {

using Clock = std::chrono::steady_clock;

/// A value: an integer (polynomial) or a pointer (memory objects it may point into + byte offset polynomial).
struct Val {
  Poly p;
  std::vector<int> bases;  ///< sorted memory-object ids; meaningful when ptr
  bool ptr = false;
};

/// A variable, or one field/component of a struct/vector variable (sub >= 0), as a key of the environment.
struct EnvKey {
  const clang::Decl* d = nullptr;
  int sub = -1;
  bool operator<(const EnvKey& o) const { return d != o.d ? std::less<const clang::Decl*>()(d, o.d) : sub < o.sub; }
};
using Env = std::map<EnvKey, Val>;

enum class Space { global, constant, local, priv, unknown };

struct MemObj {
  Space space = Space::priv;
  int arg = -1;  ///< kernel argument index, or -1
};

/// An lvalue: a variable (tracked in the environment) or a memory location.
struct LV {
  enum class Kind { none, var, mem } kind = Kind::none;
  EnvKey key;
  Val addr;  ///< mem: the address (pointer value)
  Space space = Space::unknown;
  clang::QualType type;
  int64_t size = 0;
  Deps deps;                  ///< none: what the expression depended on
  clang::SourceLocation loc;  ///< mem: where the access is (for the footprint's reasons)
};

enum class Access { load, store, atomic };
enum class Pattern { constant, continuous, stride, random };

/// Assignments to variables inside one loop (pre-scan), to find induction variables.
struct Update {
  int count = 0;
  bool conditional = false;
  bool induction_form = false;        ///< v++, v--, v += e, v -= e, v = v + e, v = e + v, v = v - e
  const clang::Expr* step = nullptr;  ///< e (nullptr: 1)
  bool negative = false;
  bool escaped = false;                     ///< address taken
  std::vector<const clang::Expr*> sources;  ///< right-hand sides and enclosing conditions of the assignments
};
struct LoopScan {
  std::map<EnvKey, Update> updates;
  std::set<const clang::Decl*> inner;  ///< declared inside the loop
};

struct InductionInfo {
  Val start;
  Poly step;  ///< per iteration, in the variable's units (bytes for pointers)
};

struct Frame {
  const clang::FunctionDecl* fn = nullptr;
  std::vector<Val> returns;
};

/// A loop as the analysis saw it: what the output reports, its iteration counter, and what bounds that counter for
/// the footprint.
struct LoopRec {
  LoopInfo info;
  AtomId iter = 0;
  bool fp_known = false;  ///< the trip count is at most floor(fp_num / fp_den), fp_den > 0
  Poly fp_num, fp_den;
  std::string fp_unsafe;    ///< why the iteration counter cannot be bounded by the trip count
  bool fp_uniform = false;  ///< fp_num and fp_den are the same for every work-item and iteration of outer loops
};

/// A simple guard an access runs under: get_global_id(d) <= bound (upper) or >= bound, the bound a launch-uniform
/// polynomial.
struct FpGuard {
  AtomId atom = 0;
  bool upper = true;
  Poly bound;
};
/// One access of the footprint: a byte-offset polynomial into a pointer argument.
struct FpAccess {
  Poly addr;
  int64_t size = 0;
  bool write = false;
  clang::SourceLocation loc;
  bool may = false;             ///< FootprintAccess::may
  std::vector<FpGuard> guards;  ///< FootprintAccess::guards
};
/// The range of an atom over a launch (or why it has none), as expressions of launch-time values.
struct ARange {
  bool ok = false;
  std::string lo, hi;
  bool point = false;   ///< one value per launch (lo == hi)
  bool nonneg = false;  ///< every value is >= 0
  std::string why;
};

inline const clang::Expr* strip(const clang::Expr* e) { return e ? e->IgnoreParenImpCasts() : nullptr; }

/// The variable an expression like x, x.f, x.s0, (x) refers to, or nullptr.
inline const clang::VarDecl* root_var(const clang::Expr* e) {
  for (int guard = 0; e && guard < 64; ++guard) {
    e = e->IgnoreParenImpCasts();
    if (const auto* d = llvm::dyn_cast<clang::DeclRefExpr>(e)) return llvm::dyn_cast<clang::VarDecl>(d->getDecl());
    if (const auto* m = llvm::dyn_cast<clang::MemberExpr>(e)) {
      if (m->isArrow()) return nullptr;
      e = m->getBase();
    } else if (const auto* v = llvm::dyn_cast<clang::ExtVectorElementExpr>(e)) {
      if (v->isArrow()) return nullptr;
      e = v->getBase();
    } else {
      return nullptr;
    }
  }
  return nullptr;
}

inline const clang::VarDecl* direct_var(const clang::Expr* e) {
  if (const auto* d = llvm::dyn_cast_or_null<clang::DeclRefExpr>(strip(e)))
    return llvm::dyn_cast<clang::VarDecl>(d->getDecl());
  return nullptr;
}

inline std::string callee_name(const clang::FunctionDecl* fd) {
  if (!fd || !fd->getDeclName().isIdentifier()) return {};
  return fd->getName().str();
}

inline bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

/// Lanes of a vector type (1 for scalars).
inline unsigned lanes_of(clang::QualType t) {
  if (t.isNull()) return 1;
  if (const auto* vt = t->getAs<clang::VectorType>()) return vt->getNumElements();
  return 1;
}

/// The features of one kernel: construct, run() once; the results are in `out`, diagnostics appended to `diags`.
class KernelAnalyzer {
 public:
  KernelAnalyzer(clang::ASTContext& ctx, const clang::FunctionDecl* kernel, KernelFeatures& out,
                 std::vector<Diagnostic>& diags, unsigned time_limit_ms, const std::set<std::string>& guessed);

  void run();
  /// The analysis hit its time limit: the kernel's features are partial.
  bool timed_out() const { return timed_out_; }

 private:
  // ---------------------------------------------------------------------------------------------------------------
  // Budget: a wall-clock deadline checked every 256 steps, a recursion-depth cap and an inlining cap. When one is
  // hit the analysis stops descending (values become opaque) and the kernel is marked incomplete.
  // (Here, inline: they run at every expression and statement.)
  bool step() {
    if (stopped_) return false;
    if (has_deadline_ && (++steps_ & 255) == 0 && Clock::now() > deadline_) {
      stopped_ = true;
      timed_out_ = true;
      out_.complete = false;
      note(kernel_->getLocation(), Diagnostic::Severity::error,
           "analysis of kernel '" + out_.name + "' timed out after " + std::to_string(limit_ms_) +
               " ms; its features are partial");
      return false;
    }
    return true;
  }
  struct DepthGuard {
    int& d;
    explicit DepthGuard(int& depth) : d(depth) { ++d; }
    ~DepthGuard() { --d; }
  };
  bool too_deep() {
    if (depth_ <= kMaxDepth) return false;
    if (!depth_reported_) {
      depth_reported_ = true;
      out_.complete = false;
      note(kernel_->getLocation(), Diagnostic::Severity::warning,
           "kernel '" + out_.name + "': nesting deeper than " + std::to_string(kMaxDepth) +
               " levels is not analysed; its features are partial");
    }
    return true;
  }

  // ---------------------------------------------------------------------------------------------------------------
  // The driver (analyzer.cpp): diagnostics, the kernel's arguments, and the counts summed up at the end.
  void note(clang::SourceLocation loc, Diagnostic::Severity sev, const std::string& msg);
  void setup_args();
  void finish();
  /// global_bytes_per_item(_expr): sum over loop chains of bytes x trip counts.
  void bytes_expression();

  // ---------------------------------------------------------------------------------------------------------------
  // Values (analyzer_values.cpp; the smallest inline here)
  Val opaque(const Deps& d, bool loaded = false) { return Val{Poly::atom(atoms_.fresh(d, loaded)), {}, false}; }
  Val constant(int64_t c) { return Val{Poly::constant(c), {}, false}; }
  Deps deps(const Val& v) const { return v.p.deps(atoms_); }
  Deps deps2(const Val& a, const Val& b) const {
    Deps d = deps(a);
    d.merge(deps(b));
    return d;
  }
  /// Replaces a value whose polynomial overflowed by an opaque one with the given dependences.
  Val checked(Val v, const Deps& fallback) {
    if (v.p.bad()) v.p = Poly::atom(atoms_.fresh(fallback));
    return v;
  }
  Val merge(const Val& a, const Val& b, const Deps& cond);
  int64_t size_of(clang::QualType t) const;
  int64_t pointee_size(clang::QualType ptr_type) const;
  static Space space_of(clang::LangAS as) {
    switch (as) {
      case clang::LangAS::opencl_global:
      case clang::LangAS::opencl_global_device:
      case clang::LangAS::opencl_global_host:
        return Space::global;
      case clang::LangAS::opencl_constant:
        return Space::constant;
      case clang::LangAS::opencl_local:
        return Space::local;
      case clang::LangAS::opencl_private:
      case clang::LangAS::Default:
        return Space::priv;
      default:
        return Space::unknown;
    }
  }
  /// Memory object of an array/local variable (created on first use).
  int object_of(const clang::VarDecl* vd);
  AtomId work_item_atom(const char* fn, unsigned dim);
  AtomId launch_atom(const std::string& name, bool renderable);

  // ---------------------------------------------------------------------------------------------------------------
  // Environment (analyzer_values.cpp)
  void set_whole(const clang::Decl* d, const Val& v);
  Val get(const EnvKey& k);
  std::string component_name(clang::QualType t, int sub) const;

  // ---------------------------------------------------------------------------------------------------------------
  // Memory accesses and their classification (analyzer_memory.cpp)
  Pattern classify(const Val& addr, int64_t size) const;
  Space resolve_space(Space s, const Val& addr) const;
  void record(const LV& l, Access kind, const Pattern* forced = nullptr);
  /// A pointer passed to a function whose body is unknown: assume it reads and writes.
  void escape_pointer(const Val& v, clang::SourceLocation loc = {});
  Val load(const LV& l);
  void assign(const LV& l, const Val& v);
  /// A store through a pointer to a tracked variable (p = &x; *p = v): x's value is no longer known.
  void forget_pointees(const Val& addr);
  Val address_of(const LV& l);
  LV lv(const clang::Expr* e);

  // ---------------------------------------------------------------------------------------------------------------
  // Arithmetic (analyzer_arith.cpp)
  void count_arith(clang::QualType t, bool bitwise);
  Val quotient(const Val& a, const Val& b);
  /// Integer / pointer arithmetic on symbolic values. Floating-point results are opaque (only their dependences
  /// matter).
  Val arith(clang::BinaryOperatorKind op, const Val& a, const Val& b, clang::QualType lt, clang::QualType rt,
            clang::QualType result);

  // ---------------------------------------------------------------------------------------------------------------
  // Expressions (analyzer_expressions.cpp)
  Val rv(const clang::Expr* e);
  /// A glvalue where a value is wanted but Clang put no lvalue-to-rvalue conversion: operands of expressions that
  /// contain errors (Sema skips conversions there) and discarded expressions (`a[i];`, which C defines as a read).
  /// Memory is read: a load.
  Val value_of_glvalue(const clang::Expr* e);
  /// .x / .field of an rvalue (a call's result, a vector literal): same dependences as the whole.
  Val rvalue_component(const clang::Expr* e);
  /// Any other expression: evaluate the children (their memory and arithmetic operations count), result opaque.
  Val generic(const clang::Stmt* s);
  /// What Clang kept of an erroneous expression. An undeclared identifier (a macro the file does not define, a
  /// constant from a missing header) becomes a named launch-time symbol, so trip counts stay symbolic.
  Val recovery(const clang::RecoveryExpr* e);
  Val cast(const clang::CastExpr* c);
  void count_branch(const Val& cond);
  Val unary(const clang::UnaryOperator* u);
  Val binary(const clang::BinaryOperator* b);

  // ---------------------------------------------------------------------------------------------------------------
  // Calls: builtins by name, helper functions inlined (analyzer_calls.cpp)
  Val call(const clang::CallExpr* ce);
  Val vector_memory(const std::string& name, const clang::CallExpr* ce);
  Val inline_call(const clang::FunctionDecl* def, const clang::CallExpr* ce);

  // ---------------------------------------------------------------------------------------------------------------
  // Statements (analyzer_statements.cpp)
  void stmt(const clang::Stmt* s);
  void declare(const clang::VarDecl* vd);
  /// After an if/switch: variables that differ between the paths get a merged (opaque) value that also depends on
  /// the condition (control dependence, for divergence).
  void merge_env(const Env& other, const Deps& cond);

  // --- loops: the pre-scan (analyzer_loop_scan.cpp) ------------------------------------------------------------
  /// Pre-scan of a loop: every assignment to a variable, whether it is unconditional, its right-hand side and the
  /// conditions it is under (for the work-item dependences of the variable, see loop_variant_wi()).
  void scan(const clang::Stmt* s, bool conditional, LoopScan& sc, int depth);
  /// Work-item dimensions an expression may depend on, given the loop-variant variables' current estimates `wi`.
  uint8_t syntactic_wi(const clang::Stmt* s, const LoopScan& sc, const std::map<EnvKey, uint8_t>& wi, int depth);
  /// For each variable the loop changes (other than induction variables), the work-item dimensions its value may
  /// depend on: a fixpoint over its assignments' right-hand sides and enclosing conditions (flow-insensitive).
  std::map<EnvKey, uint8_t> loop_variant_wi(const LoopScan& sc);
  static bool refers_to(const clang::Stmt* s, const clang::VarDecl* v, int depth = 0);
  /// Does `e` read a variable the loop assigns (so it is not loop-invariant)?
  bool reads_updated(const clang::Stmt* s, const LoopScan& sc, int depth = 0) const;

  // --- loops: induction variables, trip counts, the body (analyzer_loops.cpp) ------------------------------------
  void loop(const clang::Stmt* s, const clang::Expr* cond, const clang::Expr* inc, const clang::Stmt* body, bool is_do);
  TripCount trip_count(int id, const clang::Expr* cond, const LoopScan& sc,
                       const std::map<EnvKey, InductionInfo>& inductions, bool is_do, bool& divergent);
  void collect_symbols(AtomId a, std::set<std::string>& out) const;
  static bool has_continue(const clang::Stmt* s, int depth);
  /// A break, continue, return or goto anywhere in s (nested loops and switches included).
  static bool has_exit(const clang::Stmt* s, int depth);
  /// Every atom of p is a kernel scalar argument or a launch size: the same for every work-item.
  bool launch_uniform(const Poly& p) const;

  // ---------------------------------------------------------------------------------------------------------------
  // Memory footprint (docs/features.md): accesses through global/constant pointer arguments as byte-offset
  // polynomials, and ranges of the atoms they use. Anything that cannot be bounded makes the argument (or, for
  // control flow the analysis does not model, every argument) "whole".
  // Recording the accesses, and what makes arguments whole (analyzer_footprint_accesses.cpp):
  static constexpr size_t kMaxFpAccesses = 256;
  std::string loc_str(clang::SourceLocation loc) const;
  bool fp_arg(int b) const;
  void fp_mark(int arg, clang::SourceLocation loc, const std::string& why);
  void fp_poison(clang::SourceLocation loc, const std::string& why);
  /// A pointer used in a way the footprint does not follow: its arguments are whole; one of unknown origin that may
  /// point to global memory makes every argument whole.
  void fp_escape(const Val& v, clang::SourceLocation loc, const std::string& why);
  void fp_record(const LV& l, Space space, Access kind);
  /// An integer conversion to fewer than 32 bits (or a saturating one) may change the value; the footprint assumes
  /// index arithmetic does not wrap, so a wrapped value that is not already opaque makes every argument whole.
  void check_narrowing(const Val& v, clang::QualType t, clang::SourceLocation loc, bool saturating = false);
  void check_case(const clang::Stmt* s);
  // Bounding them over the atoms' ranges (analyzer_footprint.cpp):
  /// c * a product of launch sizes (global_size_d, local_size_d, num_groups_d), c > 0: positive at launch.
  bool positive_launch(const Poly& p) const;
  static bool launch_size_name(const std::string& n);
  static std::string fp_term(int64_t c, const std::vector<std::string>& factors, bool first);
  /// Lower (upper = false) or upper bound of p over the atoms' ranges, as an expression; nullopt (why set) when a
  /// monomial is not bounded this way. `nonneg`: p >= 0 everywhere.
  std::optional<std::string> fp_bound(const Poly& p, bool upper, int depth, bool& nonneg, std::string& why);
  std::optional<std::string> fp_point(const Poly& p, int depth);
  const ARange& atom_range(AtomId a, int depth);
  void footprint();

  // ---------------------------------------------------------------------------------------------------------------
  static constexpr int kMaxDepth = 256;
  static constexpr size_t kMaxCallDepth = 16;
  static constexpr int kMaxInlined = 2000;

  clang::ASTContext& ctx_;
  const clang::SourceManager& sm_;
  const clang::FunctionDecl* kernel_;
  KernelFeatures& out_;
  std::vector<Diagnostic>& diags_;
  const std::set<std::string>& guessed_;
  Clock::time_point deadline_{};
  bool has_deadline_ = false;
  unsigned limit_ms_ = 0;
  uint64_t steps_ = 0;
  bool stopped_ = false;
  bool timed_out_ = false;
  int depth_ = 0;
  bool depth_reported_ = false;
  bool scan_overflow_ = false;
  std::vector<const clang::Expr*> scan_conds_;
  bool dry_ = false;  ///< evaluate without counting or changing variables (conditions, steps, bounds)
  int in_for_inc_ = 0;
  int inlined_ = 0;
  int64_t max_depth_ = 0;

  Atoms atoms_;
  Env env_;
  std::vector<MemObj> objects_;
  std::map<const clang::VarDecl*, int> var_objects_;
  std::vector<LoopRec> loops_;
  std::vector<int> loop_stack_;
  std::vector<Frame*> frames_;
  std::map<std::vector<int>, int64_t> bytes_;
  std::set<const clang::Decl*> reported_;
  std::set<std::string> reported_calls_;  ///< callees without a declaration, warned about once
  // footprint
  std::map<int, const clang::VarDecl*> object_vars_;
  std::vector<std::vector<FpAccess>> fp_acc_;  ///< per argument
  std::vector<std::string> fp_whole_;          ///< per argument: why it is whole (empty: not)
  std::string fp_poison_;                      ///< why every argument is whole (empty: none)
  /// Nesting of code not every work-item runs in full (branches, loops that may exit early or whose trip count
  /// varies); fp_exited_: a return may have been taken. Accesses recorded then are FootprintAccess::may.
  int fp_cond_ = 0;
  bool fp_exited_ = false;
  /// The simple guards in force (the conditions of enclosing if-branches, and those that an earlier `if (...)
  /// return;` of the kernel implies); fp_guard_depth_: how many if-branches pushed some.
  std::vector<FpGuard> fp_guards_;
  int fp_guard_depth_ = 0;
  /// Whether `cond` (negated: its negation) is a conjunction of simple guards `get_global_id(d) < E` (<=, >, >=,
  /// with the id on either side, E the same for every work-item); appends them to `out`.
  bool simple_guards(const clang::Expr* cond, bool negated, std::vector<FpGuard>& out);
  /// An if statement (its branches' accesses `may`, or guarded).
  void if_stmt(const clang::IfStmt* is);
  std::map<AtomId, std::pair<Poly, Poly>> quots_;
  std::set<AtomId> int_params_;
  std::map<AtomId, ARange> fp_ranges_;
  std::vector<std::pair<const Env*, size_t>> switch_entry_;
};

}  // namespace dop::features::detail
