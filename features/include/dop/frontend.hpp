// The OpenCL C front end shared by features/ (static analysis) and the runtime's kernel transformations (malleable
// and work-group-range forms): one Clang 15 parse into a clang::ASTUnit that can be walked and rewritten.
//
//   auto parsed = dop::frontend::parse(source, "k.cl");
//   clang::Rewriter rw(parsed->source_manager(), parsed->lang_options());
//   for (auto* k : parsed->kernels()) rw.InsertTextAfter(k->getBody()->getBeginLoc().getLocWithOffset(1), "...");
//
// Clang types appear here; link dop_features. Translation units that subclass Clang classes must be compiled with
// -fno-rtti like LLVM itself.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dop/features.hpp"

namespace clang {
class ASTContext;
class ASTUnit;
class FunctionDecl;
class LangOptions;
class SourceManager;
}  // namespace clang

namespace dop::frontend {

struct ParseOptions {
  /// OpenCL build options (clBuildProgram syntax): -D, -U, -I, -cl-std=CLx.y and -cl-* math flags are passed on,
  /// anything else is ignored with a warning diagnostic. The language is OpenCL C 1.2 unless -cl-std says otherwise.
  std::string build_options;
  /// Stop parsing (the rest of the file is treated as missing) after this many milliseconds. 0 = no limit.
  unsigned time_limit_ms = 0;
  /// When the first parse finds unknown type names or undeclared identifiers that are not called (macros and
  /// constants defined elsewhere), parse again with `typedef float NAME;` / `enum { NAME = 16 };` prepended, and keep
  /// that parse if it has fewer errors. The prelude shifts the main buffer: ParsedSource::prelude_size() bytes were
  /// inserted before the user's first line (a #line directive keeps diagnostics on the user's line numbers). Keep it
  /// off for source-to-source rewriting.
  bool guess_unknown_types = false;
};

/// A parsed OpenCL C translation unit. Owns the AST, the source manager and the preprocessor.
class ParsedSource {
 public:
  ~ParsedSource();
  ParsedSource(const ParsedSource&) = delete;
  ParsedSource& operator=(const ParsedSource&) = delete;

  /// False only when Clang itself could not be set up (e.g. its resource directory is missing): then there is no
  /// AST and diagnostics() says why.
  bool ok() const { return unit_ != nullptr; }
  clang::ASTUnit& unit() { return *unit_; }
  clang::ASTContext& context();
  clang::SourceManager& source_manager();
  const clang::LangOptions& lang_options() const;
  /// Kernel definitions (functions with __kernel and a body), in source order.
  std::vector<const clang::FunctionDecl*> kernels() const;
  /// Compiler diagnostics (errors and fatals; warnings are off), in order.
  const std::vector<features::Diagnostic>& diagnostics() const { return diagnostics_; }
  bool has_errors() const;
  /// True when parsing was cut short by ParseOptions::time_limit_ms.
  bool timed_out() const { return timed_out_; }
  /// Bytes inserted before the user's source (guess_unknown_types); 0 normally.
  size_t prelude_size() const { return prelude_size_; }
  /// The type names that were guessed (guess_unknown_types).
  const std::vector<std::string>& guessed_types() const { return guessed_types_; }
  /// The identifiers declared as enum constants by the guess (the analysis treats them as named symbols).
  const std::vector<std::string>& guessed_constants() const { return guessed_constants_; }

 private:
  friend std::unique_ptr<ParsedSource> parse(std::string_view, const std::string&, const ParseOptions&);
  ParsedSource() = default;
  std::unique_ptr<clang::ASTUnit> unit_;
  std::vector<features::Diagnostic> diagnostics_;
  bool timed_out_ = false;
  size_t prelude_size_ = 0;
  std::vector<std::string> guessed_types_;
  std::vector<std::string> guessed_constants_;
};

/// Parses OpenCL C `source`, named `file_name` (used in diagnostics and to resolve relative #include). The OpenCL
/// builtins are declared by Clang on demand (-fdeclare-opencl-builtins with the 30 KB opencl-c-base.h) instead of
/// the 900 KB opencl-c.h. Never throws for bad source: errors are in diagnostics() and the AST holds what Clang could
/// recover. Always returns an object; check ok() before using the AST.
std::unique_ptr<ParsedSource> parse(std::string_view source, const std::string& file_name,
                                    const ParseOptions& options = {});

/// Clang's resource directory used for opencl-c-base.h (override with the environment variable
/// DOP_CLANG_RESOURCE_DIR).
std::string clang_resource_dir();

}  // namespace dop::frontend
