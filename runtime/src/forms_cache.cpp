// The on-disk kernel-forms cache (dop/forms_cache.hpp): cached bundles, negative entries, and `dop bundle` run as a
// child process for a kernel that has neither.
#include "dop/forms_cache.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "dop/files.hpp"
#include "dop/hash.hpp"
#include "dop/process.hpp"

namespace dop {

namespace {

constexpr const char* kNegativeFormat = "dop-forms-failure/1";

// The last `n` lines of a program's output, on one line each joined by " | " (for a log line and a reason).
std::string tail_lines(const std::string& out, size_t n) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < out.size()) {
    size_t end = out.find('\n', pos);
    if (end == std::string::npos) end = out.size();
    if (end > pos) lines.push_back(out.substr(pos, end - pos));
    pos = end + 1;
  }
  std::string s;
  for (size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i)
    s += (s.empty() ? "" : " | ") + lines[i];
  return s;
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

// A kernel's entries in the cache folder `dir` are this path plus ".json" (its bundle) or ".failed" (a negative entry).
std::string entry_base(const std::string& dir, const std::string& key) {
  return (std::filesystem::path(dir) / key).string();
}

}  // namespace

std::string forms_cache_key(const KernelSource& k) {
  return sha256_fields({Bundle::format, k.kernel, k.build_options, k.source});
}

void FormsCache::log(const KernelSource& k, const std::string& what) const {
  if (o_.log) o_.log("forms of " + k.kernel + ": " + what);
}

bool forms_cached(const std::string& dir, const KernelSource& k) {
  if (dir.empty() || k.kernel.empty()) return false;
  const std::string base = entry_base(dir, forms_cache_key(k));
  std::error_code ec;
  return std::filesystem::exists(base + ".json", ec) || std::filesystem::exists(base + ".failed", ec);
}

std::optional<std::pair<std::string, Bundle>> FormsCache::bundle(const KernelSource& k, std::string& why) const {
  if (k.kernel.empty()) {
    why = "the forms cache needs the kernel's name";
    return std::nullopt;
  }
  if (o_.dir.empty()) {
    why = "no forms cache (set DOP_CACHE_DIR, XDG_CACHE_HOME or HOME)";
    return std::nullopt;
  }
  const std::string key = forms_cache_key(k);
  const std::string base = entry_base(o_.dir, key);
  if (auto hit = from_cache(k, base + ".json")) return hit;
  if (negative_entry(k, base + ".failed", why)) return std::nullopt;
  if (o_.bundler.empty()) {
    why = "no bundle of kernel '" + k.kernel + "' in the forms cache " + o_.dir +
          ", and no bundler to make one (DOP_BUNDLER: dop exec of an analysis build sets it; on a runtime-only "
          "machine, record the application's programs with `dop exec --record DIR`, make the bundles where the "
          "analysis tier is with `dop bundle --from-record DIR --out BUNDLES`, and run with DOP_BUNDLES=BUNDLES)";
    return std::nullopt;
  }
  return make(k, key, why);
}

// A cached bundle of `k`; a corrupt or foreign one is logged, removed and made again.
std::optional<std::pair<std::string, Bundle>> FormsCache::from_cache(const KernelSource& k,
                                                                     const std::string& path) const {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  try {
    Bundle b = load_bundle(path);
    check_bundle_matches(b, path, k.source, k.kernel, k.build_options);
    log(k, "from cache " + path);
    return std::make_pair(path, std::move(b));
  } catch (const std::exception& e) {
    log(k, std::string("cache entry ignored and made again: ") + e.what());
    std::filesystem::remove(path, ec);
    return std::nullopt;
  }
}

// A negative entry of `k`: true with `why` = its reason; a corrupt or foreign one is removed (false).
bool FormsCache::negative_entry(const KernelSource& k, const std::string& path, std::string& why) const {
  const auto text = read_whole_file(path);
  if (!text) return false;
  const auto j = nlohmann::json::parse(*text, nullptr, false);
  const bool ok = j.is_object() && j.value("format", "") == kNegativeFormat && j.value("kernel", "") == k.kernel &&
                  j.value("options", "") == k.build_options && j.value("source_sha256", "") == sha256_hex(k.source) &&
                  j.contains("reason") && j["reason"].is_string();
  if (!ok) {
    log(k, "negative cache entry " + path + " is corrupt: ignored and made again");
    std::error_code ec;
    std::filesystem::remove(path, ec);
    return false;
  }
  why = j["reason"].get<std::string>() + " (cached in " + path + "; delete it to try again)";
  log(k, "analysis failed before: " + why);
  return true;
}

// Runs `BUNDLER bundle` on the kernel; caches the bundle, or the failure as a negative entry.
std::optional<std::pair<std::string, Bundle>> FormsCache::make(const KernelSource& k, const std::string& key,
                                                               std::string& why) const {
  const std::string base = (std::filesystem::path(o_.dir) / key).string();
  std::error_code ec;
  std::filesystem::create_directories(o_.dir, ec);
  if (ec) {
    why = o_.dir + ": cannot create the forms cache (" + ec.message() + ")";
    log(k, why);
    return std::nullopt;
  }
  // The source stays next to its bundle (the bundle's file name); the same text whoever writes it.
  static std::atomic<unsigned> made{0};  // with the pid: a part file of its own per process and call
  const std::string src = base + ".cl",
                    part = base + ".json.part." + std::to_string(getpid()) + "." + std::to_string(made++);
  try {
    write_file_atomically(src, k.source);
  } catch (const std::exception& e) {
    why = e.what();
    log(k, why);
    return std::nullopt;
  }
  std::vector<std::string> argv = {o_.bundler, "bundle", "--strict", src, "--kernel", k.kernel, "--out", part};
  if (!k.build_options.empty()) argv.push_back("--options=" + k.build_options);
  const auto t0 = std::chrono::steady_clock::now();
  const ProcessResult r = run_process(argv, o_.timeout_s);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.started) {  // the bundler's fault, not the kernel's: not cached
    why = "cannot run the bundler (DOP_BUNDLER) " + r.error;
    log(k, why);
    return std::nullopt;
  }
  std::string failure;
  if (r.timed_out)
    failure = "the analysis (" + o_.bundler + " bundle) of kernel '" + k.kernel + "' " + timed_out_after(o_.timeout_s);
  else if (r.exit_code > 0 || r.signal != 0)  // an unknown status (SIGCHLD ignored) is judged by the bundle
    failure = "the analysis (" + o_.bundler + " bundle) of kernel '" + k.kernel + "' failed (" + r.status() +
              "): " + tail_lines(r.output, 3);
  if (failure.empty()) {
    try {
      Bundle b = load_bundle(part);
      check_bundle_matches(b, part, k.source, k.kernel, k.build_options);
      const std::string path = base + ".json";
      if (std::rename(part.c_str(), path.c_str()) != 0) throw BundleError(path + ": cannot rename the new bundle");
      log(k, "made by " + o_.bundler + " bundle in " + seconds(took) + ", cached " + path +
                 (b.malleable_source.empty() ? " (no malleable form: " + b.malleable_note + ")" : ""));
      return std::make_pair(path, std::move(b));
    } catch (const std::exception& e) {
      failure = std::string("the bundler's output is not usable: ") + e.what();
    }
  }
  std::filesystem::remove(part, ec);
  if (!r.output.empty()) log(k, "bundler output: " + tail_lines(r.output, 20));
  const nlohmann::ordered_json neg = {{"format", kNegativeFormat},
                                      {"kernel", k.kernel},
                                      {"options", k.build_options},
                                      {"source_sha256", sha256_hex(k.source)},
                                      {"reason", failure},
                                      {"bundler", o_.bundler},
                                      {"seconds", took}};
  try {
    write_file_atomically(base + ".failed", neg.dump(2) + "\n");
    log(k, failure + "; cached as a negative entry " + base + ".failed");
  } catch (const std::exception& e) {
    log(k, failure + "; not cached: " + e.what());
  }
  why = failure;
  return std::nullopt;
}

}  // namespace dop
