// The analysis tier's FormsProvider (dop/kernel_forms.hpp): a kernel's malleable form (make_malleable) and its
// features (the features library), made from its source.
#include <cstdio>
#include <stdexcept>

#include "dop/features.hpp"
#include "dop/kernel_forms.hpp"
#include "dop/transform.hpp"

namespace dop::transform {

namespace {

class SourceFormsProvider : public FormsProvider {
 public:
  std::pair<std::string, std::string> malleable(const KernelSource& k) const override {
    auto m = make_malleable(k.source, k.file, k.kernel, k.build_options);
    return {std::move(m.source), std::move(m.reason)};
  }

  // One kernel's features as JSON (a bundle's features_json: code features and memory footprint), from the source
  // by the features library; throws naming the file when the analysis failed.
  std::string features_json(const KernelSource& k) const override {
    features::Options o;
    o.kernel = k.kernel;
    o.build_options = k.build_options;
    const auto r = features::analyze(k.source, k.file, o);
    for (const auto& d : r.diagnostics)
      if (d.severity == features::Diagnostic::Severity::error || d.severity == features::Diagnostic::Severity::fatal)
        std::fprintf(stderr, "%s\n", d.str().c_str());
    const features::KernelFeatures* found = nullptr;
    std::string names;
    for (const auto& x : r.kernels) {
      names += (names.empty() ? "" : ", ") + x.name;
      if (k.kernel.empty() ? r.kernels.size() == 1 : x.name == k.kernel) found = &x;
    }
    if (!found)
      throw std::runtime_error(k.file + ": " +
                               (k.kernel.empty() ? "choose a kernel with --kernel (" + names + ")"
                                                 : "no kernel '" + k.kernel + "' (found: " + names + ")"));
    if (!found->complete)
      throw std::runtime_error(k.file + ": the analysis of kernel '" + found->name + "' is incomplete");
    return features::to_json(*found, -1);
  }
};

}  // namespace

std::shared_ptr<const FormsProvider> forms_provider() { return std::make_shared<const SourceFormsProvider>(); }

}  // namespace dop::transform
