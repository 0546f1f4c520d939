// The interposer's kernel forms and recording (forms.hpp).
#include "forms.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <stdexcept>
#include <vector>

#include "dop/forms_cache.hpp"
#include "dop/hash.hpp"
#include "dop/kernel_record.hpp"

namespace dop_intercept {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : "";
}

double bundler_timeout() {
  const std::string v = env("DOP_BUNDLER_TIMEOUT");
  if (v.empty()) return 120;
  char* end = nullptr;
  const double s = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || *end || !(s > 0))
    throw std::runtime_error("DOP_BUNDLER_TIMEOUT='" + v + "': expected a positive number of seconds");
  return s;
}

// The names of a built program's kernels (CL_PROGRAM_KERNEL_NAMES, ';'-separated).
std::vector<std::string> kernel_names(cl_program p) {
  size_t len = 0;
  if (clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, 0, nullptr, &len) != CL_SUCCESS || len == 0) return {};
  std::string s(len, '\0');
  if (clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, len, s.data(), nullptr) != CL_SUCCESS) return {};
  s.resize(s.find('\0') == std::string::npos ? s.size() : s.find('\0'));
  std::vector<std::string> names;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find(';', pos);
    if (end == std::string::npos) end = s.size();
    if (end > pos) names.push_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return names;
}

// The interposer's forms cache folder: DOP_CACHE_DIR's (or the default root's) forms/, "" where there is no root.
std::string forms_cache_dir() {
  const std::string root = dop::cache_root();
  return root.empty() ? "" : root + "/forms";
}

}  // namespace

std::unique_ptr<dop::KernelFormsResolver> make_forms_resolver(LogFn log) {
  dop::KernelFormsOptions fo;
  if (const std::string dir = env("DOP_BUNDLES"); !dir.empty()) fo.bundle_dirs = {dir};
  dop::FormsCacheOptions co;
  co.dir = forms_cache_dir();
  co.bundler = env("DOP_BUNDLER");
  co.timeout_s = bundler_timeout();
  co.log = std::move(log);
  fo.maker = std::make_shared<const dop::FormsCache>(std::move(co));
  return std::make_unique<dop::KernelFormsResolver>(fo);
}

std::shared_ptr<const dop::KernelForms> resolve_forms(const dop::KernelFormsResolver& forms, const dop::KernelSource& k,
                                                      const LogFn& log) {
  std::shared_ptr<const dop::KernelForms> f = forms.resolve_shared(k);
  if (f->origin.empty()) {
    static std::mutex m;
    static std::set<std::string>* logged = new std::set<std::string>;  // never destroyed (see intercept.cpp)
    const std::string key = dop::sha256_fields({k.kernel, k.build_options, k.source});
    std::lock_guard<std::mutex> l(m);
    if (logged->insert(key).second) log("forms of " + k.kernel + ": none: " + f->malleable_note);
  }
  return f;
}

std::vector<std::pair<std::string, std::shared_ptr<const dop::KernelForms>>> resolve_program_forms(
    const dop::KernelFormsResolver& forms, cl_program program, const std::string& source, const std::string& options,
    const LogFn& log) {
  std::vector<std::pair<std::string, std::shared_ptr<const dop::KernelForms>>> resolved;
  const auto& bundles = forms.bundles();
  const std::string cache = forms_cache_dir();
  for (const std::string& name : kernel_names(program)) {
    const dop::KernelSource k{source, name, options, {}};
    if (std::any_of(bundles.begin(), bundles.end(), [&](const auto& b) { return b.second.kernel == name; }) ||
        dop::forms_cached(cache, k))
      resolved.emplace_back(name, resolve_forms(forms, k, log));
  }
  return resolved;
}

void record_build(cl_program program, const std::string& source, const std::string& options, const LogFn& log) {
  static const std::string dir = env("DOP_RECORD");
  if (dir.empty()) return;
  try {
    const std::string path = dop::record_program(dir, source, options, kernel_names(program));
    if (!path.empty()) log("recorded program " + path);
  } catch (const std::exception& e) {
    // Always shown (not only under DOP_LOG): a recording run that records nothing must not look like a success.
    const std::string line = std::string("dop-intercept: recording failed: ") + e.what() + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
}

}  // namespace dop_intercept
