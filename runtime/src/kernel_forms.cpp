// The kernel-forms resolver (dop/kernel_forms.hpp): a kernel's malleable form, footprint, code features and
// argument names, from its bundle or from a FormsProvider, and how they reach ExecutorOptions.
#include "dop/kernel_forms.hpp"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace dop {

namespace {

using json = nlohmann::json;

// One string field of each of the kernel's arguments in order, from its features (empty when they have none, or
// when an argument lacks it): "name" is what footprints and size expressions call the arguments, "type" their
// declared types.
std::vector<std::string> arg_field(const std::string& features_json, const char* field) {
  std::vector<std::string> values;
  const auto j = json::parse(features_json.empty() ? std::string("null") : features_json, nullptr, false);
  if (!j.is_object() || !j.contains("args") || !j["args"].is_array()) return values;
  for (const auto& a : j["args"]) {
    if (!a.is_object() || !a.contains(field) || !a[field].is_string()) return {};
    values.push_back(a[field].get<std::string>());
  }
  return values;
}

std::string file_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }

// The features of `forms` from their JSON: footprint (a malformed one throws, naming `origin`, and leaves `forms` as
// it was), argument names, code features (or why there are none).
void set_features(KernelForms& forms, const std::string& features_json, const std::string& origin,
                  const std::string& kernel) {
  const std::string text = features_json.empty() ? std::string("null") : features_json;
  forms.footprint = parse_footprint(text, origin);
  forms.features_json = text;
  forms.arg_names = arg_field(text, "name");
  forms.arg_types = arg_field(text, "type");
  try {
    forms.code = code_features_from_json(forms.features_json, origin, kernel);
  } catch (const std::exception& e) {
    forms.no_code = e.what();
  }
}

// The forms a provider makes from the source, those `wanted`. A failed feature analysis leaves the features out and
// says why (no_code): copies stay whole, and only a model that needs the code features fails.
KernelForms forms_from_source(const FormsProvider& provider, const KernelSource& k, const FormsWanted& wanted) {
  KernelForms f;
  f.origin = "analysis";
  if (wanted.malleable) {
    auto m = provider.malleable(k);
    f.malleable_source = std::move(m.first);
    f.malleable_note = std::move(m.second);
  } else {
    f.malleable_note = "no malleable form (not made)";
  }
  if (wanted.features) {
    try {
      set_features(f, provider.features_json(k), k.file, k.kernel);
    } catch (const std::exception& e) {
      f.no_code = e.what();
    }
  } else {
    f.no_code = "no code features for kernel '" + k.kernel + "' (not analysed)";
  }
  return f;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

KernelSource kernel_source(const Spec& spec, const std::string& source) {
  return {source, spec.kernel_name, spec.build_options, spec.kernel_file};
}

pred::CodeFeatures code_features_from_json(const std::string& text, const std::string& origin,
                                           const std::string& kernel) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw std::runtime_error(origin + ": invalid JSON (byte " + std::to_string(e.byte) + "): " + e.what());
  }
  const json* obj = &j;
  if (j.is_object() && j.contains("kernels")) {
    const json& ks = j["kernels"];
    const json* found = nullptr;
    std::string names;
    for (const auto& k : ks) {
      const std::string n = k.value("kernel", "");
      names += (names.empty() ? "" : ", ") + n;
      if (kernel.empty() ? ks.size() == 1 : n == kernel) found = &k;
    }
    if (!found)
      throw std::runtime_error(origin + ": " +
                               (kernel.empty() ? "several kernels (" + names + "): choose one with --kernel"
                                               : "no kernel '" + kernel + "' (it has " + names + ")"));
    obj = found;
  }
  if (obj->is_object() && obj->contains("features")) {
    if (!(*obj)["features"].is_object()) throw std::runtime_error(origin + ": kernel has no \"features\" object");
    obj = &(*obj)["features"];
  }
  if (!obj->is_object()) throw std::runtime_error(origin + ": expected a JSON object of features");
  pred::CodeFeatures c;
  for (const auto& [k, v] : obj->items()) {
    if (v.is_number())
      c.values[k] = v.get<double>();
    else if (v.is_null())
      c.values[k] = std::nan("");
    else if (v.is_string())
      c.exprs[k] = v.get<std::string>();
    else if (v.is_boolean())
      c.values[k] = v.get<bool>() ? 1 : 0;
  }
  return c;
}

const pred::CodeFeatures& KernelForms::code_features() const {
  if (!code) throw std::runtime_error(no_code.empty() ? "no code features" : no_code);
  return *code;
}

KernelForms forms_from_bundle(const Bundle& b, const std::string& path, const KernelSource& k) {
  check_bundle_matches(b, path, k.source, k.kernel, k.build_options);
  KernelForms f;
  f.origin = path;
  f.malleable_source = b.malleable_source;
  f.malleable_note = b.malleable_note;
  set_features(f, b.features_json, path, k.kernel);
  return f;
}

KernelFormsResolver::KernelFormsResolver(KernelFormsOptions options) : options_(std::move(options)) {
  for (const auto& dir : options_.bundle_dirs)
    for (auto& pb : load_bundle_folder(dir)) bundles_.push_back(std::move(pb));
}

KernelForms KernelFormsResolver::resolve(const KernelSource& k) const { return *resolve_shared(k); }

std::shared_ptr<const KernelForms> KernelFormsResolver::resolve_shared(const KernelSource& k) const {
  const std::string key = k.kernel + '\0' + k.build_options + '\0' + file_name(k.file) + '\0' + k.source;
  std::lock_guard<std::mutex> l(m_);
  auto it = memo_.find(key);
  if (it == memo_.end()) it = memo_.emplace(key, std::make_shared<const KernelForms>(find(k))).first;
  return it->second;
}

KernelForms KernelFormsResolver::find(const KernelSource& k) const {
  // The bundles of this kernel name: the first that matches (one made from a file of the kernel file's name before
  // others), else the reason of the first that differs (likewise).
  const std::string file = k.file.empty() ? std::string() : file_name(k.file);
  const std::pair<std::string, Bundle>* match = nullptr;
  bool match_same_file = false, differs_same_file = false;
  std::string differs;
  for (const auto& b : bundles_) {
    if (b.second.kernel != k.kernel) continue;
    const bool same_file = !file.empty() && file_name(b.second.file) == file;
    try {
      check_bundle_matches(b.second, b.first, k.source, k.kernel, k.build_options);
      if (!match || (same_file && !match_same_file)) match = &b, match_same_file = same_file;
    } catch (const BundleError& e) {
      if (differs.empty() || (same_file && !differs_same_file)) differs = e.what(), differs_same_file = same_file;
    }
  }
  if (match) return forms_from_bundle(match->second, match->first, k);
  std::string not_made;  // why the maker made no bundle
  if (options_.maker) {
    if (auto made = options_.maker->bundle(k, not_made)) {
      try {
        return forms_from_bundle(made->second, made->first, k);
      } catch (const std::exception& e) {
        not_made = e.what();
      }
    }
  }
  if (options_.provider) return forms_from_source(*options_.provider, k, options_.wanted);

  const std::string of = (k.kernel.empty() ? std::string("the kernel") : "kernel '" + k.kernel + "'") +
                         (k.file.empty() ? "" : " of " + k.file);
  std::string why = differs;
  if (why.empty() && !options_.bundle_dirs.empty()) why = "no bundle of " + of + " in " + joined(options_.bundle_dirs);
  if (!not_made.empty()) why += (why.empty() ? "" : "; ") + not_made;
  KernelForms f;
  if (why.empty()) {
    f.malleable_note = "no malleable form (no kernel bundle, and no analysis tier to make one from the source)";
    f.no_code = "no code features for " + of +
                ": no kernel bundle, and this dop has no analysis tier to make them from the source (give a kernel "
                "bundle: dop bundle)";
  } else {
    f.malleable_note = why + ": no malleable form";
    f.no_code = why + ": no code features";
  }
  return f;
}

void apply_forms(const KernelForms& forms, ExecutorOptions& o) {
  o.malleable_source = forms.malleable_source;
  o.malleable_note = forms.malleable_note;
  o.footprint = forms.footprint;
  // The kernel's code features, where the model reads any (one of launch, configuration and platform features alone
  // decides a kernel nobody analysed).
  if (o.model && (forms.code || !o.model->predictor || !o.model->predictor->model().code_keys().empty()))
    o.model->code = forms.code_features();
}

}  // namespace dop
