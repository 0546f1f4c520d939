// The feature extractor: a symbolic evaluation of each kernel's AST (statements in order, helper functions inlined at
// their call sites), tracking integer values as polynomials over loop iteration counters, work-item ids and kernel
// arguments, so that every memory address is known as a function of the innermost loop's iteration (or of the
// work-item index outside loops). docs/features.md defines every count; the comments here say how it is computed.
#include <clang/AST/ASTContext.h>
#include <clang/AST/Attr.h>
#include <clang/AST/Decl.h>
#include <clang/AST/Expr.h>
#include <clang/AST/RecordLayout.h>
#include <clang/AST/Stmt.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Frontend/ASTUnit.h>
#include <clang/Lex/Lexer.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <set>

#include "dop/features.hpp"
#include "crash_guard.hpp"
#include "dop/frontend.hpp"
#include "symbolic.hpp"

namespace dop::features {

namespace {

using detail::AtomId;
using detail::AtomKind;
using detail::Atoms;
using detail::Deps;
using detail::Poly;
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
  Deps deps;  ///< none: what the expression depended on
  clang::SourceLocation loc;  ///< mem: where the access is (for the footprint's reasons)
};

enum class Access { load, store, atomic };
enum class Pattern { constant, continuous, stride, random };

/// Assignments to variables inside one loop (pre-scan), to find induction variables.
struct Update {
  int count = 0;
  bool conditional = false;
  bool induction_form = false;  ///< v++, v--, v += e, v -= e, v = v + e, v = e + v, v = v - e
  const clang::Expr* step = nullptr;  ///< e (nullptr: 1)
  bool negative = false;
  bool escaped = false;  ///< address taken
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

const clang::Expr* strip(const clang::Expr* e) { return e ? e->IgnoreParenImpCasts() : nullptr; }

/// The variable an expression like x, x.f, x.s0, (x) refers to, or nullptr.
const clang::VarDecl* root_var(const clang::Expr* e) {
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

const clang::VarDecl* direct_var(const clang::Expr* e) {
  if (const auto* d = llvm::dyn_cast_or_null<clang::DeclRefExpr>(strip(e)))
    return llvm::dyn_cast<clang::VarDecl>(d->getDecl());
  return nullptr;
}

std::string callee_name(const clang::FunctionDecl* fd) {
  if (!fd || !fd->getDeclName().isIdentifier()) return {};
  return fd->getName().str();
}

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

bool is_float_math(const std::string& n0) {
  static const std::set<std::string> names = {
      "acos",  "acosh",  "acospi",    "asin",      "asinh", "asinpi",  "atan",     "atan2",     "atanh",
      "atanpi", "atan2pi", "cbrt",    "ceil",      "copysign", "cos",  "cosh",     "cospi",     "erfc",
      "erf",   "exp",    "exp2",      "exp10",     "expm1", "fabs",    "fdim",     "floor",     "fma",
      "fmax",  "fmin",   "fmod",      "fract",     "frexp", "hypot",   "ilogb",    "ldexp",     "lgamma",
      "lgamma_r", "log", "log2",      "log10",     "log1p", "logb",    "mad",      "maxmag",    "minmag",
      "modf",  "nextafter", "pow",    "pown",      "powr",  "remainder", "remquo", "rint",      "rootn",
      "round", "rsqrt",  "sin",       "sincos",    "sinh",  "sinpi",   "sqrt",     "tan",       "tanh",
      "tanpi", "tgamma", "trunc",     "recip",     "divide", "clamp",  "degrees",  "max",       "min",
      "mix",   "radians", "step",     "smoothstep", "sign", "cross",   "dot",      "distance",  "length",
      "normalize", "fast_distance", "fast_length", "fast_normalize"};
  std::string n = n0;
  if (starts_with(n, "native_"))
    n = n.substr(7);
  else if (starts_with(n, "half_"))
    n = n.substr(5);
  return names.count(n) > 0;
}

bool is_int_arith_builtin(const std::string& n) {
  static const std::set<std::string> names = {"mad24", "mul24",   "mad_hi", "mul_hi", "mad_sat",
                                              "add_sat", "sub_sat", "hadd",   "rhadd",  "abs_diff"};
  return names.count(n) > 0;
}

/// Lanes of a vector type (1 for scalars).
unsigned lanes_of(clang::QualType t) {
  if (t.isNull()) return 1;
  if (const auto* vt = t->getAs<clang::VectorType>()) return vt->getNumElements();
  return 1;
}

class KernelAnalyzer {
 public:
  KernelAnalyzer(clang::ASTContext& ctx, const clang::FunctionDecl* kernel, KernelFeatures& out,
                 std::vector<Diagnostic>& diags, unsigned time_limit_ms, const std::set<std::string>& guessed)
      : ctx_(ctx), sm_(ctx.getSourceManager()), kernel_(kernel), out_(out), diags_(diags), guessed_(guessed) {
    if (time_limit_ms) {
      deadline_ = Clock::now() + std::chrono::milliseconds(time_limit_ms);
      has_deadline_ = true;
    }
    limit_ms_ = time_limit_ms;
  }

  void run() {
    setup_args();
    Frame top;
    top.fn = kernel_;
    frames_.push_back(&top);
    stmt(kernel_->getBody());
    frames_.pop_back();
    finish();
  }

 private:
  // ---------------------------------------------------------------------------------------------------------------
  // Budget: a wall-clock deadline checked every 256 steps, a recursion-depth cap and an inlining cap. When one is
  // hit the analysis stops descending (values become opaque) and the kernel is marked incomplete.
  bool step() {
    if (stopped_) return false;
    if (has_deadline_ && (++steps_ & 255) == 0 && Clock::now() > deadline_) {
      stopped_ = true;
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

  void note(clang::SourceLocation loc, Diagnostic::Severity sev, const std::string& msg) {
    Diagnostic d;
    d.severity = sev;
    d.message = msg;
    if (loc.isValid()) {
      const auto p = sm_.getPresumedLoc(sm_.getFileLoc(loc));
      if (p.isValid()) {
        d.file = p.getFilename();
        d.line = p.getLine();
        d.column = p.getColumn();
      }
    }
    diags_.push_back(std::move(d));
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Values
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

  Val merge(const Val& a, const Val& b, const Deps& cond) {
    if (a.p == b.p && a.bases == b.bases && a.ptr == b.ptr) return a;
    Deps d = deps2(a, b);
    d.merge(cond);
    Val v = opaque(d);
    v.ptr = a.ptr || b.ptr;
    std::set_union(a.bases.begin(), a.bases.end(), b.bases.begin(), b.bases.end(), std::back_inserter(v.bases));
    return v;
  }

  int64_t size_of(clang::QualType t) const {
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
  int64_t pointee_size(clang::QualType ptr_type) const {
    if (ptr_type.isNull()) return 1;
    clang::QualType pt;
    if (const auto* p = ptr_type->getAs<clang::PointerType>())
      pt = p->getPointeeType();
    else if (const auto* a = ptr_type->getAsArrayTypeUnsafe())
      pt = a->getElementType();
    const int64_t s = size_of(pt);
    return s > 0 ? s : 1;
  }

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
  int object_of(const clang::VarDecl* vd) {
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

  AtomId work_item_atom(const char* fn, unsigned dim) {
    const std::string name = std::string(fn) + "(" + std::to_string(dim) + ")";
    Deps d;
    d.wi = uint8_t(1u << dim);
    return atoms_.intern(AtomKind::work_item, name, name, d, false);
  }
  AtomId launch_atom(const std::string& name, bool renderable) {
    return atoms_.intern(AtomKind::launch, name, name, Deps{}, renderable);
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Environment
  void set_whole(const clang::Decl* d, const Val& v) {
    auto it = env_.lower_bound(EnvKey{d, INT32_MIN});
    while (it != env_.end() && it->first.d == d) it = env_.erase(it);
    env_[EnvKey{d, -1}] = v;
  }

  Val get(const EnvKey& k) {
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
    } else if (const auto* pd = llvm::dyn_cast_or_null<clang::ParmVarDecl>(vd);
               pd && pd->getDeclContext() == kernel_) {
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

  std::string component_name(clang::QualType t, int sub) const {
    if (sub >= 1000) return "s" + std::to_string(sub - 1000);
    if (const auto* rt = t->getAs<clang::RecordType>()) {
      for (const auto* f : rt->getDecl()->fields())
        if (int(f->getFieldIndex()) == sub) return f->getName().str();
    }
    return "s" + std::to_string(sub);
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Memory accesses and their classification
  Pattern classify(const Val& addr, int64_t size) const {
    if (addr.p.bad()) return Pattern::random;
    const bool in_loop = !loop_stack_.empty();
    const int loop = in_loop ? loop_stack_.back() : -1;
    const AtomId iter = in_loop ? loops_[size_t(loop)].iter : 0;
    auto varies = [&](AtomId a) {
      return in_loop ? atoms_[a].deps.has_loop(loop) : (atoms_[a].deps.wi & 1u) != 0;
    };
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

  Space resolve_space(Space s, const Val& addr) const {
    if (s != Space::unknown) return s;
    for (int b : addr.bases)
      if (b >= 0 && size_t(b) < objects_.size()) return objects_[size_t(b)].space;
    return Space::global;
  }

  void record(const LV& l, Access kind, const Pattern* forced = nullptr) {
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
          case Pattern::constant: ++out_.mem_constant; break;
          case Pattern::continuous: ++out_.mem_continuous; break;
          case Pattern::stride: ++out_.mem_stride; break;
          case Pattern::random: ++out_.mem_random; break;
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

  /// A pointer passed to a function whose body is unknown: assume it reads and writes.
  void escape_pointer(const Val& v, clang::SourceLocation loc = {}) {
    if (dry_ || !v.ptr) return;
    fp_escape(v, loc, "pointer passed to a function that is not analysed");
    for (int b : v.bases) {
      if (b < 0 || size_t(b) >= objects_.size() || objects_[size_t(b)].arg < 0) continue;
      auto& a = out_.args[size_t(objects_[size_t(b)].arg)];
      a.read = a.write = true;
    }
  }

  Val load(const LV& l) {
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

  void assign(const LV& l, const Val& v) {
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

  Val address_of(const LV& l) {
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

  // ---------------------------------------------------------------------------------------------------------------
  // Arithmetic
  void count_arith(clang::QualType t, bool bitwise) {
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

  Val quotient(const Val& a, const Val& b) {
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
      const bool simple = p.terms().size() == 1 && p.terms().begin()->second > 0 &&
                          p.terms().begin()->first.size() <= 1;
      return simple ? s : "(" + s + ")";
    };
    const std::string name = "(" + paren(a.p) + "/" + paren(b.p) + ")";
    const AtomId q = atoms_.intern(AtomKind::quot, "q:" + a.p.key() + "/" + b.p.key(), name, d, renderable);
    quots_.emplace(q, std::make_pair(a.p, b.p));
    return Val{Poly::atom(q), {}, false};
  }

  /// Integer / pointer arithmetic on symbolic values. Floating-point results are opaque (only their dependences
  /// matter).
  Val arith(clang::BinaryOperatorKind op, const Val& a, const Val& b, clang::QualType lt, clang::QualType rt,
            clang::QualType result) {
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

  // ---------------------------------------------------------------------------------------------------------------
  // Expressions
  Val rv(const clang::Expr* e) {
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
        const Val a = rv(c->getTrueExpr());
        const Val b = rv(c->getFalseExpr());
        return merge(a, b, deps(cond));
      }
      case clang::Stmt::UnaryExprOrTypeTraitExprClass: {
        clang::Expr::EvalResult r;
        if (!e->isValueDependent() && !e->containsErrors() && e->EvaluateAsInt(r, ctx_) && r.Val.isInt() &&
            r.Val.getInt().getMinSignedBits() <= 63)
          return constant(r.Val.getInt().getSExtValue());
        return opaque(Deps{});
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

  /// A glvalue where a value is wanted but Clang put no lvalue-to-rvalue conversion: operands of expressions that
  /// contain errors (Sema skips conversions there) and discarded expressions (`a[i];`, which C defines as a read).
  /// Memory is read: a load.
  Val value_of_glvalue(const clang::Expr* e) {
    const LV l = lv(e);
    if (l.kind == LV::Kind::var) return get(l.key);
    if (l.kind == LV::Kind::mem && !l.type.isNull() && !l.type->isArrayType() && !l.type->isFunctionType())
      return load(l);
    return opaque(l.kind == LV::Kind::mem ? deps(l.addr) : l.deps);
  }

  /// .x / .field of an rvalue (a call's result, a vector literal): same dependences as the whole.
  Val rvalue_component(const clang::Expr* e) {
    const clang::Expr* base = nullptr;
    if (const auto* m = llvm::dyn_cast<clang::MemberExpr>(e)) base = m->getBase();
    if (const auto* v = llvm::dyn_cast<clang::ExtVectorElementExpr>(e)) base = v->getBase();
    if (!base) return generic(e);
    const Val b = rv(base);
    return opaque(deps(b));
  }

  /// Any other expression: evaluate the children (their memory and arithmetic operations count), result opaque.
  Val generic(const clang::Stmt* s) {
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

  /// What Clang kept of an erroneous expression. An undeclared identifier (a macro the file does not define, a
  /// constant from a missing header) becomes a named launch-time symbol, so trip counts stay symbolic.
  Val recovery(const clang::RecoveryExpr* e) {
    if (e->child_begin() == e->child_end()) {
      const auto range = clang::CharSourceRange::getTokenRange(e->getSourceRange());
      const auto text = clang::Lexer::getSourceText(range, sm_, ctx_.getLangOpts()).str();
      const bool ident = !text.empty() && text.size() < 64 &&
                         (std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_') &&
                         std::all_of(text.begin(), text.end(), [](char c) {
                           return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                         });
      if (ident)
        return Val{Poly::atom(atoms_.intern(AtomKind::symbol, "symbol:" + text, text, Deps{}, true)), {}, false};
    }
    return generic(e);
  }

  Val cast(const clang::CastExpr* c) {
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

  LV lv(const clang::Expr* e) {
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
        const bool folded = t->isIntegerType() && vd->getInit() &&
                            (sp == Space::constant || t.isConstQualified());
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
      l.addr = checked(Val{base.p + idx.p * Poly::constant(esize > 0 ? esize : 1), base.bases, true},
                       deps2(base, idx));
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
          l.addr = checked(Val{base.addr.p + Poly::constant(int64_t(idx[0]) * esize), base.addr.bases, true},
                           deps(base.addr));
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

  void count_branch(const Val& cond) {
    if (dry_) return;
    ++out_.branches;
    if (deps(cond).wi) ++out_.branches_divergent;
  }

  Val unary(const clang::UnaryOperator* u) {
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

  Val binary(const clang::BinaryOperator* b) {
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
      const bool bitwise = bop == clang::BO_Shl || bop == clang::BO_Shr || bop == clang::BO_And ||
                           bop == clang::BO_Or || bop == clang::BO_Xor;
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
    const Val c = rv(rhs);
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

  // ---------------------------------------------------------------------------------------------------------------
  // Calls: builtins by name, helper functions inlined
  Val call(const clang::CallExpr* ce) {
    const clang::FunctionDecl* fd = ce->getDirectCallee();
    if (!fd) {
      // Undeclared function (compile error) or call through a pointer: arguments count, effects unknown.
      Deps d;
      d.merge(deps(rv(ce->getCallee())));
      for (const clang::Expr* a : ce->arguments()) {
        const Val v = rv(a);
        escape_pointer(v, ce->getBeginLoc());
        d.merge(deps(v));
      }
      return opaque(d);
    }
    const clang::FunctionDecl* def = nullptr;
    if (fd->hasBody(def) && def && def->getBody()) return inline_call(def, ce);
    const std::string name = callee_name(fd);
    const unsigned n = ce->getNumArgs();
    auto arg = [&](unsigned i) -> const clang::Expr* { return i < n ? ce->getArg(i) : nullptr; };

    // Work-item functions.
    static const char* id_fns[] = {"get_global_id", "get_local_id"};
    for (const char* f : id_fns) {
      if (name != f) continue;
      const Val dim = rv(arg(0));
      if (dim.p.is_constant() && dim.p.constant_value() >= 0 && dim.p.constant_value() <= 2) {
        const auto d = unsigned(dim.p.constant_value());
        out_.work_dim = std::max<int64_t>(out_.work_dim, d + 1);
        return Val{Poly::atom(work_item_atom(f, d)), {}, false};
      }
      Deps all;
      all.wi = 7;
      out_.work_dim = std::max<int64_t>(out_.work_dim, 3);
      return opaque(all);
    }
    static const std::pair<const char*, const char*> launch_fns[] = {
        {"get_group_id", "group_id_"},         {"get_global_size", "global_size_"},
        {"get_local_size", "local_size_"},     {"get_num_groups", "num_groups_"},
        {"get_global_offset", "global_offset_"}, {"get_enqueued_local_size", "local_size_"}};
    for (const auto& [f, prefix] : launch_fns) {
      if (name != f) continue;
      const Val dim = rv(arg(0));
      if (dim.p.is_constant() && dim.p.constant_value() >= 0 && dim.p.constant_value() <= 2) {
        const auto d = unsigned(dim.p.constant_value());
        out_.work_dim = std::max<int64_t>(out_.work_dim, d + 1);
        const bool renderable = std::strcmp(prefix, "group_id_") != 0;
        return Val{Poly::atom(launch_atom(prefix + std::to_string(d), renderable)), {}, false};
      }
      return opaque(Deps{});
    }
    if (name == "get_work_dim") return Val{Poly::atom(launch_atom("work_dim", true)), {}, false};
    if (name == "get_global_linear_id" || name == "get_local_linear_id") {
      Deps all;
      all.wi = 7;
      return opaque(all);
    }

    if (name == "barrier" || name == "work_group_barrier") {
      for (unsigned i = 0; i < n; ++i) rv(arg(i));
      if (!dry_) ++out_.barriers;
      return opaque(Deps{});
    }
    if (starts_with(name, "vload") || starts_with(name, "vstore")) return vector_memory(name, ce);
    if (starts_with(name, "atomic_") || starts_with(name, "atom_")) {
      if (n > 0 && arg(0)->getType()->isPointerType()) {
        const Val p = rv(arg(0));
        Deps d = deps(p);
        for (unsigned i = 1; i < n; ++i) {
          const Val v = rv(arg(i));
          d.merge(deps(v));
          if (v.ptr && !dry_) fp_escape(v, ce->getBeginLoc(), "pointer passed to '" + name + "'");
        }
        LV l;
        l.loc = ce->getBeginLoc();
        l.kind = LV::Kind::mem;
        l.addr = p;
        l.type = arg(0)->getType()->getPointeeType();
        l.space = space_of(l.type.getAddressSpace());
        l.size = size_of(l.type);
        const bool pure_load = name == "atomic_load" || starts_with(name, "atomic_load_explicit");
        const bool pure_store = name == "atomic_store" || starts_with(name, "atomic_store_explicit") ||
                                name == "atomic_init";
        record(l, pure_load ? Access::load : (pure_store ? Access::store : Access::atomic));
        return opaque(d, /*loaded=*/true);
      }
    }
    if (name == "async_work_group_copy" || name == "async_work_group_strided_copy") {
      // One bulk copy: a load of the source and a store to the destination; the global side moves consecutive
      // elements (or elements `stride` apart).
      const Val dst = rv(arg(0));
      const Val src = rv(arg(1));
      for (unsigned i = 2; i < n; ++i) rv(arg(i));
      const Pattern p = name == "async_work_group_copy" ? Pattern::continuous : Pattern::stride;
      if (!dry_) {
        fp_escape(dst, ce->getBeginLoc(), "'" + name + "' copies a range the analysis does not bound");
        fp_escape(src, ce->getBeginLoc(), "'" + name + "' copies a range the analysis does not bound");
      }
      for (int side = 0; side < 2; ++side) {
        const clang::Expr* a = arg(unsigned(side));
        if (!a || !a->getType()->isPointerType()) continue;
        LV l;
        l.loc = ce->getBeginLoc();
        l.kind = LV::Kind::mem;
        l.addr = side == 0 ? dst : src;
        l.type = a->getType()->getPointeeType();
        l.space = space_of(l.type.getAddressSpace());
        l.size = size_of(l.type);
        record(l, side == 0 ? Access::store : Access::load, &p);
      }
      return opaque(Deps{});
    }
    if (starts_with(name, "read_image") || starts_with(name, "write_image")) {
      Deps d;
      for (unsigned i = 0; i < n; ++i) {
        const Val v = rv(arg(i));
        d.merge(deps(v));
        if (i == 0 && !dry_)  // the image argument (its Val carries the kernel argument, through helpers too)
          for (int b : v.bases)
            if (b >= 0 && size_t(b) < objects_.size() && objects_[size_t(b)].arg >= 0)
              (name[0] == 'r' ? out_.args[size_t(objects_[size_t(b)].arg)].read
                              : out_.args[size_t(objects_[size_t(b)].arg)].write) = true;
      }
      if (!dry_) ++out_.image_ops;
      return opaque(d, true);
    }
    if (starts_with(name, "convert_") || starts_with(name, "as_")) {
      if (n == 1) {
        Val v = rv(arg(0));
        if (ce->getType()->isIntegerType() && !v.ptr) {
          check_narrowing(v, ce->getType(), ce->getBeginLoc(), name.find("_sat") != std::string::npos);
          return v;
        }
        return opaque(deps(v));
      }
    }

    // Everything else: evaluate the arguments; math builtins count as arithmetic.
    Deps d;
    bool unknown_fn = !(fd->isImplicit() || sm_.isInSystemHeader(fd->getLocation()) || fd->getBuiltinID() != 0);
    for (unsigned i = 0; i < n; ++i) {
      const Val v = rv(arg(i));
      d.merge(deps(v));
      if (unknown_fn)
        escape_pointer(v, ce->getBeginLoc());
      else if (v.ptr && !dry_ && name != "prefetch" && name != "printf")  // may write through it (fract, ...)
        fp_escape(v, ce->getBeginLoc(), "pointer passed to '" + name + "'");
    }
    const clang::QualType rt = ce->getType();
    if (is_float_math(name) && !rt.isNull() && rt->hasFloatingRepresentation()) {
      count_arith(rt, false);
      if (!dry_ && in_for_inc_ == 0) ++out_.arith_special;
    } else if (is_int_arith_builtin(name) && !rt.isNull() && rt->isIntegerType()) {
      count_arith(rt, false);
    } else if (unknown_fn && !dry_ && reported_.insert(fd).second) {
      note(ce->getBeginLoc(), Diagnostic::Severity::warning,
           "call to '" + name + "', which has no definition: its arguments are counted, its body is not "
           "(pointer arguments are assumed read and written)");
    }
    return opaque(d);
  }

  Val vector_memory(const std::string& name, const clang::CallExpr* ce) {
    // vloadN(offset, p), vload_halfN, vloadaN_half...: one access of N elements at p + offset*N.
    const bool is_load = starts_with(name, "vload");
    std::string rest = name.substr(is_load ? 5 : 6);
    if (starts_with(rest, "a_half"))
      rest = rest.substr(6);
    else if (starts_with(rest, "_half"))
      rest = rest.substr(5);
    int lanes = 0;
    size_t i = 0;
    while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i]))) lanes = lanes * 10 + (rest[i++] - '0');
    if (lanes == 0) lanes = 1;
    const unsigned n = ce->getNumArgs();
    const unsigned first = is_load ? 0 : 1;
    if (n < first + 2) return generic(ce);
    Deps d;
    if (!is_load) d.merge(deps(rv(ce->getArg(0))));
    const Val off = rv(ce->getArg(first));
    const Val p = rv(ce->getArg(first + 1));
    const clang::QualType pt = ce->getArg(first + 1)->getType();
    if (!pt->isPointerType()) return opaque(d);
    const int64_t esize = pointee_size(pt);
    const int64_t stride = int64_t(lanes == 3 && starts_with(name, is_load ? "vloada" : "vstorea") ? 4 : lanes);
    LV l;
    l.loc = ce->getBeginLoc();
    l.kind = LV::Kind::mem;
    l.addr = checked(Val{p.p + off.p * Poly::constant(stride * esize), p.bases, true}, deps2(p, off));
    l.type = is_load ? ce->getType() : ce->getArg(0)->getType();
    l.space = space_of(pt->getPointeeType().getAddressSpace());
    l.size = int64_t(lanes) * esize;
    record(l, is_load ? Access::load : Access::store);
    d.merge(deps(l.addr));
    return opaque(d, is_load);
  }

  Val inline_call(const clang::FunctionDecl* def, const clang::CallExpr* ce) {
    std::vector<Val> args;
    Deps all;
    for (const clang::Expr* a : ce->arguments()) {
      args.push_back(rv(a));
      all.merge(deps(args.back()));
    }
    const bool recursive = std::any_of(frames_.begin(), frames_.end(), [&](const Frame* f) { return f->fn == def; });
    if (dry_ || recursive || frames_.size() > kMaxCallDepth || inlined_ >= kMaxInlined) {
      if (!dry_ && (recursive || frames_.size() > kMaxCallDepth || inlined_ >= kMaxInlined) &&
          reported_.insert(def).second) {
        out_.complete = false;
        note(ce->getBeginLoc(), Diagnostic::Severity::warning,
             "call to '" + callee_name(def) + "' not analysed (recursion or inlining limit)");
      }
      for (const Val& v : args) escape_pointer(v, ce->getBeginLoc());
      return opaque(all);
    }
    ++inlined_;
    ++out_.calls_inlined;
    for (unsigned i = 0; i < def->getNumParams(); ++i)
      set_whole(def->getParamDecl(i), i < args.size() ? args[i] : opaque(Deps{}));
    Frame f;
    f.fn = def;
    frames_.push_back(&f);
    stmt(def->getBody());
    frames_.pop_back();
    if (f.returns.empty()) return opaque(all);
    Val r = f.returns[0];
    for (size_t i = 1; i < f.returns.size(); ++i) r = merge(r, f.returns[i], Deps{});
    return r;
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Statements
  void stmt(const clang::Stmt* s) {
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

  void declare(const clang::VarDecl* vd) {
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

  /// After an if/switch: variables that differ between the paths get a merged (opaque) value that also depends on
  /// the condition (control dependence, for divergence).
  void merge_env(const Env& other, const Deps& cond) {
    for (const auto& [k, v] : other) {
      auto it = env_.find(k);
      if (it == env_.end()) {
        env_.emplace(k, v);
      } else if (!(it->second.p == v.p && it->second.bases == v.bases && it->second.ptr == v.ptr)) {
        it->second = merge(it->second, v, cond);
      }
    }
  }

  // --- loops -------------------------------------------------------------------------------------------------------
  /// Pre-scan of a loop: every assignment to a variable, whether it is unconditional, its right-hand side and the
  /// conditions it is under (for the work-item dependences of the variable, see loop_variant_wi()).
  void scan(const clang::Stmt* s, bool conditional, LoopScan& sc, int depth) {
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

  /// Work-item dimensions an expression may depend on, given the loop-variant variables' current estimates `wi`.
  uint8_t syntactic_wi(const clang::Stmt* s, const LoopScan& sc, const std::map<EnvKey, uint8_t>& wi, int depth) {
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

  /// For each variable the loop changes (other than induction variables), the work-item dimensions its value may
  /// depend on: a fixpoint over its assignments' right-hand sides and enclosing conditions (flow-insensitive).
  std::map<EnvKey, uint8_t> loop_variant_wi(const LoopScan& sc) {
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

  static bool refers_to(const clang::Stmt* s, const clang::VarDecl* v, int depth = 0) {
    if (!s || !v || depth > kMaxDepth) return s != nullptr && v != nullptr;
    if (const auto* dr = llvm::dyn_cast<clang::DeclRefExpr>(s))
      if (dr->getDecl() == v) return true;
    for (const clang::Stmt* c : s->children())
      if (refers_to(c, v, depth + 1)) return true;
    return false;
  }

  /// Does `e` read a variable the loop assigns (so it is not loop-invariant)?
  bool reads_updated(const clang::Stmt* s, const LoopScan& sc, int depth = 0) const {
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

  void loop(const clang::Stmt* s, const clang::Expr* cond, const clang::Expr* inc, const clang::Stmt* body,
            bool is_do) {
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
      bool ind = !overflow && u.count == 1 && !u.conditional && u.induction_form && !u.escaped &&
                 !reads_updated(u.step, sc);
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
          loops_[size_t(id)].fp_unsafe =
              "a continue in the loop at line " + std::to_string(loops_[size_t(id)].info.line) +
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

  TripCount trip_count(int id, const clang::Expr* cond, const LoopScan& sc,
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
        case clang::BO_LT: op = clang::BO_GT; break;
        case clang::BO_GT: op = clang::BO_LT; break;
        case clang::BO_LE: op = clang::BO_GE; break;
        case clang::BO_GE: op = clang::BO_LE; break;
        default: break;
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

  void collect_symbols(AtomId a, std::set<std::string>& out) const {
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


  // ---------------------------------------------------------------------------------------------------------------
  // Memory footprint (docs/features.md): accesses through global/constant pointer arguments as byte-offset
  // polynomials, and ranges of the atoms they use. Anything that cannot be bounded makes the argument (or, for
  // control flow the analysis does not model, every argument) "whole".
  struct FpAccess {
    Poly addr;
    int64_t size = 0;
    bool write = false;
    clang::SourceLocation loc;
  };
  struct ARange {
    bool ok = false;
    std::string lo, hi;
    bool point = false;         ///< one value per launch (lo == hi)
    bool nonneg = false;        ///< every value is >= 0
    std::string why;
  };
  static constexpr size_t kMaxFpAccesses = 256;

  std::string loc_str(clang::SourceLocation loc) const {
    if (loc.isInvalid()) loc = kernel_->getLocation();
    if (loc.isValid()) {
      const auto p = sm_.getPresumedLoc(sm_.getFileLoc(loc));
      if (p.isValid()) return std::string(p.getFilename()) + ":" + std::to_string(p.getLine());
    }
    return out_.file;
  }
  bool fp_arg(int b) const {
    if (b < 0 || size_t(b) >= objects_.size()) return false;
    const MemObj& o = objects_[size_t(b)];
    return o.arg >= 0 && size_t(o.arg) < out_.args.size() && out_.args[size_t(o.arg)].is_pointer &&
           (o.space == Space::global || o.space == Space::constant);
  }
  void fp_mark(int arg, clang::SourceLocation loc, const std::string& why) {
    if (arg < 0 || size_t(arg) >= fp_whole_.size() || !fp_whole_[size_t(arg)].empty()) return;
    fp_whole_[size_t(arg)] = loc_str(loc) + ": " + why;
  }
  void fp_poison(clang::SourceLocation loc, const std::string& why) {
    if (fp_poison_.empty()) fp_poison_ = loc_str(loc) + ": " + why;
  }
  /// A pointer used in a way the footprint does not follow: its arguments are whole; one of unknown origin that may
  /// point to global memory makes every argument whole.
  void fp_escape(const Val& v, clang::SourceLocation loc, const std::string& why) {
    bool any = false;
    for (int b : v.bases)
      if (fp_arg(b)) {
        fp_mark(objects_[size_t(b)].arg, loc, why);
        any = true;
      }
    if (!any && v.bases.empty()) fp_poison(loc, why + " (a pointer of unknown origin)");
  }
  void fp_record(const LV& l, Space space, Access kind) {
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
        for (int w = 0; w < 2; ++w) {
          if ((w == 0 && kind == Access::store) || (w == 1 && kind == Access::load)) continue;
          const bool dup = std::any_of(list.begin(), list.end(), [&](const FpAccess& x) {
            return x.write == (w == 1) && x.size == l.size && x.addr == l.addr.p;
          });
          if (dup) continue;
          if (list.size() >= kMaxFpAccesses) {
            fp_mark(a, l.loc, "more than " + std::to_string(kMaxFpAccesses) + " distinct accesses");
            break;
          }
          list.push_back(FpAccess{l.addr.p, l.size, w == 1, l.loc});
        }
      }
    }
    if (!any && l.addr.bases.empty() &&
        (space == Space::global || space == Space::constant || space == Space::unknown))
      fp_poison(l.loc, "access through a pointer of unknown origin");
  }
  /// A store through a pointer to a tracked variable (p = &x; *p = v): x's value is no longer known.
  void forget_pointees(const Val& addr) {
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
  /// An integer conversion to fewer than 32 bits (or a saturating one) may change the value; the footprint assumes
  /// index arithmetic does not wrap, so a wrapped value that is not already opaque makes every argument whole.
  void check_narrowing(const Val& v, clang::QualType t, clang::SourceLocation loc, bool saturating = false) {
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
  void check_case(const clang::Stmt* s) {
    if (switch_entry_.empty()) return;
    const auto& [before, loops] = switch_entry_.back();
    bool same = loops == loop_stack_.size();
    for (auto it = before->begin(); same && it != before->end(); ++it) {
      auto e = env_.find(it->first);
      same = e != env_.end() && e->second.p == it->second.p && e->second.bases == it->second.bases;
    }
    if (!same) fp_poison(s->getBeginLoc(), "a switch case reached with values an earlier case changed");
  }
  static bool has_continue(const clang::Stmt* s, int depth) {
    if (!s) return false;
    if (depth > kMaxDepth) return true;
    if (llvm::isa<clang::ContinueStmt>(s)) return true;
    if (llvm::isa<clang::ForStmt>(s) || llvm::isa<clang::WhileStmt>(s) || llvm::isa<clang::DoStmt>(s)) return false;
    for (const clang::Stmt* c : s->children())
      if (has_continue(c, depth + 1)) return true;
    return false;
  }
  /// c * a product of launch sizes (global_size_d, local_size_d, num_groups_d), c > 0: positive at launch.
  bool positive_launch(const Poly& p) const {
    if (p.bad() || p.terms().size() != 1) return false;
    const auto& [m, c] = *p.terms().begin();
    if (c <= 0 || m.empty()) return false;
    for (AtomId a : m) {
      const auto& at = atoms_[a];
      if (at.kind != AtomKind::launch || !(starts_with(at.name, "global_size_") ||
                                           starts_with(at.name, "local_size_") || starts_with(at.name, "num_groups_")))
        return false;
    }
    return true;
  }
  static bool launch_size_name(const std::string& n) {
    return starts_with(n, "global_size_") || starts_with(n, "local_size_") || starts_with(n, "num_groups_") ||
           starts_with(n, "global_offset_") || n == "work_dim";
  }

  static std::string fp_term(int64_t c, const std::vector<std::string>& factors, bool first) {
    std::string t;
    int64_t mag = c;
    if (!first) {
      t = c < 0 ? " - " : " + ";
      if (c < 0) mag = c == INT64_MIN ? c : -c;
    }
    bool need_coef = factors.empty() || mag != 1;
    if (first && c == -1 && !factors.empty()) {
      t = "-";
      need_coef = false;
    }
    if (need_coef) t += std::to_string(mag);
    for (size_t i = 0; i < factors.size(); ++i) t += (need_coef || i > 0 ? "*" : "") + factors[i];
    return t;
  }

  /// Lower (upper = false) or upper bound of p over the atoms' ranges, as an expression; nullopt (why set) when a
  /// monomial is not bounded this way. `nonneg`: p >= 0 everywhere.
  std::optional<std::string> fp_bound(const Poly& p, bool upper, int depth, bool& nonneg, std::string& why) {
    nonneg = true;
    if (p.bad()) {
      why = "value is not a polynomial";
      return std::nullopt;
    }
    std::string out;
    std::vector<std::pair<int64_t, std::vector<std::string>>> terms;
    for (const auto& [m, c] : p.terms()) {
      std::vector<std::string> factors;
      const ARange* ranged = nullptr;
      bool points_nonneg = true;
      for (AtomId a : m) {
        const ARange& r = atom_range(a, depth + 1);
        if (!r.ok) {
          why = r.why;
          return std::nullopt;
        }
        if (r.point) {
          factors.push_back(r.lo);
          points_nonneg = points_nonneg && r.nonneg;
        } else if (ranged) {
          why = "a bound needs a product of varying values";
          return std::nullopt;
        } else {
          ranged = &r;
        }
      }
      if (ranged) {
        if (!points_nonneg) {
          why = "a bound needs the sign of a kernel argument";
          return std::nullopt;
        }
        factors.push_back("(" + ((c > 0) == upper ? ranged->hi : ranged->lo) + ")");
        nonneg = nonneg && c > 0 && ranged->nonneg;
      } else {
        nonneg = nonneg && c > 0 && points_nonneg;
      }
      terms.emplace_back(c, std::move(factors));
    }
    // Constant term last.
    std::stable_sort(terms.begin(), terms.end(), [](const auto& a, const auto& b) {
      return !a.second.empty() && b.second.empty();
    });
    for (size_t i = 0; i < terms.size(); ++i) out += fp_term(terms[i].first, terms[i].second, i == 0);
    return out.empty() ? std::string("0") : out;
  }
  std::optional<std::string> fp_point(const Poly& p, int depth) {
    bool nn = false;
    std::string why;
    return fp_bound(p, true, depth, nn, why);
  }

  const ARange& atom_range(AtomId a, int depth) {
    auto it = fp_ranges_.find(a);
    if (it != fp_ranges_.end()) return it->second;
    ARange& r = fp_ranges_[a];
    r.why = "a value nested too deeply";  // also what a cycle would see
    if (depth > 24) return r;
    ARange v;
    const auto& at = atoms_[a];
    const std::string& n = at.name;
    auto dim = [&]() -> std::string {
      const auto o = n.rfind('(');
      return o == std::string::npos || o + 2 > n.size() ? std::string("0") : n.substr(o + 1, 1);
    };
    switch (at.kind) {
      case AtomKind::work_item:
        v.ok = v.nonneg = true;
        if (starts_with(n, "get_global_id(")) {
          v.lo = "gid_lo_" + dim();
          v.hi = "gid_hi_" + dim();
        } else {
          v.lo = "0";
          v.hi = "local_size_" + dim() + "-1";
        }
        break;
      case AtomKind::launch:
        if (starts_with(n, "group_id_")) {
          v.ok = v.nonneg = true;
          v.lo = "group_lo_" + n.substr(9);
          v.hi = "group_hi_" + n.substr(9);
        } else if (launch_size_name(n)) {
          v.ok = v.nonneg = v.point = true;
          v.lo = v.hi = n;
        } else {
          v.why = "address depends on '" + n + "'";
        }
        break;
      case AtomKind::param:
        if (int_params_.count(a)) {
          v.ok = v.point = true;
          v.lo = v.hi = n;
        } else {
          v.why = "address depends on '" + n + "', which is not an integer kernel argument";
        }
        break;
      case AtomKind::symbol:
        v.why = "address depends on '" + n + "', whose value the analysis does not know";
        break;
      case AtomKind::opaque:
        v.why = at.loaded ? "address depends on a loaded value"
                          : "address depends on a value the analysis does not track (merged at a branch, changed "
                            "in a loop, or not a polynomial)";
        break;
      case AtomKind::iter: {
        const LoopRec* lr = nullptr;
        for (const auto& l : loops_)
          if (l.iter == a) lr = &l;
        if (!lr) {
          v.why = "unknown loop";
          break;
        }
        const std::string line = std::to_string(lr->info.line);
        if (!lr->fp_unsafe.empty()) {
          v.why = lr->fp_unsafe;
        } else if (lr->info.trip.kind == TripCount::Kind::constant) {
          v.ok = v.nonneg = true;
          v.lo = "0";
          v.hi = std::to_string(std::max<int64_t>(lr->info.trip.value, 1) - 1);
        } else if (lr->fp_known) {
          bool nn = false;
          std::string why;
          const Poly num = lr->fp_num, den = lr->fp_den;
          const auto u = fp_bound(num, true, depth, nn, why);
          const auto d = fp_point(den, depth);
          if (!u || !d) {
            v.why = "the trip count of the loop at line " + line + " cannot be bounded (" + why + ")";
          } else {
            v.ok = v.nonneg = true;
            v.lo = "0";
            v.hi = *d == "1" ? "(" + *u + ")-1" : "(" + *u + ")/(" + *d + ")-1";
          }
        } else {
          v.why = "the loop at line " + line + " has an unknown trip count";
        }
        break;
      }
      case AtomKind::quot: {
        auto q = quots_.find(a);
        if (q == quots_.end()) {
          v.why = "address depends on a quotient";
          break;
        }
        const Poly num = q->second.first, den = q->second.second;
        bool nn_lo = false, nn_hi = false;
        std::string why;
        const auto lo = fp_bound(num, false, depth, nn_lo, why);
        const auto hi = lo ? fp_bound(num, true, depth, nn_hi, why) : std::nullopt;
        if (!lo || !hi) {
          v.why = "address depends on the quotient " + n + ", which cannot be bounded (" + why + ")";
          break;
        }
        std::optional<std::string> d;
        if (den.is_constant() && den.constant_value() > 0)
          d = std::to_string(den.constant_value());
        else if (positive_launch(den))
          d = fp_point(den, depth);
        if (d) {
          // floor or truncation (>>, & and / share the atom): both lie in [lo/d - 1, hi/d], exactly [lo/d, hi/d]
          // for a non-negative numerator.
          v.ok = true;
          v.nonneg = nn_lo;
          v.lo = "(" + *lo + ")/(" + *d + ")" + (nn_lo ? "" : "-1");
          v.hi = "(" + *hi + ")/(" + *d + ")";
        } else if (nn_lo) {
          v.ok = true;  // |a / b| <= a for a >= 0 and any non-zero b
          v.lo = "-(" + *hi + ")";
          v.hi = "(" + *hi + ")";
        } else {
          v.why = "address depends on the quotient " + n + " by a value of unknown sign";
        }
        break;
      }
    }
    r = std::move(v);
    return r;
  }

  void footprint() {
    Footprint& fp = out_.footprint;
    std::map<std::string, AtomId> names;
    std::map<AtomId, std::string> named;
    auto name_of = [&](AtomId a) {
      auto it = named.find(a);
      if (it != named.end()) return it->second;
      std::string n = atoms_[a].name.empty() ? "v" + std::to_string(a) : atoms_[a].name;
      if (names.count(n)) n += "#" + std::to_string(a);
      names[n] = a;
      named[a] = n;
      return n;
    };
    for (size_t i = 0; i < out_.args.size() && i < objects_.size(); ++i) {
      if (!fp_arg(int(i))) continue;
      ArgFootprint af;
      af.name = out_.args[i].name;
      if (!out_.complete || stopped_) {
        af.whole = true;
        af.why = loc_str({}) + ": the analysis of the kernel is incomplete";
      } else if (!fp_poison_.empty()) {
        af.whole = true;
        af.why = fp_poison_;
      } else if (!fp_whole_[i].empty()) {
        af.whole = true;
        af.why = fp_whole_[i];
      } else {
        for (const FpAccess& x : fp_acc_[i]) {
          FootprintAccess fa;
          fa.write = x.write;
          fa.bytes = x.size;
          for (const auto& [m, c] : x.addr.terms()) {
            FootprintTerm t;
            t.coef = c;
            for (AtomId a : m) {
              const ARange& r = atom_range(a, 0);
              if (!r.ok) {
                af.whole = true;
                af.why = loc_str(x.loc) + ": " + r.why;
                break;
              }
              t.atoms.push_back(name_of(a));
            }
            if (af.whole) break;
            fa.terms.push_back(std::move(t));
          }
          if (af.whole) break;
          // constant term last
          std::stable_sort(fa.terms.begin(), fa.terms.end(), [](const FootprintTerm& p, const FootprintTerm& q) {
            return !p.atoms.empty() && q.atoms.empty();
          });
          af.accesses.push_back(std::move(fa));
        }
        if (af.whole) af.accesses.clear();
      }
      if (!af.whole)
        for (const auto& acc : af.accesses)
          for (const auto& t : acc.terms)
            for (const auto& an : t.atoms) {
              const ARange& r = atom_range(names.at(an), 0);
              fp.ranges[an] = {r.lo, r.hi};
            }
      fp.args.push_back(std::move(af));
    }
  }
  // ---------------------------------------------------------------------------------------------------------------
  void setup_args() {
    const auto& policy = ctx_.getPrintingPolicy();
    for (unsigned i = 0; i < kernel_->getNumParams(); ++i) {
      const clang::ParmVarDecl* pd = kernel_->getParamDecl(i);
      ArgInfo a;
      a.name = pd->getName().str();
      clang::QualType t = pd->getType();
      if (!t.isNull() && t.hasAddressSpace()) t = ctx_.removeAddrSpaceQualType(t);
      a.type = t.isNull() ? std::string("?") : t.getAsString(policy);
      MemObj o;
      o.arg = int(i);
      if (!t.isNull() && t->isPointerType()) {
        a.is_pointer = true;
        const Space sp = space_of(t->getPointeeType().getAddressSpace());
        o.space = sp == Space::unknown ? Space::global : sp;
        a.address_space = o.space == Space::global     ? "global"
                          : o.space == Space::constant ? "constant"
                          : o.space == Space::local    ? "local"
                                                       : "private";
        set_whole(pd, Val{Poly(), {int(i)}, true});
      } else if (!t.isNull() && (t->isImageType() || t->isSamplerT())) {
        a.address_space = t->isImageType() ? "image" : "sampler";
        o.space = Space::global;
        set_whole(pd, Val{Poly(), {int(i)}, false});  // opaque, but it knows its argument (for read/write flags)
      } else {
        a.address_space = "private";
        o.space = Space::priv;
      }
      objects_.push_back(o);
      out_.args.push_back(std::move(a));
    }
    fp_whole_.assign(out_.args.size(), std::string());
    fp_acc_.assign(out_.args.size(), {});
  }

  void finish() {
    out_.loop_depth = max_depth_;
    out_.loops = int64_t(loops_.size());
    for (const auto& l : loops_) {
      out_.loop_list.push_back(l.info);
      switch (l.info.trip.kind) {
        case TripCount::Kind::constant: ++out_.loops_constant_trip; break;
        case TripCount::Kind::symbolic: ++out_.loops_symbolic_trip; break;
        case TripCount::Kind::unknown: ++out_.loops_unknown_trip; break;
      }
    }
    for (const auto& a : out_.args) {
      if (!a.is_pointer || (a.address_space != "global" && a.address_space != "constant")) continue;
      if (a.read && a.write)
        ++out_.args_read_write;
      else if (a.read)
        ++out_.args_read_only;
      else if (a.write)
        ++out_.args_write_only;
    }
    bytes_expression();
    footprint();
  }

  /// global_bytes_per_item(_expr): sum over loop chains of bytes x trip counts.
  void bytes_expression() {
    std::map<std::vector<std::string>, double> terms;  // symbolic factors -> coefficient
    for (const auto& [chain, bytes] : bytes_) {
      double coeff = double(bytes);
      std::vector<std::string> factors;
      for (int l : chain) {
        const auto& trip = loops_[size_t(l)].info.trip;
        if (trip.kind == TripCount::Kind::constant) {
          coeff *= double(trip.value);
        } else if (trip.kind == TripCount::Kind::symbolic) {
          const bool simple = std::all_of(trip.expr.begin(), trip.expr.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
          });
          factors.push_back(simple ? trip.expr : "(" + trip.expr + ")");
        } else {
          factors.push_back("loop" + std::to_string(l));
        }
      }
      if (coeff != 0) terms[factors] += coeff;
    }
    double numeric = 0;
    bool symbolic = false;
    std::string expr;
    // Highest number of factors first, the constant term last.
    std::vector<std::pair<std::vector<std::string>, double>> ts(terms.begin(), terms.end());
    std::stable_sort(ts.begin(), ts.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    for (const auto& [factors, coeff] : ts) {
      if (factors.empty()) {
        numeric += coeff;
      } else {
        symbolic = true;
      }
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.0f", coeff);
      std::string term = buf;
      for (const auto& f : factors) term += "*" + f;
      if (!expr.empty()) expr += " + ";
      expr += term;
    }
    if (expr.empty()) expr = "0";
    out_.global_bytes_per_item_expr = expr;
    if (!symbolic) out_.global_bytes_per_item = numeric;
  }

  struct LoopRec {
    LoopInfo info;
    AtomId iter = 0;
    bool fp_known = false;  ///< the trip count is at most floor(fp_num / fp_den), fp_den > 0
    Poly fp_num, fp_den;
    std::string fp_unsafe;  ///< why the iteration counter cannot be bounded by the trip count
  };

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
  // footprint
  std::map<int, const clang::VarDecl*> object_vars_;
  std::vector<std::vector<FpAccess>> fp_acc_;  ///< per argument
  std::vector<std::string> fp_whole_;           ///< per argument: why it is whole (empty: not)
  std::string fp_poison_;                       ///< why every argument is whole (empty: none)
  std::map<AtomId, std::pair<Poly, Poly>> quots_;
  std::set<AtomId> int_params_;
  std::map<AtomId, ARange> fp_ranges_;
  std::vector<std::pair<const Env*, size_t>> switch_entry_;
};

}  // namespace

AnalysisResult analyze(std::string_view source, const std::string& file_name, const Options& options) {
  AnalysisResult result;
  frontend::ParseOptions po;
  po.build_options = options.build_options;
  po.time_limit_ms = options.time_limit_ms;
  po.guess_unknown_types = options.guess_unknown_types;
  auto parsed = frontend::parse(source, file_name, po);
  result.diagnostics = parsed->diagnostics();
  if (!parsed->ok()) return result;

  auto& ctx = parsed->context();
  const auto& sm = parsed->source_manager();
  const std::set<std::string> guessed(parsed->guessed_constants().begin(), parsed->guessed_constants().end());
  for (const clang::FunctionDecl* k : parsed->kernels()) {
    const std::string name = callee_name(k);
    if (!options.kernel.empty() && name != options.kernel) continue;
    KernelFeatures f;
    f.name = name;
    const auto p = sm.getPresumedLoc(sm.getFileLoc(k->getLocation()));
    if (p.isValid()) {
      f.file = p.getFilename();
      f.line = p.getLine();
    } else {
      f.file = file_name;
    }
    if (k->isInvalidDecl() || parsed->timed_out()) f.complete = false;
    // Errors inside the kernel's line range also make its features partial (Clang may have dropped statements).
    const auto end = sm.getPresumedLoc(sm.getFileLoc(k->getEndLoc()));
    for (const auto& d : parsed->diagnostics())
      if ((d.severity == Diagnostic::Severity::error || d.severity == Diagnostic::Severity::fatal) &&
          d.file == f.file && p.isValid() && end.isValid() && d.line >= p.getLine() && d.line <= end.getLine())
        f.complete = false;
    // The analysis asks Clang about types, layouts and constants of possibly broken code: run it crash-isolated too.
    KernelFeatures partial = f;
    // If the analysis crashes, the footprint still names every global/constant pointer argument (as whole).
    detail::run_safely([&] {
      for (const clang::ParmVarDecl* pd : k->parameters()) {
        const clang::QualType t = pd->getType();
        if (t.isNull() || !t->isPointerType()) continue;
        const auto as = t->getPointeeType().getAddressSpace();
        if (as == clang::LangAS::opencl_local || as == clang::LangAS::opencl_private) continue;
        ArgFootprint a;
        a.name = pd->getName().str();
        a.whole = true;
        a.why = f.file + ":" + std::to_string(f.line) + ": the analysis of the kernel crashed";
        partial.footprint.args.push_back(std::move(a));
      }
    });
    std::vector<Diagnostic> kernel_diags;
    const bool survived = detail::run_safely([&] {
      KernelAnalyzer a(ctx, k, f, kernel_diags, options.time_limit_ms, guessed);
      a.run();
    });
    if (!survived) {
      f = std::move(partial);
      f.complete = false;
      kernel_diags.push_back({Diagnostic::Severity::fatal, f.file, f.line, 0,
                              "internal error: the analysis of kernel '" + name +
                                  "' crashed; its features are missing (please report this kernel)"});
    }
    result.diagnostics.insert(result.diagnostics.end(), kernel_diags.begin(), kernel_diags.end());
    result.kernels.push_back(std::move(f));
  }
  return result;
}

}  // namespace dop::features
