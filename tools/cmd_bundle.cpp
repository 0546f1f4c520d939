// dop bundle KERNEL.cl --kernel K --out B.json: the kernel bundle
// (dop-bundle/1, docs/bundle.md) — the source, its malleable GPU form or why
// there is none, and its static features — for `dop run --bundle` on a
// runtime-only machine. Analysis tier (Clang).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "commands.hpp"
#include "dop/bundle.hpp"
#include "dop/features.hpp"
#include "dop/transform.hpp"
#include "dop_version.hpp"

namespace dop::cli {

namespace {

struct BundleFlags {
  std::string file;
  std::string kernel;
  std::string build_options;
  std::string out;
};

void run_bundle(const BundleFlags& f) {
  std::ifstream in(f.file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + f.file + "': " + std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  const std::string source = buf.str();

  features::Options fo;
  fo.build_options = f.build_options;
  auto analysis = features::analyze(source, f.file, fo);
  // A file the OpenCL compiler would refuse makes no bundle: its features and forms would be of what Clang
  // recovered, not of the kernel.
  for (const auto& d : analysis.diagnostics) {
    if (d.severity != features::Diagnostic::Severity::error && d.severity != features::Diagnostic::Severity::fatal)
      continue;
    for (const auto& all : analysis.diagnostics) std::cerr << all.str() << "\n";
    throw std::runtime_error(d.str() + " (" + f.file + " does not compile" +
                             (f.build_options.empty() ? "" : " with options '" + f.build_options + "'") +
                             "): no bundle written");
  }
  std::string kernel = f.kernel, names;
  for (const auto& k : analysis.kernels) names += (names.empty() ? "" : ", ") + k.name;
  if (kernel.empty()) {
    if (analysis.kernels.size() != 1)
      throw std::runtime_error("'" + f.file + "' has " + std::to_string(analysis.kernels.size()) + " kernels (" +
                               names + "): say which with --kernel");
    kernel = analysis.kernels[0].name;
  }
  const features::KernelFeatures* feats = nullptr;
  for (const auto& k : analysis.kernels)
    if (k.name == kernel) feats = &k;
  if (!feats) {
    for (const auto& d : analysis.diagnostics) std::cerr << d.str() << "\n";
    throw std::runtime_error("no kernel '" + kernel + "' in '" + f.file + "'" +
                             (names.empty() ? std::string() : " (kernels: " + names + ")"));
  }

  const auto m = transform::make_malleable(source, f.file, kernel, f.build_options);
  Bundle b;
  b.file = f.file;
  b.kernel = kernel;
  b.build_options = f.build_options;
  b.source = source;
  b.malleable_source = m.ok ? m.source : std::string();
  b.malleable_note = m.ok ? std::string() : m.reason;
  b.features_json = features::to_json(*feats, -1);
  b.made_by = std::string("dop ") + DOP_VERSION_STRING;
  save_bundle(b, f.out);
  std::printf("%s: kernel %s of %s, malleable form: %s\n", f.out.c_str(), kernel.c_str(), f.file.c_str(),
              m.ok ? "yes" : "no");
  if (!m.ok) std::printf("  %s\n", m.reason.c_str());
  if (!feats->complete) std::printf("  features are partial (see dop features %s)\n", f.file.c_str());
}

}  // namespace

void add_bundle(CLI::App& app) {
  auto* cmd = app.add_subcommand("bundle",
                                 "Bundle a kernel: its source, malleable GPU form (or why there "
                                 "is none) and static "
                                 "features, for dop run --bundle (docs/bundle.md)");
  auto flags = std::make_shared<BundleFlags>();
  cmd->add_option("FILE", flags->file, "OpenCL C source file")->required();
  cmd->add_option("--kernel", flags->kernel, "The kernel (may be left out when the file has one)");
  cmd->add_option("--options", flags->build_options, "OpenCL build options (-D, -U, -I, -cl-std=...)");
  cmd->add_option("--out", flags->out, "Bundle file to write (JSON)")->required();
  cmd->callback([flags] { run_bundle(*flags); });
}

}  // namespace dop::cli
