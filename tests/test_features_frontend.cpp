// The shared front end (dop/frontend.hpp): one parse that both the feature analysis and source-to-source kernel
// transformations (clang::Rewriter) use.
#include <catch2/catch.hpp>

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/Stmt.h>
#include <clang/Basic/SourceManager.h>
#include <clang/Rewrite/Core/Rewriter.h>

#include "dop/frontend.hpp"

TEST_CASE("frontend: parse OpenCL C and rewrite a kernel with clang::Rewriter") {
  const std::string src =
      "__kernel void k(__global float* a, int n) {\n"
      "  int i = get_global_id(0);\n"
      "  if (i < n) a[i] = sqrt(a[i]);\n"
      "}\n";
  auto parsed = dop::frontend::parse(src, "k.cl");
  REQUIRE(parsed->ok());
  CHECK_FALSE(parsed->has_errors());
  const auto kernels = parsed->kernels();
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0]->getName() == "k");

  // What the malleable transformation does: add parameters and code at the top of the body.
  clang::Rewriter rw(parsed->source_manager(), parsed->lang_options());
  const auto* body = llvm::cast<clang::CompoundStmt>(kernels[0]->getBody());
  rw.InsertTextAfter(body->getLBracLoc().getLocWithOffset(1), "\n  /* dop */");
  rw.InsertTextBefore(kernels[0]->getParamDecl(1)->getEndLoc().getLocWithOffset(1), ", int dop_gpu_mod");
  std::string out;
  llvm::raw_string_ostream os(out);
  rw.getEditBuffer(parsed->source_manager().getMainFileID()).write(os);
  os.flush();
  CHECK(out.find("int n, int dop_gpu_mod)") != std::string::npos);
  CHECK(out.find("{\n  /* dop */\n  int i") != std::string::npos);

  // The rewritten source parses again.
  auto again = dop::frontend::parse(out, "k2.cl");
  CHECK_FALSE(again->has_errors());
  REQUIRE(again->kernels().size() == 1);
  CHECK(again->kernels()[0]->getNumParams() == 3);
}

TEST_CASE("frontend: OpenCL builtins are declared without the 900 KB header, -cl-std and -D work") {
  auto parsed = dop::frontend::parse(
      "__kernel void k(__global float4* a) { a[0] = native_sin(vload4(0, (__global float*)a)) + (float4)(N); }", "b.cl",
      {"-DN=2 -cl-std=CL2.0", 0, false});
  REQUIRE(parsed->ok());
  for (const auto& d : parsed->diagnostics()) INFO(d.str());
  CHECK_FALSE(parsed->has_errors());
  CHECK(parsed->context().getLangOpts().OpenCLVersion == 200);
  // Only opencl-c-base.h is read, not opencl-c.h.
  bool full_header = false;
  for (auto it = parsed->source_manager().fileinfo_begin(); it != parsed->source_manager().fileinfo_end(); ++it)
    if (it->getFirst()->getName().endswith("opencl-c.h")) full_header = true;
  CHECK_FALSE(full_header);
}

TEST_CASE("frontend: errors are diagnostics with positions, unknown build options are ignored with a warning") {
  auto parsed = dop::frontend::parse("__kernel void k() {\n  undefined_thing = 1;\n}\n", "e.cl", {"-Ofast", 0, false});
  REQUIRE(parsed->ok());
  CHECK(parsed->has_errors());
  bool positioned = false, ignored = false;
  for (const auto& d : parsed->diagnostics()) {
    if (d.file == "e.cl" && d.line == 2) positioned = true;
    if (d.message.find("'-Ofast' ignored") != std::string::npos) ignored = true;
  }
  CHECK(positioned);
  CHECK(ignored);
  CHECK(parsed->prelude_size() == 0);  // no guessing unless asked
}
