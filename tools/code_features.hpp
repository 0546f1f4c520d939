// Code features of a kernel for the predictor, from the places dop keeps them: `dop features --json` output or a
// kernel bundle's features (JSON), or the kernel source itself (with the features library, analysis tier).
#pragma once

#include <string>

#include "dop/predictor.hpp"

namespace dop::cli {

/// From JSON text: `dop features --json` output ({"kernels": [{"kernel", "features": {...}}]}, choosing `kernel`),
/// one kernel's object ({"kernel", "features": {...}}), or a flat object of key -> number | null | expression.
/// `origin` names the file in errors.
pred::CodeFeatures code_features_from_json(const std::string& text, const std::string& origin,
                                           const std::string& kernel);
/// From the source, by the features library; throws naming the file when this build has none (runtime tier).
pred::CodeFeatures code_features_from_source(const std::string& source, const std::string& file,
                                             const std::string& kernel, const std::string& build_options);

}  // namespace dop::cli
