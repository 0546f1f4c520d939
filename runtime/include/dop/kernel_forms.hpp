// A kernel's forms: what dop knows about a kernel beyond its source, and where it came from. The malleable GPU form
// (or the reason there is none), the features (the memory footprint, the code features for the predictor, the
// argument names), from a kernel bundle (dop bundle, docs/bundle.md) or, in a program with the analysis tier, made
// from the source by a FormsProvider (transform/: dop::transform::forms_provider()). `dop run`, `dop sweep`,
// `dop bench`, the interposer and the C++ API resolve them here and put them into ExecutorOptions with
// apply_forms. Runtime tier: no Clang.
//
//   dop::KernelFormsResolver forms({{"bundles/"}, dop::transform::forms_provider()});
//   const dop::KernelForms f = forms.resolve(dop::kernel_source(spec, source));
//   dop::ExecutorOptions o;
//   dop::apply_forms(f, o);  // malleable form or note, footprint (and code features when o.model is set)
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dop/bundle.hpp"
#include "dop/executor.hpp"
#include "dop/footprint.hpp"
#include "dop/predictor.hpp"
#include "dop/spec.hpp"

namespace dop {

/// A kernel as it is launched: a spec's, or one an application built (a captured launch of the interposer).
struct KernelSource {
  std::string source;
  std::string kernel;  ///< the kernel's name; "" (code features only) means the source's only kernel
  std::string build_options;
  /// The kernel file's path or name, for messages and to choose between bundles of the same kernel (their file
  /// name); "" for a captured launch.
  std::string file;
};
/// The kernel a spec launches, with its source (read_kernel_source).
KernelSource kernel_source(const Spec& spec, const std::string& source);

/// The forms of one kernel.
struct KernelForms {
  /// Where they came from: the path of the bundle, "analysis" (made from the source by a FormsProvider), or ""
  /// (nowhere: the notes say why).
  std::string origin;
  std::string malleable_source;        ///< the malleable GPU form (dop_gpu_mod, dop_gpu_alloc), "" when there is none
  std::string malleable_note;          ///< why there is none (the kernel's, or that no bundle of it was found)
  std::string features_json = "null";  ///< the kernel's features (dop::features to_json of it), or null
  Footprint footprint;                 ///< parse_footprint of the features; empty without them
  std::optional<pred::CodeFeatures> code;  ///< code features for the predictor (code_features_from_json)
  std::string no_code;                     ///< why `code` is empty
  std::vector<std::string> arg_names;      ///< the kernel's argument names in order, from the features ({} without)
  /// The kernel's argument types as declared ("int", "const __global float *"), in order, from the features ({}
  /// without): what an application's untyped scalar bytes mean (a negative int is not a huge uint).
  std::vector<std::string> arg_types;
  /// The code features; throws std::runtime_error saying why (no_code) when there are none.
  const pred::CodeFeatures& code_features() const;
};

/// The analysis tier's side of the resolver: makes forms from a kernel's source. transform/ implements it with
/// Clang (dop::transform::forms_provider()); the runtime tier only holds a pointer.
class FormsProvider {
 public:
  virtual ~FormsProvider() = default;
  /// The malleable form of `k.kernel`: {source, ""}, or {"", why there is none, naming file, line and kernel}.
  /// Never throws for bad or unsupported source.
  virtual std::pair<std::string, std::string> malleable(const KernelSource& k) const = 0;
  /// The kernel's features as JSON (one kernel's object, as a bundle holds them). Throws std::runtime_error naming
  /// the file when the analysis fails, is incomplete or finds no such kernel.
  virtual std::string features_json(const KernelSource& k) const = 0;
};

/// Bundles made on demand for a kernel that no bundle of the folders matches, tried before the provider: the
/// interposer's forms cache (dop/forms_cache.hpp), which runs the analysis-tier `dop bundle` in a child process and
/// keeps the bundles on disk.
class BundleMaker {
 public:
  virtual ~BundleMaker() = default;
  /// The bundle of `k` as (path, bundle), or nullopt with `why` saying why there is none. Never throws.
  virtual std::optional<std::pair<std::string, Bundle>> bundle(const KernelSource& k, std::string& why) const = 0;
};

/// The forms a bundle gives the kernel `k`; throws BundleError naming `path` and the difference when the bundle
/// does not belong to it (check_bundle_matches), std::runtime_error when its footprint is malformed.
KernelForms forms_from_bundle(const Bundle& b, const std::string& path, const KernelSource& k);

/// Which forms a resolver makes from the source (a FormsProvider) for a kernel no bundle matches: what the caller
/// will use, since the analyses take time. Bundles always give all of theirs.
struct FormsWanted {
  bool malleable = true;  ///< the malleable form
  bool features = true;   ///< the features (footprint, code features, argument names)
};

struct KernelFormsOptions {
  /// Folders of kernel bundles (*.json, dop bundle), loaded once by the resolver's constructor.
  std::vector<std::string> bundle_dirs;
  /// Makes the forms from the source for a kernel that no bundle matches; nullptr (a runtime-tier program): none.
  std::shared_ptr<const FormsProvider> provider;
  FormsWanted wanted;
  /// Makes (or finds in its cache) the bundle of a kernel that no bundle of the folders matches, before the
  /// provider; nullptr: none.
  std::shared_ptr<const BundleMaker> maker;
};

/// Finds kernels' forms, one way for every caller. The bundle of a kernel is one of the same kernel name, source
/// and build options (check_bundle_matches); among several, the one made from a file of the kernel file's name, else
/// the first in path order. Without one, the maker's bundle, else the provider makes the forms from the source;
/// without either there are none, and the notes say why: which bundle has the kernel but differs, and what differs
/// ("bundles/k.json: the bundle was made from another source of kernel 'k' ...; first difference (bundle against
/// kernel) at line 3: ..."), or that no bundle has it, and why the maker made none. Results are memoised per kernel
/// (name, build options, source, file name): a sweep analyses each program once. Thread-safe.
class KernelFormsResolver {
 public:
  /// Loads the bundles of the folders; throws BundleError naming a folder that is not one or a corrupt bundle.
  explicit KernelFormsResolver(KernelFormsOptions options = {});
  KernelForms resolve(const KernelSource& k) const;
  /// The same forms, shared with the memo (no copy: for a caller on a launch path).
  std::shared_ptr<const KernelForms> resolve_shared(const KernelSource& k) const;
  /// The bundles loaded, as (path, bundle) in folder and path order.
  const std::vector<std::pair<std::string, Bundle>>& bundles() const { return bundles_; }

 private:
  KernelForms find(const KernelSource& k) const;
  KernelFormsOptions options_;
  std::vector<std::pair<std::string, Bundle>> bundles_;
  mutable std::mutex m_;
  mutable std::map<std::string, std::shared_ptr<const KernelForms>> memo_;
};

/// Code features for the predictor from JSON text: `dop features --json` output (choosing `kernel` among several),
/// one kernel's object (a bundle's features_json), or a flat object of key -> number | null | expression. Throws
/// std::runtime_error naming `origin`.
pred::CodeFeatures code_features_from_json(const std::string& text, const std::string& origin,
                                           const std::string& kernel);

/// Puts a kernel's forms into executor options: the malleable form and its note, the footprint, and, when
/// `o.model` is set (launch_auto, Executor::decide), the model's code features; throws std::runtime_error saying
/// why (KernelForms::no_code) when the model needs code features and the forms have none.
void apply_forms(const KernelForms& forms, ExecutorOptions& o);

}  // namespace dop
