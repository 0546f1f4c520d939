#include "workloads.hpp"

#include "dop/kernels.hpp"

namespace dop::cli {

namespace {
void add_real(std::vector<Workload>& ws, const std::string& size) {
  const auto files = kernels::spec_files(kernels::default_dir(), size);
  if (files.empty())
    throw std::invalid_argument("no real-world kernel specs of size '" + size + "' under " + kernels::default_dir() +
                                " (sizes: small, paper, large; DOP_KERNELS_DIR moves the folder)");
  for (const auto& f : files) {
    Spec s = load_spec(f);
    std::string src = read_kernel_source(s);
    ws.push_back({std::move(s), std::move(src), "real"});
  }
}
}  // namespace

std::vector<Workload> collect_workloads(const std::string& set, const std::vector<std::string>& specs,
                                        const std::string& size, double scale) {
  (void)scale;
  std::vector<Workload> ws;
  if (set == "real" || set == "all") {
    add_real(ws, size);
  } else if (!set.empty()) {
    throw std::invalid_argument("unknown workload set '" + set + "' (paper, extended, real, all)");
  }
  for (const auto& p : specs) {
    Spec s = load_spec(p);
    std::string src = read_kernel_source(s);
    ws.push_back({std::move(s), std::move(src), "spec"});
  }
  return ws;
}

}  // namespace dop::cli
