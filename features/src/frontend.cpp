// The shared OpenCL C front end: Clang 15 in-process, cc1 arguments built directly (no driver), the builtins declared
// on demand by Sema (-fdeclare-opencl-builtins), the AST kept in a clang::ASTUnit.
#include "dop/frontend.hpp"

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/Attr.h>
#include <clang/AST/Decl.h>
#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/Basic/DiagnosticSema.h>
#include <clang/Frontend/ASTUnit.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Lex/Preprocessor.h>
#include <clang/Lex/PreprocessorOptions.h>
#include <clang/Serialization/PCHContainerOperations.h>
#include <llvm/Support/CrashRecoveryContext.h>
#include <llvm/Support/MemoryBuffer.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>

#include <cctype>
#include "crash_guard.hpp"

namespace dop::features::detail {

bool run_safely(llvm::function_ref<void()> fn) {
  static const bool disabled = [] {
    const char* e = std::getenv("DOP_NO_CRASH_RECOVERY");
    return e && *e && std::string(e) != "0";
  }();
  if (disabled) {
    fn();
    return true;
  }
  // Reference-counted Enable/Disable: the handlers are process-wide, so they stay only while a parse runs.
  static std::mutex m;
  static int users = 0;
  {
    std::lock_guard<std::mutex> lock(m);
    if (users++ == 0) llvm::CrashRecoveryContext::Enable();
  }
  bool ok = false;
  {
    llvm::CrashRecoveryContext crc;
    ok = crc.RunSafely(fn);
  }
  std::lock_guard<std::mutex> lock(m);
  if (--users == 0) llvm::CrashRecoveryContext::Disable();
  return ok;
}

}  // namespace dop::features::detail

namespace dop::frontend {

using features::Diagnostic;

#ifndef DOP_CLANG_RESOURCE_DIR
#define DOP_CLANG_RESOURCE_DIR "/usr/lib/llvm-15/lib/clang/15.0.6"
#endif

std::string clang_resource_dir() {
  if (const char* env = std::getenv("DOP_CLANG_RESOURCE_DIR"); env && *env) return env;
  return DOP_CLANG_RESOURCE_DIR;
}

namespace {

/// Collects Clang's diagnostics as plain structs, and the names of unknown types for guess_unknown_types.
class Collector : public clang::DiagnosticConsumer {
 public:
  std::vector<Diagnostic> diagnostics;
  std::vector<std::string> unknown_types;
  std::vector<std::string> unknown_identifiers;  ///< undeclared, not called: macros/constants from elsewhere
  std::vector<std::string> unknown_functions;    ///< undeclared and called: functions defined elsewhere

  void HandleDiagnostic(clang::DiagnosticsEngine::Level level, const clang::Diagnostic& info) override {
    DiagnosticConsumer::HandleDiagnostic(level, info);
    if (level < clang::DiagnosticsEngine::Error) return;  // warnings are off (-w); notes point into headers
    Diagnostic d;
    d.severity = level == clang::DiagnosticsEngine::Fatal ? Diagnostic::Severity::fatal : Diagnostic::Severity::error;
    llvm::SmallString<256> msg;
    info.FormatDiagnostic(msg);
    d.message = std::string(msg.str());
    if (info.getLocation().isValid() && info.hasSourceManager()) {
      const auto& sm = info.getSourceManager();
      const auto p = sm.getPresumedLoc(sm.getFileLoc(info.getLocation()));
      if (p.isValid()) {
        d.file = p.getFilename();
        d.line = p.getLine();
        d.column = p.getColumn();
      }
    }
    const unsigned id = info.getID();
    if ((id == clang::diag::err_unknown_typename || id == clang::diag::err_unknown_typename_suggest) &&
        info.getNumArgs() > 0 && info.getArgKind(0) == clang::DiagnosticsEngine::ak_identifierinfo &&
        info.getArgIdentifier(0)) {
      std::string name = info.getArgIdentifier(0)->getName().str();
      if (std::find(unknown_types.begin(), unknown_types.end(), name) == unknown_types.end())
        unknown_types.push_back(std::move(name));
    }
    if ((id == clang::diag::err_undeclared_var_use || id == clang::diag::err_undeclared_var_use_suggest) &&
        info.hasSourceManager() && info.getLocation().isValid()) {
      // "use of undeclared identifier 'X'": remember X unless it is called (X(...) is a missing function).
      const auto q1 = d.message.find('\'');
      const auto q2 = q1 == std::string::npos ? q1 : d.message.find('\'', q1 + 1);
      if (q2 != std::string::npos) {
        std::string name = d.message.substr(q1 + 1, q2 - q1 - 1);
        const auto& sm = info.getSourceManager();
        bool invalid = false;
        const char* p = sm.getCharacterData(sm.getSpellingLoc(info.getLocation()), &invalid);
        bool called = false;
        if (!invalid && p) {
          const llvm::StringRef buf = sm.getBufferData(sm.getFileID(sm.getSpellingLoc(info.getLocation())), &invalid);
          const char* end = invalid ? p : buf.data() + buf.size();
          while (p < end && (std::isalnum(static_cast<unsigned char>(*p)) || *p == '_')) ++p;
          while (p < end && std::isspace(static_cast<unsigned char>(*p))) ++p;
          called = p < end && *p == '(';
        }
        auto& names = called ? unknown_functions : unknown_identifiers;
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
      }
    }
    diagnostics.push_back(std::move(d));
  }
};

/// ASTFrontendAction that installs the parse deadline: once it passes, every further token the parser asks for is
/// turned into end-of-file, so Clang finishes the translation unit with what it has (a clean way to stop it).
class ParseAction : public clang::ASTFrontendAction {
 public:
  explicit ParseAction(unsigned limit_ms) : limit_ms_(limit_ms) {}
  bool timed_out() const { return cut_; }

 protected:
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(clang::CompilerInstance&, llvm::StringRef) override {
    return std::make_unique<clang::ASTConsumer>();
  }
  bool BeginSourceFileAction(clang::CompilerInstance& ci) override {
    if (limit_ms_ == 0) return true;
    deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit_ms_);
    ci.getPreprocessor().setTokenWatcher([this](const clang::Token& token) {
      if (!cut_ && (++tokens_ & 1023) == 0 && std::chrono::steady_clock::now() > deadline_) cut_ = true;
      if (cut_) {
        // The token is the parser's own (Preprocessor::Lex passes its result); only its kind changes.
        auto& t = const_cast<clang::Token&>(token);
        const auto loc = t.getLocation();
        t.startToken();
        t.setKind(clang::tok::eof);
        t.setLocation(loc);
      }
    });
    return true;
  }

 private:
  unsigned limit_ms_;
  std::chrono::steady_clock::time_point deadline_;
  uint64_t tokens_ = 0;
  bool cut_ = false;
};

/// Splits build options on blanks, honouring simple quotes ("-DX=a b" stays one word).
std::vector<std::string> split_options(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (char c : s) {
    if (quote) {
      if (c == quote)
        quote = 0;
      else
        cur += c;
    } else if (c == '"' || c == '\'') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) out.push_back(cur);
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (in_word) out.push_back(cur);
  return out;
}

/// Turns OpenCL build options into cc1 arguments; unsupported ones become warnings.
void translate_options(const std::string& build_options, std::vector<std::string>& args, std::vector<Diagnostic>& diags,
                       std::string& cl_std) {
  const auto words = split_options(build_options);
  static const char* passthrough[] = {
      "-cl-fast-relaxed-math",         "-cl-finite-math-only", "-cl-unsafe-math-optimizations",
      "-cl-no-signed-zeros",           "-cl-mad-enable",       "-cl-denorms-are-zero",
      "-cl-single-precision-constant", "-cl-opt-disable",      "-cl-kernel-arg-info"};
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "-D" || w == "-U" || w == "-I") {
      if (i + 1 < words.size()) {
        args.push_back(w + words[i + 1]);
        ++i;
      }
    } else if (w.size() > 2 && (w.rfind("-D", 0) == 0 || w.rfind("-U", 0) == 0 || w.rfind("-I", 0) == 0)) {
      args.push_back(w);
    } else if (w.rfind("-cl-std=", 0) == 0) {
      cl_std = w.substr(8);
    } else if (std::find_if(std::begin(passthrough), std::end(passthrough), [&](const char* p) { return w == p; }) !=
               std::end(passthrough)) {
      args.push_back(w);
    } else if (w == "-w" || w == "-Werror" || w.rfind("-cl-", 0) == 0) {
      // accepted by OpenCL compilers, irrelevant to the front end
    } else {
      Diagnostic d;
      d.severity = Diagnostic::Severity::warning;
      d.message = "build option '" + w + "' ignored by the front end";
      diags.push_back(std::move(d));
    }
  }
}

struct Attempt {
  std::unique_ptr<clang::ASTUnit> unit;
  std::vector<Diagnostic> diagnostics;
  std::vector<std::string> unknown_types;
  std::vector<std::string> unknown_identifiers;
  std::vector<std::string> unknown_functions;
  bool timed_out = false;
  bool crashed = false;
};

Attempt parse_once(const std::string& text, const std::string& file_name, const ParseOptions& options) {
  Attempt a;
  std::string cl_std = "CL1.2";
  std::vector<std::string> user_args;
  translate_options(options.build_options, user_args, a.diagnostics, cl_std);

  Collector collector;
  llvm::IntrusiveRefCntPtr<clang::DiagnosticsEngine> diags =
      clang::CompilerInstance::createDiagnostics(new clang::DiagnosticOptions(), &collector, /*ShouldOwnClient=*/false);

  const std::string resource_dir = clang_resource_dir();
  std::vector<std::string> args = {"-triple",
                                   "spir64-unknown-unknown",
                                   "-x",
                                   "cl",
                                   "-cl-std=" + cl_std,
                                   "-finclude-default-header",
                                   "-fdeclare-opencl-builtins",
                                   "-fsyntax-only",
                                   "-w",
                                   "-ferror-limit",
                                   "100",
                                   "-resource-dir",
                                   resource_dir};
  args.insert(args.end(), user_args.begin(), user_args.end());
  args.push_back(file_name);
  std::vector<const char*> argv;
  argv.reserve(args.size());
  for (const auto& s : args) argv.push_back(s.c_str());

  auto invocation = std::make_shared<clang::CompilerInvocation>();
  if (!clang::CompilerInvocation::CreateFromArgs(*invocation, argv, *diags)) {
    // Bad -cl-std or a malformed -D: say so and fall back to the defaults, so the source still gets analysed.
    collector.diagnostics.push_back({Diagnostic::Severity::warning, file_name, 0, 0,
                                     "build options rejected by Clang; parsing as OpenCL C 1.2 without them"});
    diags->Reset();
    args.erase(std::remove_if(args.begin(), args.end(),
                              [&](const std::string& s) {
                                return std::find(user_args.begin(), user_args.end(), s) != user_args.end() ||
                                       s.rfind("-cl-std=", 0) == 0;
                              }),
               args.end());
    args.insert(args.begin() + 4, "-cl-std=CL1.2");
    argv.clear();
    for (const auto& s : args) argv.push_back(s.c_str());
    invocation = std::make_shared<clang::CompilerInvocation>();
    if (!clang::CompilerInvocation::CreateFromArgs(*invocation, argv, *diags)) {
      a.diagnostics.insert(a.diagnostics.end(), collector.diagnostics.begin(), collector.diagnostics.end());
      a.diagnostics.push_back({Diagnostic::Severity::fatal, file_name, 0, 0, "cannot set up the Clang front end"});
      return a;
    }
  }
  invocation->getPreprocessorOpts().addRemappedFile(file_name,
                                                    llvm::MemoryBuffer::getMemBufferCopy(text, file_name).release());

  ParseAction action(options.time_limit_ms);
  clang::ASTUnit* unit = nullptr;
  const bool survived = features::detail::run_safely([&] {
    unit = clang::ASTUnit::LoadFromCompilerInvocationAction(
        std::move(invocation), std::make_shared<clang::PCHContainerOperations>(), diags, &action);
  });
  if (!survived) {
    // The ASTUnit under construction was registered for cleanup and is gone; nothing of this parse is usable.
    diags->setClient(new clang::IgnoringDiagConsumer(), /*ShouldOwnClient=*/true);
    a.diagnostics.insert(a.diagnostics.end(), collector.diagnostics.begin(), collector.diagnostics.end());
    a.diagnostics.push_back({Diagnostic::Severity::fatal, file_name, 0, 0,
                             "Clang crashed while parsing this file (a Clang 15 bug); no features extracted"});
    a.crashed = true;
    return a;
  }
  a.unit.reset(unit);
  a.timed_out = action.timed_out();
  a.diagnostics.insert(a.diagnostics.end(), collector.diagnostics.begin(), collector.diagnostics.end());
  a.unknown_types = std::move(collector.unknown_types);
  a.unknown_identifiers = std::move(collector.unknown_identifiers);
  a.unknown_functions = std::move(collector.unknown_functions);
  // The consumer is about to go away: detach it from the engine the ASTUnit keeps.
  diags->setClient(new clang::IgnoringDiagConsumer(), /*ShouldOwnClient=*/true);
  if (!a.unit)
    a.diagnostics.push_back({Diagnostic::Severity::fatal, file_name, 0, 0,
                             "Clang could not parse the file (resource directory " + resource_dir + ")"});
  return a;
}

/// The file name of the guessed function declarations' lines (#line), whose errors are the guess's own.
constexpr const char* kGuessFile = "<dop: guessed declarations>";

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace

ParsedSource::~ParsedSource() = default;

clang::ASTContext& ParsedSource::context() { return unit_->getASTContext(); }
clang::SourceManager& ParsedSource::source_manager() { return unit_->getSourceManager(); }
const clang::LangOptions& ParsedSource::lang_options() const { return unit_->getLangOpts(); }

std::vector<const clang::FunctionDecl*> ParsedSource::kernels() const {
  std::vector<const clang::FunctionDecl*> out;
  if (!unit_) return out;
  for (const clang::Decl* d : unit_->getASTContext().getTranslationUnitDecl()->decls()) {
    const auto* fd = llvm::dyn_cast<clang::FunctionDecl>(d);
    if (fd && fd->hasAttr<clang::OpenCLKernelAttr>() && fd->doesThisDeclarationHaveABody() && fd->getBody())
      out.push_back(fd);
  }
  return out;
}

bool ParsedSource::has_errors() const {
  return std::any_of(diagnostics_.begin(), diagnostics_.end(), [](const Diagnostic& d) {
    return d.severity == Diagnostic::Severity::error || d.severity == Diagnostic::Severity::fatal;
  });
}

std::unique_ptr<ParsedSource> parse(std::string_view source, const std::string& file_name_in,
                                    const ParseOptions& options) {
  std::unique_ptr<ParsedSource> out(new ParsedSource());
  const std::string file_name = file_name_in.empty() ? std::string("input.cl") : file_name_in;
  const auto start = std::chrono::steady_clock::now();
  Attempt a = parse_once(std::string(source), file_name, options);

  std::vector<std::string> types, constants, functions;
  if (options.guess_unknown_types && !a.timed_out && !a.crashed) {
    for (const auto& n : a.unknown_types)
      if (is_identifier(n)) types.push_back(n);
    for (const auto& n : a.unknown_identifiers)
      if (is_identifier(n) && std::find(types.begin(), types.end(), n) == types.end()) constants.push_back(n);
    // A #line naming the file must be able to spell it.
    if (file_name.find_first_of("\"\\\n") == std::string::npos)
      for (const auto& n : a.unknown_functions)
        if (is_identifier(n) && std::find(types.begin(), types.end(), n) == types.end()) functions.push_back(n);
  }
  if (!types.empty() || !constants.empty() || !functions.empty()) {
    std::string prelude;
    // A called function the file does not declare: Clang drops the statement of the call (and a loop or if whose
    // body it is). Declared as `void NAME(...)`, which OpenCL C refuses in its own lines (kGuessFile, whose errors
    // are dropped below), the call is kept with its arguments and no callee: the analysis counts the arguments and
    // takes its pointer arguments as read and written (analyzer_calls.cpp).
    if (!functions.empty()) {
      prelude += "#line 1 \"" + std::string(kGuessFile) + "\"\n";
      for (const auto& n : functions) prelude += "void " + n + "(...);\n";
      prelude += "#line 1 \"" + file_name + "\"\n";
    }
    for (const auto& n : types) prelude += "typedef float " + n + ";\n";
    if (!constants.empty()) {
      prelude += "enum {";
      for (size_t i = 0; i < constants.size(); ++i) prelude += (i ? ", " : " ") + constants[i] + " = 16";
      prelude += " };\n";
    }
    prelude += "#line 1\n";
    ParseOptions retry = options;
    if (options.time_limit_ms) {
      const auto spent =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
      retry.time_limit_ms = std::max<unsigned>(
          1, options.time_limit_ms - std::min<unsigned>(options.time_limit_ms - 1, unsigned(spent.count())));
    }
    Attempt b = parse_once(prelude + std::string(source), file_name, retry);
    b.diagnostics.erase(std::remove_if(b.diagnostics.begin(), b.diagnostics.end(),
                                       [](const Diagnostic& d) { return d.file == kGuessFile; }),
                        b.diagnostics.end());
    auto errors = [](const Attempt& x) {
      return std::count_if(x.diagnostics.begin(), x.diagnostics.end(), [](const Diagnostic& d) {
        return d.severity == Diagnostic::Severity::error || d.severity == Diagnostic::Severity::fatal;
      });
    };
    if (b.crashed) {
      a.diagnostics.push_back({Diagnostic::Severity::warning, file_name, 0, 0,
                               "Clang crashed on the source with guessed declarations; analysed without them"});
    } else if (b.unit && errors(b) < errors(a)) {
      std::vector<Diagnostic> notes;
      for (const auto& n : types)
        notes.push_back(
            {Diagnostic::Severity::warning, file_name, 0, 0, "unknown type name '" + n + "' assumed to be float"});
      for (const auto& n : constants)
        notes.push_back({Diagnostic::Severity::warning, file_name, 0, 0,
                         "undeclared identifier '" + n + "' taken as a symbolic integer constant"});
      for (const auto& n : functions)
        notes.push_back({Diagnostic::Severity::warning, file_name, 0, 0,
                         "undeclared function '" + n + "' taken as defined elsewhere (its calls are kept)"});
      // The first parse's errors stay (they are what the user must fix); the retry's own errors follow.
      std::vector<Diagnostic> all = std::move(a.diagnostics);
      all.insert(all.end(), notes.begin(), notes.end());
      for (auto& d : b.diagnostics)
        if (d.severity == Diagnostic::Severity::error || d.severity == Diagnostic::Severity::fatal)
          d.message += " (after guessing)";
      all.insert(all.end(), b.diagnostics.begin(), b.diagnostics.end());
      b.diagnostics = std::move(all);
      a = std::move(b);
      out->prelude_size_ = prelude.size();
      out->guessed_types_ = types;
      out->guessed_constants_ = constants;
    }
  }
  out->unit_ = std::move(a.unit);
  out->diagnostics_ = std::move(a.diagnostics);
  out->timed_out_ = a.timed_out;
  if (a.timed_out)
    out->diagnostics_.push_back({Diagnostic::Severity::error, file_name, 0, 0,
                                 "parsing timed out after " + std::to_string(options.time_limit_ms) +
                                     " ms; the rest of the file was not analysed"});
  return out;
}

}  // namespace dop::frontend
