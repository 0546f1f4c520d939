// The malleable GPU form (Dopia Figs. 5-6) by source-to-source rewriting with
// Clang 15.
//
// The kernel's body becomes a per-item function `dop_item_<kernel>` with the
// kernel's parameters and the virtual item's local ids (dop_vl0..2) as extra
// parameters, so an early `return` ends only the current item. The kernel keeps
// its name, gains `int dop_gpu_mod, int dop_gpu_alloc`, and its new body runs
// that function for every item of the work-group in a strided loop over the
// active work-items. Helper functions that use get_local_id/get_global_id
// (directly or through their callees) are cloned as `dop_v_<name>` with the
// same extra parameters; the originals stay for other callers. Inside the
// per-item function and the clones, function-like macros map get_local_id,
// get_global_id, get_local_linear_id and get_global_linear_id to the virtual
// item's ids — also where the user's own macros expand to those builtins.
// Anything the loop would break (barriers, fences, __local memory, work-group
// and sub-group functions, device-side enqueue) is refused with the reason.
#include <clang/AST/ASTContext.h>
#include <clang/AST/Attr.h>
#include <clang/AST/Decl.h>
#include <clang/AST/Expr.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/AST/TypeLoc.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Rewrite/Core/Rewriter.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dop/frontend.hpp"
#include "dop/transform.hpp"

namespace dop::transform {

namespace {

using clang::SourceLocation;

constexpr const char* kVirtualParams = "size_t dop_vl0, size_t dop_vl1, size_t dop_vl2";
constexpr const char* kVirtualArgs = "dop_vl0, dop_vl1, dop_vl2";

// Helpers placed before the user's first line. They call the real builtins, so
// they are right with or without the runtime's range-form prelude (whose
// get_global_size/get_global_offset macros they then use, as intended).
constexpr const char* kHeader =
    R"CL(/* dop malleable form (Dopia Figs. 5-6): made by dop_transform; see docs/bundle.md */
static inline size_t dop_vlid(uint d, size_t l0, size_t l1, size_t l2) {
  return d == 0 ? l0 : d == 1 ? l1 : d == 2 ? l2 : 0;
}
static inline size_t dop_vgid(uint d, size_t l0, size_t l1, size_t l2) {
  return get_global_id(d) - get_local_id(d) + dop_vlid(d, l0, l1, l2);
}
static inline size_t dop_vglin(size_t l0, size_t l1, size_t l2) {
  return ((dop_vgid(2, l0, l1, l2) - get_global_offset(2)) * get_global_size(1) +
          (dop_vgid(1, l0, l1, l2) - get_global_offset(1))) * get_global_size(0) +
         (dop_vgid(0, l0, l1, l2) - get_global_offset(0));
}
#line 1
)CL";

constexpr const char* kMacrosOn = R"CL(
#undef get_local_id
#undef get_global_id
#undef get_local_linear_id
#undef get_global_linear_id
#define get_local_id(d) dop_vlid((d), dop_vl0, dop_vl1, dop_vl2)
#define get_global_id(d) dop_vgid((d), dop_vl0, dop_vl1, dop_vl2)
#define get_local_linear_id() ((dop_vl2 * get_local_size(1) + dop_vl1) * get_local_size(0) + dop_vl0)
#define get_global_linear_id() dop_vglin(dop_vl0, dop_vl1, dop_vl2)
)CL";

constexpr const char* kMacrosOff = R"CL(
#undef get_local_id
#undef get_global_id
#undef get_local_linear_id
#undef get_global_linear_id
#ifdef DOP_RANGE_GLOBAL_ID
#define get_global_id(d) DOP_RANGE_GLOBAL_ID(d)
#endif
)CL";

// The kernel's new body (Dopia Figs. 5-6 with a strided loop instead of the local work-list: no __local memory, no
// barrier). A work-item whose flattened local id f has f % mod < alloc is active, with rank
// f / mod * alloc + f % mod among the `active` ones; rank r runs the group's items r, r + active, ...
constexpr const char* kWrapper = R"CL({
  /* dop malleable form: work-items whose flattened local id % dop_gpu_mod < dop_gpu_alloc are active and run all
     items of the work-group in a strided loop */
  const size_t dop_l0 = get_local_size(0), dop_l1 = get_local_size(1), dop_l2 = get_local_size(2);
  const size_t dop_n = dop_l0 * dop_l1 * dop_l2;
  const size_t dop_f = (get_local_id(2) * dop_l1 + get_local_id(1)) * dop_l0 + get_local_id(0);
  const size_t dop_mod = dop_gpu_mod > 0 ? (size_t)dop_gpu_mod : 1;
  const size_t dop_alloc = dop_gpu_alloc < 1 ? 1 : (size_t)dop_gpu_alloc < dop_mod ? (size_t)dop_gpu_alloc : dop_mod;
  if (dop_f % dop_mod >= dop_alloc) return;
  const size_t dop_rest = dop_n % dop_mod;
  const size_t dop_active = dop_n / dop_mod * dop_alloc + (dop_rest < dop_alloc ? dop_rest : dop_alloc);
  for (size_t dop_v = dop_f / dop_mod * dop_alloc + dop_f % dop_mod; dop_v < dop_n; dop_v += dop_active)
    @CALL@dop_v % dop_l0, dop_v / dop_l0 % dop_l1, dop_v / (dop_l0 * dop_l1));
}
)CL";

bool is_id_builtin(const std::string& n) {
  return n == "get_local_id" || n == "get_global_id" || n == "get_local_linear_id" || n == "get_global_linear_id";
}

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// Why calling builtin `n` rules the malleable form out, or "" when it is fine.
std::string forbidden_builtin(const std::string& n) {
  if (n == "barrier" || n == "work_group_barrier" || n == "sub_group_barrier")
    return "the work-list loop would break it (the active work-items run the "
           "group's items one after another)";
  if (n == "mem_fence" || n == "read_mem_fence" || n == "write_mem_fence" || n == "atomic_work_item_fence")
    return "it orders memory between work-items of a group, which the "
           "work-list loop runs in another order";
  if (starts_with(n, "async_work_group") || n == "wait_group_events")
    return "it is a work-group collective copy, which every work-item of the "
           "group must reach";
  if (starts_with(n, "work_group_"))
    return "it is a work-group collective function, which every work-item of "
           "the group must reach";
  if (n.find("sub_group") != std::string::npos) return "sub-groups are not preserved by the work-list loop";
  if (starts_with(n, "enqueue_") || starts_with(n, "get_kernel_"))
    return "device-side enqueue is not supported by the transformation";
  return {};
}

bool has_local_address_space(clang::QualType t) {
  for (int depth = 0; depth < 16 && !t.isNull(); ++depth) {
    if (t.getAddressSpace() == clang::LangAS::opencl_local) return true;
    if (const auto* p = t->getAs<clang::PointerType>())
      t = p->getPointeeType();
    else if (const auto* a = t->getAsArrayTypeUnsafe())
      t = a->getElementType();
    else
      break;
  }
  return false;
}

struct Problem {
  SourceLocation loc;
  std::string what;  // "calls barrier()"
  std::string why;
};

struct CallSite {
  const clang::CallExpr* call;
  const clang::FunctionDecl* callee;  // definition
};

struct FnInfo {
  const clang::FunctionDecl* def = nullptr;
  std::vector<CallSite> calls;  // calls to functions defined in this translation unit
  bool uses_ids = false;        // calls get_local_id/get_global_id/... itself
  bool in_s = false;            // needs the virtual ids (itself or through a callee)
};

// Collects, for one function body, the calls and anything that rules the
// transformation out.
class BodyScan : public clang::RecursiveASTVisitor<BodyScan> {
 public:
  BodyScan(FnInfo& info, std::vector<Problem>& problems) : info_(info), problems_(problems) {}

  bool VisitCallExpr(clang::CallExpr* c) {
    const clang::FunctionDecl* callee = c->getDirectCallee();
    if (!callee) {
      problems_.push_back({c->getBeginLoc(), "makes an indirect call", "the call graph cannot be rewritten"});
      return true;
    }
    const std::string name = callee->getNameAsString();
    const clang::FunctionDecl* def = callee->getDefinition();
    if (def && def->hasBody()) {
      if (def->hasAttr<clang::OpenCLKernelAttr>()) {
        problems_.push_back(
            {c->getBeginLoc(), "calls kernel '" + name + "'", "kernel-to-kernel calls are not rewritten"});
        return true;
      }
      info_.calls.push_back({c, def});
      return true;
    }
    const auto& sm = callee->getASTContext().getSourceManager();
    const bool builtin = callee->isImplicit() || callee->getBuiltinID() != 0 ||
                         sm.isInSystemHeader(sm.getExpansionLoc(callee->getLocation()));
    if (!builtin) {
      problems_.push_back({c->getBeginLoc(), "calls '" + name + "', which has no definition in this file",
                           "what it does to the work-group cannot be checked"});
      return true;
    }
    if (is_id_builtin(name)) info_.uses_ids = true;
    const std::string why = forbidden_builtin(name);
    if (!why.empty()) problems_.push_back({c->getBeginLoc(), "calls " + name + "()", why});
    return true;
  }
  bool VisitVarDecl(clang::VarDecl* v) {
    if (has_local_address_space(v->getType()))
      problems_.push_back({v->getLocation(), "uses __local memory ('" + v->getNameAsString() + "')",
                           "the work-items of a group share it, and the work-list loop would "
                           "break that sharing"});
    return true;
  }
  bool VisitBlockExpr(clang::BlockExpr* b) {
    problems_.push_back({b->getBeginLoc(), "uses a block", "blocks are not rewritten"});
    return true;
  }

 private:
  FnInfo& info_;
  std::vector<Problem>& problems_;
};

class Transformer {
 public:
  Transformer(frontend::ParsedSource& parsed, const std::string& file, const std::string& kernel)
      : p_(parsed), sm_(parsed.source_manager()), file_(file), kernel_name_(kernel) {}

  Result run() {
    const clang::FunctionDecl* k = nullptr;
    std::string names;
    for (const auto* fd : p_.kernels()) {
      names += (names.empty() ? "" : ", ") + fd->getNameAsString();
      if (fd->getNameAsString() == kernel_name_) k = fd;
    }
    if (!k)
      return fail_plain(file_ + ": no kernel '" + kernel_name_ + "'" +
                        (names.empty() ? "" : " (kernels: " + names + ")"));
    kernel_ = k;
    if (!collect()) return fail();
    if (!rewrite()) return fail();
    Result r;
    r.ok = true;
    r.source = out_;
    return r;
  }

 private:
  frontend::ParsedSource& p_;
  clang::SourceManager& sm_;
  std::string file_, kernel_name_;
  const clang::FunctionDecl* kernel_ = nullptr;
  std::map<const clang::FunctionDecl*, FnInfo> fns_;  // the kernel and every function it reaches
  std::vector<const clang::FunctionDecl*> order_;     // in discovery order
  std::vector<Problem> problems_;
  std::string out_;

  std::string where(SourceLocation loc) const {
    if (loc.isValid()) {
      const auto pl = sm_.getPresumedLoc(sm_.getExpansionLoc(loc));
      if (pl.isValid()) return std::string(pl.getFilename()) + ":" + std::to_string(pl.getLine());
    }
    return file_;
  }
  Result fail_plain(const std::string& reason) const {
    Result r;
    r.reason = reason + "; the GPU runs unthrottled";
    return r;
  }
  Result fail() const {
    const Problem& pr = problems_.front();
    std::string r = where(pr.loc) + ": kernel '" + kernel_name_ + "' " + pr.what;
    if (!pr.why.empty()) r += ": " + pr.why;
    if (problems_.size() > 1)
      r += " (and " + std::to_string(problems_.size() - 1) + " more problem" + (problems_.size() > 2 ? "s" : "") + ")";
    return fail_plain(r);
  }
  void problem(SourceLocation loc, std::string what, std::string why = {}) {
    problems_.push_back({loc, std::move(what), std::move(why)});
  }

  // ---- analysis
  // ------------------------------------------------------------------------------------------------
  bool collect() {
    for (const auto* param : kernel_->parameters()) {
      if (has_local_address_space(param->getType()))
        problem(param->getLocation(), "takes a __local argument ('" + param->getNameAsString() + "')",
                "the work-items of a group share it, and the work-list loop "
                "would break that sharing");
      if (param->getName().empty()) problem(param->getLocation(), "has an unnamed parameter", "it cannot be passed on");
      if (starts_with(param->getNameAsString(), "dop_"))
        problem(param->getLocation(), "has a parameter named '" + param->getNameAsString() + "'",
                "names starting with dop_ are reserved for the transformation");
    }
    std::vector<const clang::FunctionDecl*> work{kernel_};
    while (!work.empty()) {
      const auto* f = work.back();
      work.pop_back();
      if (fns_.count(f)) continue;
      FnInfo& info = fns_[f];
      info.def = f;
      order_.push_back(f);
      const size_t before = problems_.size();
      BodyScan scan(info, problems_);
      scan.TraverseStmt(const_cast<clang::Stmt*>(f->getBody()));
      if (f != kernel_)  // say where a problem in a helper comes from
        for (size_t i = before; i < problems_.size(); ++i)
          problems_[i].what += " (in '" + f->getNameAsString() + "', which the kernel calls)";
      for (const auto& c : info.calls) work.push_back(c.callee);
    }
    if (!problems_.empty()) return false;
    // Which functions need the virtual ids: a fixed point over the call graph
    // (OpenCL C has no recursion).
    for (bool changed = true; changed;) {
      changed = false;
      for (auto& [f, info] : fns_) {
        bool need = info.uses_ids;
        for (const auto& c : info.calls) need = need || fns_.at(c.callee).uses_ids || fns_.at(c.callee).in_s;
        if (need && !info.in_s) {
          info.in_s = changed = true;
        }
      }
    }
    return true;
  }

  // ---- text positions
  // --------------------------------------------------------------------------------------------
  // The main-file offset where `loc` is spelled, when that is inside [lo, hi];
  // nullopt otherwise.
  std::optional<unsigned> spelled_in(SourceLocation loc, unsigned lo, unsigned hi) const {
    if (loc.isInvalid()) return std::nullopt;
    const SourceLocation s = sm_.getSpellingLoc(loc);
    if (!sm_.isWrittenInMainFile(s)) return std::nullopt;
    const unsigned off = sm_.getFileOffset(s);
    if (off < lo || off > hi) return std::nullopt;
    return off;
  }
  std::optional<unsigned> file_offset(SourceLocation loc) const {
    if (loc.isInvalid() || !loc.isFileID() || !sm_.isWrittenInMainFile(loc)) return std::nullopt;
    return sm_.getFileOffset(loc);
  }
  SourceLocation at(unsigned offset) const {
    return sm_.getLocForStartOfFile(sm_.getMainFileID()).getLocWithOffset(static_cast<int>(offset));
  }
  unsigned line_of(unsigned offset) const { return sm_.getPresumedLineNumber(at(offset)); }
  llvm::StringRef buffer() const { return sm_.getBufferData(sm_.getMainFileID()); }

  // A function definition's pieces as main-file offsets.
  struct Layout {
    unsigned begin = 0;  // first character of the declaration (specifiers)
    unsigned name = 0;   // the function's name
    unsigned lparen = 0, rparen = 0;
    unsigned lbrace = 0, rbrace = 0;
  };
  std::optional<Layout> layout(const clang::FunctionDecl* f) {
    Layout l;
    const auto* body = llvm::dyn_cast_or_null<clang::CompoundStmt>(f->getBody());
    const clang::FunctionTypeLoc ftl = f->getFunctionTypeLoc();
    auto b = file_offset(sm_.getExpansionLoc(f->getSourceRange().getBegin()));
    auto n = file_offset(f->getLocation());
    auto lp = ftl ? file_offset(ftl.getLParenLoc()) : std::nullopt;
    auto rp = ftl ? file_offset(ftl.getRParenLoc()) : std::nullopt;
    auto lb = body ? file_offset(body->getLBracLoc()) : std::nullopt;
    auto rb = body ? file_offset(body->getRBracLoc()) : std::nullopt;
    if (!b || !n || !lp || !rp || !lb || !rb || !(*b <= *n && *n < *lp && *lp < *rp && *rp < *lb && *lb < *rb)) {
      problem(f->getLocation(),
              f == kernel_ ? std::string("is not written out in this file (a "
                                         "macro or an #include makes it)")
                           : "calls '" + f->getNameAsString() + "', which a macro or an #include defines",
              "it cannot be rewritten");
      return std::nullopt;
    }
    l.begin = *b;
    l.name = *n;
    l.lparen = *lp;
    l.rparen = *rp;
    l.lbrace = *lb;
    l.rbrace = *rb;
    return l;
  }

  static std::string clone_name(const clang::FunctionDecl* f) { return "dop_v_" + f->getNameAsString(); }
  std::string item_name() const { return "dop_item_" + kernel_name_; }

  // ---- rewriting
  // -------------------------------------------------------------------------------------------------
  bool rewrite() {
    clang::Rewriter clones(sm_,
                           p_.lang_options());    // edits that make the clones'
                                                  // text (the original is kept)
    clang::Rewriter out(sm_, p_.lang_options());  // the final translation unit
    std::map<const clang::FunctionDecl*, Layout> lay;
    std::vector<const clang::FunctionDecl*> edited{kernel_};
    for (const auto* f : order_)
      if (f != kernel_ && fns_.at(f).in_s) edited.push_back(f);
    for (const auto* f : edited) {
      auto l = layout(f);
      if (!l) return false;
      lay[f] = *l;
    }
    const llvm::StringRef buf = buffer();

    // Clone signatures: new name, the virtual ids appended to the parameters.
    for (const auto* f : edited) {
      if (f == kernel_) continue;
      const Layout& l = lay[f];
      clones.ReplaceText(at(l.name), static_cast<unsigned>(f->getName().size()), clone_name(f));
      if (f->getNumParams() == 0)
        clones.ReplaceText(at(l.lparen + 1), l.rparen - l.lparen - 1, kVirtualParams);
      else
        clones.InsertTextBefore(at(l.rparen), std::string(", ") + kVirtualParams);
    }
    // Calls to functions that need the virtual ids: call the clone, pass the
    // ids on.
    for (const auto* f : edited) {
      const Layout& l = lay[f];
      std::set<unsigned> done;  // a call spelled once but expanded twice (a
                                // macro argument) is edited once
      for (const auto& c : fns_.at(f).calls) {
        if (!fns_.at(c.callee).in_s) continue;
        const auto* ref = llvm::dyn_cast<clang::DeclRefExpr>(c.call->getCallee()->IgnoreParenImpCasts());
        const auto name_off = ref ? spelled_in(ref->getLocation(), l.lbrace, l.rbrace) : std::nullopt;
        const auto rparen_off = spelled_in(c.call->getRParenLoc(), l.lbrace, l.rbrace);
        const std::string callee = c.callee->getNameAsString();
        if (!name_off || !rparen_off || buf.substr(*name_off, callee.size()) != callee || buf[*rparen_off] != ')') {
          problem(c.call->getBeginLoc(),
                  "calls '" + callee + "' (which uses work-item ids) through a macro" +
                      (f == kernel_ ? std::string() : " in '" + f->getNameAsString() + "'"),
                  "the call cannot be rewritten");
          return false;
        }
        if (!done.insert(*name_off).second) continue;
        clones.ReplaceText(at(*name_off), static_cast<unsigned>(callee.size()), clone_name(c.callee));
        clones.InsertTextBefore(at(*rparen_off),
                                c.call->getNumArgs() ? std::string(", ") + kVirtualArgs : std::string(kVirtualArgs));
      }
    }

    out.InsertText(sm_.getLocForStartOfFile(sm_.getMainFileID()), kHeader, true);
    // Clones: a prototype after the first declaration (when that is not the
    // definition), the definition after the original's, between the macros that
    // give the virtual ids.
    for (const auto* f : edited) {
      if (f == kernel_) continue;
      const Layout& l = lay[f];
      const std::string overloadable = f->hasAttr<clang::OverloadableAttr>() ? "__attribute__((overloadable)) " : "";
      const std::string signature =
          overloadable + clones.getRewrittenText(clang::SourceRange(at(l.begin), at(l.rparen)));
      const auto* first = f->getFirstDecl();
      if (first != f) {
        const auto first_end = file_offset(sm_.getExpansionLoc(first->getSourceRange().getEnd()));
        const size_t semi = first_end ? buf.find(';', *first_end) : llvm::StringRef::npos;
        if (semi == llvm::StringRef::npos) {
          problem(first->getLocation(), "declares '" + f->getNameAsString() + "' in a way that cannot be rewritten");
          return false;
        }
        out.InsertText(at(unsigned(semi + 1)), "\n" + signature + ";\n#line " + std::to_string(line_of(semi)) + "\n",
                       true);
      }
      const std::string text = std::string(kMacrosOn) + "#line " + std::to_string(line_of(l.begin)) + "\n" +
                               overloadable + clones.getRewrittenText(clang::SourceRange(at(l.begin), at(l.rbrace))) +
                               kMacrosOff + "#line " + std::to_string(line_of(l.rbrace)) + "\n";
      out.InsertText(at(l.rbrace + 1), text, true);
    }

    // The kernel: its body becomes dop_item_<kernel>; the kernel runs it for
    // every item of the group.
    const Layout& k = lay[kernel_];
    std::string params, args;
    if (kernel_->getNumParams() > 0) params = buf.substr(k.lparen + 1, k.rparen - k.lparen - 1).str() + ", ";
    for (const auto* param : kernel_->parameters()) args += param->getNameAsString() + ", ";
    const std::string item = std::string(kMacrosOn) + "static inline void " + item_name() + "(" + params +
                             kVirtualParams + ")\n#line " + std::to_string(line_of(k.lbrace)) + "\n" +
                             clones.getRewrittenText(clang::SourceRange(at(k.lbrace), at(k.rbrace))) + kMacrosOff +
                             "#line " + std::to_string(line_of(k.begin)) + "\n";
    // At the start of the kernel's line, so that the #line above is right and
    // directives start a line.
    unsigned line_start = k.begin;
    while (line_start > 0 && buf[line_start - 1] != '\n') --line_start;
    out.InsertText(at(line_start), item, true);

    const std::string extra = std::string("int ") + gpu_mod_arg + ", int " + gpu_alloc_arg;
    auto add_args = [&](const clang::FunctionDecl* d) -> bool {
      const clang::FunctionTypeLoc ftl = d->getFunctionTypeLoc();
      const auto lp = ftl ? file_offset(ftl.getLParenLoc()) : std::nullopt;
      const auto rp = ftl ? file_offset(ftl.getRParenLoc()) : std::nullopt;
      if (!lp || !rp) {
        problem(d->getLocation(), "is declared in a way that cannot be rewritten");
        return false;
      }
      if (d->getNumParams() == 0)
        out.ReplaceText(at(*lp + 1), *rp - *lp - 1, extra);
      else
        out.InsertTextBefore(at(*rp), ", " + extra);
      return true;
    };
    for (const auto* d : kernel_->redecls())
      if (!add_args(d)) return false;

    std::string wrapper = kWrapper;
    wrapper.replace(wrapper.find("@CALL@"), 6, item_name() + "(" + args);
    wrapper += "#line " + std::to_string(line_of(k.rbrace)) + "\n";
    out.ReplaceText(clang::SourceRange(at(k.lbrace), at(k.rbrace)), wrapper);

    const auto* rb = out.getRewriteBufferFor(sm_.getMainFileID());
    out_ = rb ? std::string(rb->begin(), rb->end()) : buf.str();
    return true;
  }
};

}  // namespace

Result make_malleable(const std::string& source, const std::string& file, const std::string& kernel,
                      const std::string& build_options) {
  const std::string name = file.empty() ? std::string("input.cl") : file;
  frontend::ParseOptions po;
  po.build_options = build_options;
  po.time_limit_ms = 10000;
  auto parsed = frontend::parse(source, name, po);
  Result r;
  auto first_error = [](const frontend::ParsedSource& p) -> std::string {
    for (const auto& d : p.diagnostics())
      if (d.severity == features::Diagnostic::Severity::error || d.severity == features::Diagnostic::Severity::fatal)
        return (d.file.empty() ? std::string() : d.file + ":" + std::to_string(d.line) + ": ") + d.message;
    return "the parse was cut short";
  };
  if (!parsed->ok() || parsed->has_errors() || parsed->timed_out()) {
    r.reason = name + ": kernel '" + kernel + "' is not transformed: the front end cannot parse the source (" +
               first_error(*parsed) + "); the GPU runs unthrottled";
    return r;
  }
  r = Transformer(*parsed, name, kernel).run();
  if (!r.ok) return r;
  // Safety net: the malleable form must parse as cleanly as the original.
  auto check = frontend::parse(r.source, name, po);
  if (!check->ok() || check->has_errors()) {
    Result bad;
    bad.reason = name + ": kernel '" + kernel + "': the malleable form does not compile (" + first_error(*check) +
                 ") — a bug in dop_transform; the GPU runs unthrottled";
    return bad;
  }
  return r;
}

}  // namespace dop::transform
