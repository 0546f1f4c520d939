#include "workloads.hpp"

namespace dop::cli {

std::vector<Workload> collect_workloads(const std::string& set, const std::vector<std::string>& specs,
                                        const std::string& size, double scale) {
  (void)size;
  (void)scale;
  std::vector<Workload> ws;
  if (!set.empty()) throw std::invalid_argument("unknown workload set '" + set + "'");
  for (const auto& p : specs) {
    Spec s = load_spec(p);
    std::string src = read_kernel_source(s);
    ws.push_back({std::move(s), std::move(src), "spec"});
  }
  return ws;
}

}  // namespace dop::cli
