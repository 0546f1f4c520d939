// The entry point analyze(): parse, then one KernelAnalyzer per kernel, crash-isolated; and the analyzer's driver:
// its budget's diagnostics, the kernel's arguments, and the counts summed up at the end (analyzer.hpp has the rest).
#include <clang/Frontend/ASTUnit.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "analyzer.hpp"
#include "crash_guard.hpp"
#include "dop/frontend.hpp"

namespace dop::features::detail {

KernelAnalyzer::KernelAnalyzer(clang::ASTContext& ctx, const clang::FunctionDecl* kernel, KernelFeatures& out,
                               std::vector<Diagnostic>& diags, unsigned time_limit_ms,
                               const std::set<std::string>& guessed)
    : ctx_(ctx), sm_(ctx.getSourceManager()), kernel_(kernel), out_(out), diags_(diags), guessed_(guessed) {
  if (time_limit_ms) {
    deadline_ = Clock::now() + std::chrono::milliseconds(time_limit_ms);
    has_deadline_ = true;
  }
  limit_ms_ = time_limit_ms;
}

void KernelAnalyzer::run() {
  setup_args();
  Frame top;
  top.fn = kernel_;
  frames_.push_back(&top);
  stmt(kernel_->getBody());
  frames_.pop_back();
  finish();
}

void KernelAnalyzer::note(clang::SourceLocation loc, Diagnostic::Severity sev, const std::string& msg) {
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

void KernelAnalyzer::setup_args() {
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

void KernelAnalyzer::finish() {
  out_.loop_depth = max_depth_;
  out_.loops = int64_t(loops_.size());
  for (const auto& l : loops_) {
    out_.loop_list.push_back(l.info);
    switch (l.info.trip.kind) {
      case TripCount::Kind::constant:
        ++out_.loops_constant_trip;
        break;
      case TripCount::Kind::symbolic:
        ++out_.loops_symbolic_trip;
        break;
      case TripCount::Kind::unknown:
        ++out_.loops_unknown_trip;
        break;
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

void KernelAnalyzer::bytes_expression() {
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
  std::stable_sort(ts.begin(), ts.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
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

}  // namespace dop::features::detail

namespace dop::features {

AnalysisResult analyze(std::string_view source, const std::string& file_name, const Options& options) {
  AnalysisResult result;
  frontend::ParseOptions po;
  po.build_options = options.build_options;
  po.time_limit_ms = options.time_limit_ms;
  po.guess_unknown_types = options.guess_unknown_types;
  auto parsed = frontend::parse(source, file_name, po);
  result.diagnostics = parsed->diagnostics();
  result.timed_out = parsed->timed_out();
  if (!parsed->ok()) return result;

  auto& ctx = parsed->context();
  const auto& sm = parsed->source_manager();
  const std::set<std::string> guessed(parsed->guessed_constants().begin(), parsed->guessed_constants().end());
  for (const clang::FunctionDecl* k : parsed->kernels()) {
    const std::string name = detail::callee_name(k);
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
    // If the analysis crashes, the footprint still names every global/constant/local pointer argument (as whole).
    detail::run_safely([&] {
      for (const clang::ParmVarDecl* pd : k->parameters()) {
        const clang::QualType t = pd->getType();
        if (t.isNull() || !t->isPointerType()) continue;
        const auto as = t->getPointeeType().getAddressSpace();
        if (as == clang::LangAS::opencl_private) continue;
        ArgFootprint a;
        a.name = pd->getName().str();
        a.whole = true;
        a.why = f.file + ":" + std::to_string(f.line) + ": the analysis of the kernel crashed";
        partial.footprint.args.push_back(std::move(a));
      }
    });
    std::vector<Diagnostic> kernel_diags;
    const bool survived = detail::run_safely([&] {
      detail::KernelAnalyzer a(ctx, k, f, kernel_diags, options.time_limit_ms, guessed);
      a.run();
      if (a.timed_out()) result.timed_out = true;
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
