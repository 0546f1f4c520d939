// Calls: OpenCL builtins by name (work-item functions, barriers, vector loads and stores, atomics, async copies,
// images, conversions, math), helper functions inlined at their call sites.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

#include <clang/Lex/Lexer.h>

#include "analyzer.hpp"

namespace dop::features::detail {

namespace {

bool is_float_math(const std::string& n0) {
  static const std::set<std::string> names = {
      "acos",   "acosh",     "acospi",        "asin",        "asinh",         "asinpi",   "atan",      "atan2",
      "atanh",  "atanpi",    "atan2pi",       "cbrt",        "ceil",          "copysign", "cos",       "cosh",
      "cospi",  "erfc",      "erf",           "exp",         "exp2",          "exp10",    "expm1",     "fabs",
      "fdim",   "floor",     "fma",           "fmax",        "fmin",          "fmod",     "fract",     "frexp",
      "hypot",  "ilogb",     "ldexp",         "lgamma",      "lgamma_r",      "log",      "log2",      "log10",
      "log1p",  "logb",      "mad",           "maxmag",      "minmag",        "modf",     "nextafter", "pow",
      "pown",   "powr",      "remainder",     "remquo",      "rint",          "rootn",    "round",     "rsqrt",
      "sin",    "sincos",    "sinh",          "sinpi",       "sqrt",          "tan",      "tanh",      "tanpi",
      "tgamma", "trunc",     "recip",         "divide",      "clamp",         "degrees",  "max",       "min",
      "mix",    "radians",   "step",          "smoothstep",  "sign",          "cross",    "dot",       "distance",
      "length", "normalize", "fast_distance", "fast_length", "fast_normalize"};
  std::string n = n0;
  if (starts_with(n, "native_"))
    n = n.substr(7);
  else if (starts_with(n, "half_"))
    n = n.substr(5);
  return names.count(n) > 0;
}

bool is_int_arith_builtin(const std::string& n) {
  static const std::set<std::string> names = {"mad24",   "mul24",   "mad_hi", "mul_hi", "mad_sat",
                                              "add_sat", "sub_sat", "hadd",   "rhadd",  "abs_diff"};
  return names.count(n) > 0;
}

}  // namespace

Val KernelAnalyzer::call(const clang::CallExpr* ce) {
  const clang::FunctionDecl* fd = ce->getDirectCallee();
  if (!fd) {
    // A function the file does not declare (the front end keeps its calls: frontend.cpp) or a call through a
    // pointer: its arguments count, its effects are unknown (pointer arguments are assumed read and written).
    const std::string callee =
        clang::Lexer::getSourceText(clang::CharSourceRange::getTokenRange(ce->getCallee()->getSourceRange()), sm_,
                                    ctx_.getLangOpts())
            .str();
    if (!dry_ && reported_calls_.insert(callee).second)
      note(ce->getBeginLoc(), Diagnostic::Severity::warning,
           "call to '" + callee +
               "', which is not declared: its arguments are counted, its body is not (pointer arguments are "
               "assumed read and written)");
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
      {"get_group_id", "group_id_"},           {"get_global_size", "global_size_"},
      {"get_local_size", "local_size_"},       {"get_num_groups", "num_groups_"},
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
      const bool pure_store =
          name == "atomic_store" || starts_with(name, "atomic_store_explicit") || name == "atomic_init";
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
         "call to '" + name +
             "', which has no definition: its arguments are counted, its body is not "
             "(pointer arguments are assumed read and written)");
  }
  return opaque(d);
}

Val KernelAnalyzer::vector_memory(const std::string& name, const clang::CallExpr* ce) {
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

Val KernelAnalyzer::inline_call(const clang::FunctionDecl* def, const clang::CallExpr* ce) {
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

}  // namespace dop::features::detail
