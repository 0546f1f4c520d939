// Kernel forms made on the fly and kept on disk: for a kernel no bundle matches, the interposer (or any runtime-tier
// program) runs the analysis-tier `dop bundle` as a child process (dop/process.hpp) — Clang never enters the
// application's process — and keeps the bundle in a cache folder, so that later processes read one JSON file.
// Runtime tier.
//
//   CACHE/forms/<key>.json     a bundle (dop-bundle/1) of one kernel
//   CACHE/forms/<key>.failed   a negative entry: the analysis failed or timed out, with the reason (not retried;
//                              delete the file to retry)
//
// <key> is the SHA-256 of (the bundle format, kernel name, build options, source). CACHE is DOP_CACHE_DIR, else
// $XDG_CACHE_HOME/dop, else ~/.cache/dop (the program-binary cache uses the same root). Entries are written to a
// temporary file and renamed (concurrent processes are safe); a corrupt entry is ignored and made again.
#pragma once

#include <functional>
#include <string>

#include "dop/files.hpp"  // cache_root
#include "dop/kernel_forms.hpp"

namespace dop {

struct FormsCacheOptions {
  std::string dir;         ///< the cache folder (cache_root() + "/forms"), created when a bundle is first made
  std::string bundler;     ///< the analysis-tier dop binary (`dop bundle`); "": cached bundles only
  double timeout_s = 120;  ///< the bundler's time limit per kernel
  std::function<void(const std::string&)> log;  ///< one line per cache hit, bundle made or failure (may be empty)
};

/// The cache key of a kernel (64 hex digits).
std::string forms_cache_key(const KernelSource& k);

/// Whether the cache folder `dir` has an entry of the kernel (a bundle or a negative entry): its forms are then
/// resolved without running the bundler. Reads no file (an entry found corrupt later is made again, as always).
bool forms_cached(const std::string& dir, const KernelSource& k);

/// A BundleMaker (KernelFormsOptions::maker) over the cache folder and the bundler. Thread-safe (it holds no state
/// besides its options; the resolver calls it once per kernel).
class FormsCache : public BundleMaker {
 public:
  explicit FormsCache(FormsCacheOptions o) : o_(std::move(o)) {}
  std::optional<std::pair<std::string, Bundle>> bundle(const KernelSource& k, std::string& why) const override;

 private:
  std::optional<std::pair<std::string, Bundle>> from_cache(const KernelSource& k, const std::string& path) const;
  bool negative_entry(const KernelSource& k, const std::string& path, std::string& why) const;
  std::optional<std::pair<std::string, Bundle>> make(const KernelSource& k, const std::string& key,
                                                     std::string& why) const;
  void log(const KernelSource& k, const std::string& what) const;
  FormsCacheOptions o_;
};

}  // namespace dop
