// dop bundle KERNEL.cl --kernel K --out B.json: the kernel bundle (dop-bundle/1, docs/bundle.md) — the source, its
// malleable GPU form or why there is none, and its static features — for `dop run --bundle` on a runtime-only
// machine. dop bundle --from-record DIR --out BUNDLES: the bundles of every kernel a recording run (dop exec
// --record) wrote. Analysis tier (Clang); the interposer runs it as a child process to make bundles on the fly.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <vector>

#include "commands.hpp"
#include "dop/bundle.hpp"
#include "dop/features.hpp"
#include "dop/files.hpp"
#include "dop/kernel_record.hpp"
#include "dop/process.hpp"
#include "dop/transform.hpp"
#include "dop_version.hpp"

namespace dop::cli {

namespace {

struct BundleFlags {
  std::string file;
  std::string kernel;
  std::string build_options;
  std::string out;
  std::string from_record;
  bool strict = false;
  unsigned time_limit_ms = features::Options{}.time_limit_ms;
};

// The bundle of `kernel` ("": the source's only kernel) of `source`, read from `file`; prints a one-line summary.
Bundle make_bundle(const std::string& file, const std::string& source, std::string kernel,
                   const std::string& build_options, bool strict, unsigned time_limit_ms) {
  features::Options fo;
  fo.build_options = build_options;
  fo.time_limit_ms = time_limit_ms;
  auto analysis = features::analyze(source, file, fo);
  // A time limit is not a compile error (the diagnostic it leaves is an error): say which it was.
  if (analysis.timed_out)
    throw std::runtime_error("the analysis of " + (kernel.empty() ? std::string() : "kernel '" + kernel + "' of ") +
                             "'" + file + "' " + timed_out_after(time_limit_ms / 1000.0) + " (--time-limit " +
                             std::to_string(time_limit_ms) + " ms): no bundle written; give it more time");
  // A file the OpenCL compiler would refuse makes no bundle: its features and forms would be of what Clang
  // recovered, not of the kernel.
  for (const auto& d : analysis.diagnostics) {
    if (d.severity != features::Diagnostic::Severity::error && d.severity != features::Diagnostic::Severity::fatal)
      continue;
    for (const auto& all : analysis.diagnostics) std::cerr << all.str() << "\n";
    throw std::runtime_error(d.str() + " (" + file + " does not compile" +
                             (build_options.empty() ? "" : " with options '" + build_options + "'") +
                             "): no bundle written");
  }
  std::string names;
  for (const auto& k : analysis.kernels) names += (names.empty() ? "" : ", ") + k.name;
  if (kernel.empty()) {
    if (analysis.kernels.size() != 1)
      throw std::runtime_error("'" + file + "' has " + std::to_string(analysis.kernels.size()) + " kernels (" + names +
                               "): say which with --kernel");
    kernel = analysis.kernels[0].name;
  }
  const features::KernelFeatures* feats = nullptr;
  for (const auto& k : analysis.kernels)
    if (k.name == kernel) feats = &k;
  if (!feats) {
    for (const auto& d : analysis.diagnostics) std::cerr << d.str() << "\n";
    throw std::runtime_error("no kernel '" + kernel + "' in '" + file + "'" +
                             (names.empty() ? std::string() : " (kernels: " + names + ")"));
  }

  // Incomplete without an error (those were refused above): a limit of the analysis (recursion, inlining, nesting).
  if (strict && !feats->complete)
    throw std::runtime_error("the analysis of kernel '" + kernel + "' is incomplete (--strict): see dop features " +
                             file);
  const auto m = transform::make_malleable(source, file, kernel, build_options);
  Bundle b;
  b.file = file;
  b.kernel = kernel;
  b.build_options = build_options;
  b.source = source;
  b.malleable_source = m.ok ? m.source : std::string();
  b.malleable_note = m.ok ? std::string() : m.reason;
  b.features_json = features::to_json(*feats, -1);
  b.made_by = std::string("dop ") + DOP_VERSION_STRING;
  if (!feats->complete) std::printf("  features are partial (see dop features %s)\n", file.c_str());
  return b;
}

void save_and_say(const Bundle& b, const std::string& out) {
  save_bundle(b, out);
  std::printf("%s: kernel %s of %s, malleable form: %s\n", out.c_str(), b.kernel.c_str(), b.file.c_str(),
              b.malleable_source.empty() ? "no" : "yes");
  if (b.malleable_source.empty()) std::printf("  %s\n", b.malleable_note.c_str());
}

// Every kernel of every program recorded in `dir` (dop exec --record) into the folder `out`, as
// <kernel>.<record>.json; a kernel that cannot be bundled is reported and the others are still made.
int bundle_records(const std::string& dir, const std::string& out, unsigned time_limit_ms) {
  const auto records = read_records(dir);
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (!std::filesystem::is_directory(out)) throw std::runtime_error("--out '" + out + "': cannot create the folder");
  int made = 0, failed = 0;
  for (const auto& r : records) {
    std::vector<std::string> kernels = r.kernels;
    if (kernels.empty()) {  // the implementation did not name them (an asynchronous build, OpenCL 1.1): the source's
      features::Options fo;
      fo.build_options = r.build_options;
      for (const auto& k : features::analyze(r.source, r.source_path, fo).kernels) kernels.push_back(k.name);
      std::printf("%s: no kernel names recorded; the source has %zu\n", r.record_path.c_str(), kernels.size());
    }
    const std::string stem = std::filesystem::path(r.record_path).stem().string();
    for (const auto& k : kernels) {
      try {
        save_and_say(make_bundle(r.source_path, r.source, k, r.build_options, false, time_limit_ms),
                     (std::filesystem::path(out) / (k + "." + stem + ".json")).string());
        ++made;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "dop: error: kernel %s of %s: %s\n", k.c_str(), r.record_path.c_str(), e.what());
        ++failed;
      }
    }
  }
  std::printf("%d bundle%s made from %zu recorded program%s in %s%s\n", made, made == 1 ? "" : "s", records.size(),
              records.size() == 1 ? "" : "s", dir.c_str(),
              failed ? (", " + std::to_string(failed) + " kernel(s) failed").c_str() : "");
  return failed ? 1 : 0;
}

void run_bundle(const BundleFlags& f) {
  if (!f.from_record.empty()) {
    if (const int rc = bundle_records(f.from_record, f.out, f.time_limit_ms)) std::exit(rc);
    return;
  }
  if (f.file.empty()) throw UsageError("give a kernel FILE, or --from-record DIR");
  const auto source = read_whole_file(f.file);
  if (!source) throw std::runtime_error("cannot read '" + f.file + "': " + std::strerror(errno));
  save_and_say(make_bundle(f.file, *source, f.kernel, f.build_options, f.strict, f.time_limit_ms), f.out);
}

}  // namespace

void add_bundle(CLI::App& app) {
  auto* cmd = app.add_subcommand("bundle",
                                 "Bundle a kernel: its source, malleable GPU form (or why there "
                                 "is none) and static "
                                 "features, for dop run --bundle (docs/bundle.md)");
  auto flags = std::make_shared<BundleFlags>();
  cmd->add_option("FILE", flags->file, "OpenCL C source file");
  cmd->add_option("--kernel", flags->kernel, "The kernel (may be left out when the file has one)");
  cmd->add_option("--options", flags->build_options,
                  "OpenCL build options (-D, -U, -I, -cl-std=...; --options=-DX=1 for a value that starts with -)");
  auto* rec = cmd->add_option("--from-record", flags->from_record,
                              "Bundle every kernel recorded in this folder (dop exec --record DIR); --out is then the "
                              "bundle folder, for DOP_BUNDLES / dop exec --bundles");
  rec->excludes(cmd->get_option("FILE"))->excludes(cmd->get_option("--kernel"))->excludes(cmd->get_option("--options"));
  cmd->add_flag("--strict", flags->strict,
                "Fail (exit 1) when the analysis is incomplete (a limit of the analysis: recursion, inlining, nesting) "
                "instead of bundling partial features (what the interposer's forms cache asks for); a file that does "
                "not compile is refused either way");
  cmd->add_option("--time-limit", flags->time_limit_ms,
                  "Time limit of the analysis in milliseconds, per kernel and for the parse (0: none); a kernel whose "
                  "analysis takes longer gets no bundle")
      ->capture_default_str();
  cmd->add_option("-o,--out", flags->out, "Bundle file to write (JSON), or the folder with --from-record")->required();
  cmd->callback([flags] { run_bundle(*flags); });
}

}  // namespace dop::cli
