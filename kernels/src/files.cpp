// Where the kernels' spec files are, and which there are.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "dop/kernels.hpp"

namespace dop::kernels {

std::string default_dir() {
  if (const char* env = std::getenv("DOP_KERNELS_DIR"); env && *env) return env;
  return DOP_KERNELS_SOURCE_DIR;
}

std::vector<std::string> spec_files(const std::string& dir, const std::string& size) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const auto& sub : fs::directory_iterator(dir, ec)) {
    if (!sub.is_directory(ec)) continue;
    for (const auto& f : fs::directory_iterator(sub.path(), ec)) {
      if (!f.is_regular_file(ec) || f.path().extension() != ".json") continue;
      // <kernel>_<size>_<dims>_wg<wg>.json: the size class is the second field.
      const std::string stem = f.path().stem().string();
      if (!size.empty()) {
        const size_t a = stem.find('_');
        if (a == std::string::npos || stem.compare(a + 1, size.size() + 1, size + "_") != 0) continue;
      }
      files.push_back(f.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace dop::kernels
