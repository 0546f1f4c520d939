// Kernel bundles (dop-bundle/1): one kernel's original source, its malleable
// GPU form (or why there is none) and its static features, made on an analysis
// machine (`dop bundle`, Clang) and loaded on a runtime-only machine
// (`dop run --bundle`). Runtime tier: no Clang. docs/bundle.md gives the
// format.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dop {

/// A bundle that cannot be read, is corrupt, or does not fit the spec it is
/// used with. The message names the file and says what is wrong.
class BundleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Bundle {
  static constexpr const char* format = "dop-bundle/1";
  std::string file;                    ///< the kernel's file name as given when the bundle was made
  std::string kernel;                  ///< kernel name
  std::string build_options;           ///< OpenCL build options the bundle was made with
  std::string source;                  ///< the original source
  std::string malleable_source;        ///< the malleable GPU form (dop_gpu_mod,
                                       ///< dop_gpu_alloc), "" when there is none
  std::string malleable_note;          ///< why there is none ("k.cl:12: kernel 'foo'
                                       ///< calls barrier(): ...")
  std::string features_json = "null";  ///< dop::features to_json of the kernel (a JSON object), or null
  std::string made_by;                 ///< e.g. "dop 0.1.0"
};

/// Serialises a bundle (JSON with checksums of both sources).
std::string bundle_to_json(const Bundle& b);
/// Parses and checks a bundle: format version, fields and their types,
/// checksums, a malleable form that has the two extra arguments. `path` names
/// the file in errors. Throws BundleError.
Bundle parse_bundle(const std::string& json_text, const std::string& path = "<bundle>");
/// Writes a bundle to a file (atomically: a temporary file renamed); throws
/// BundleError naming the file.
void save_bundle(const Bundle& b, const std::string& path);
Bundle load_bundle(const std::string& path);
/// Every bundle (*.json) of a folder, as (path, bundle), in path order. Throws BundleError naming the folder when it
/// is not one, or the file when a bundle cannot be read.
std::vector<std::pair<std::string, Bundle>> load_bundle_folder(const std::string& dir);
/// Where two sources first differ, for messages: "line 3: '  c[i] = a[i] + b[i];' against '  c[i] = a[i] - b[i];'"
/// (each line shortened to about 60 characters around the difference; "(end of source)" where one ends); "" when
/// they are equal.
std::string first_difference(const std::string& a, const std::string& b);
/// Checks that a bundle belongs to a launch of `kernel` from `source` with
/// `build_options`; throws BundleError naming `path` and what differs: the kernel name, the source (the first
/// differing line of both), or the build options (both strings).
void check_bundle_matches(const Bundle& b, const std::string& path, const std::string& source,
                          const std::string& kernel, const std::string& build_options);

}  // namespace dop
