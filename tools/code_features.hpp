// Code features of a kernel for the predictor, from the places dop keeps them: `dop features --json` output or a
// kernel bundle's features (JSON), or the kernel source itself (with the features library, analysis tier).
#pragma once

#include <map>
#include <string>
#include <utility>

#include "dop/bundle.hpp"
#include "dop/spec.hpp"

#include "dop/predictor.hpp"
#include "dop/runtime.hpp"

namespace dop::cli {

using dop::code_features_from_json;  // dop/runtime.hpp
/// One kernel's features as JSON (a bundle's features_json: code features and memory footprint), from the source by
/// the features library; throws naming the file when this build has none (runtime tier) or the analysis failed.
std::string kernel_features_json(const std::string& source, const std::string& file, const std::string& kernel,
                                 const std::string& build_options);
/// From the source, by the features library; throws naming the file when this build has none (runtime tier).
pred::CodeFeatures code_features_from_source(const std::string& source, const std::string& file,
                                             const std::string& kernel, const std::string& build_options);

/// The kernel bundles of a folder (`dop bundle` output, *.json) by bundle_key, with their files. A corrupt bundle
/// throws, named; a folder that is not one throws.
std::map<std::string, std::pair<std::string, Bundle>> load_bundle_dir(const std::string& dir);
/// "<kernel file name>:<kernel name>" of a spec or a bundle.
std::string bundle_key(const Spec& spec);
std::string bundle_key(const Bundle& b);

}  // namespace dop::cli
