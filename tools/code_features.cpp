#include "code_features.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#if DOP_HAVE_FEATURES
#include "dop/features.hpp"
#endif

namespace dop::cli {

std::string kernel_features_json(const std::string& source, const std::string& file, const std::string& kernel,
                                 const std::string& build_options) {
#if DOP_HAVE_FEATURES
  features::Options o;
  o.kernel = kernel;
  o.build_options = build_options;
  const auto r = features::analyze(source, file, o);
  for (const auto& d : r.diagnostics)
    if (d.severity == features::Diagnostic::Severity::error || d.severity == features::Diagnostic::Severity::fatal)
      std::fprintf(stderr, "%s\n", d.str().c_str());
  const features::KernelFeatures* k = nullptr;
  std::string names;
  for (const auto& x : r.kernels) {
    names += (names.empty() ? "" : ", ") + x.name;
    if (kernel.empty() ? r.kernels.size() == 1 : x.name == kernel) k = &x;
  }
  if (!k)
    throw std::runtime_error(file + ": " +
                             (kernel.empty() ? "choose a kernel with --kernel (" + names + ")"
                                             : "no kernel '" + kernel + "' (found: " + names + ")"));
  if (!k->complete) throw std::runtime_error(file + ": the analysis of kernel '" + k->name + "' is incomplete");
  return features::to_json(*k, -1);
#else
  (void)source;
  (void)kernel;
  (void)build_options;
  throw std::runtime_error("this dop was built without the features library (analysis tier): give the code "
                           "features of " + file + " another way (dop features --json, or a kernel bundle)");
#endif
}

pred::CodeFeatures code_features_from_source(const std::string& source, const std::string& file,
                                             const std::string& kernel, const std::string& build_options) {
  return code_features_from_json(kernel_features_json(source, file, kernel, build_options), file, kernel);
}

std::map<std::string, std::pair<std::string, Bundle>> load_bundle_dir(const std::string& dir) {
  std::map<std::string, std::pair<std::string, Bundle>> out;
  for (auto& [path, b] : load_bundle_folder(dir)) {
    const std::string key = bundle_key(b);
    out[key] = {path, std::move(b)};
  }
  return out;
}

std::string bundle_key(const Spec& spec) {
  return std::filesystem::path(spec.kernel_file).filename().string() + ":" + spec.kernel_name;
}
std::string bundle_key(const Bundle& b) { return std::filesystem::path(b.file).filename().string() + ":" + b.kernel; }

}  // namespace dop::cli
