#include "workloads.hpp"

#include "dop/kernels.hpp"
#include "dop/synthetic.hpp"

namespace dop::cli {

namespace {
void add_real(std::vector<Workload>& ws, const std::string& size) {
  const auto files = kernels::spec_files(kernels::default_dir(), size);
  if (files.empty())
    throw std::invalid_argument("no real-world kernel specs of size '" + size + "' under " + kernels::default_dir() +
                                " (sizes: small, sweep, paper, large; DOP_KERNELS_DIR moves the folder)");
  for (const auto& f : files) {
    Spec s = load_spec(f);
    std::string src = read_kernel_source(s);
    ws.push_back({std::move(s), std::move(src), "real"});
  }
}

void add_synthetic(std::vector<Workload>& ws, const std::vector<synthetic::Params>& set, const std::string& label,
                   double scale) {
  for (const auto& p : set) {
    auto g = synthetic::generate(p, scale);
    ws.push_back({std::move(g.spec), std::move(g.source), label});
  }
}
}  // namespace

std::vector<Workload> collect_workloads(const std::string& set, const std::vector<std::string>& specs,
                                        const std::string& size, double scale) {
  std::vector<Workload> ws;
  if (set == "paper") {
    add_synthetic(ws, synthetic::paper_set(), "paper", scale);
  } else if (set == "extended") {  // the extension workloads only (the paper set is its own set)
    std::vector<synthetic::Params> ext;
    for (const auto& p : synthetic::extended_set())
      if (p.extended()) ext.push_back(p);
    add_synthetic(ws, ext, "extended", scale);
  } else if (set == "span") {
    add_synthetic(ws, synthetic::span_set(), "span", scale);
  } else if (set == "real") {
    add_real(ws, size);
  } else if (set == "all") {
    add_synthetic(ws, synthetic::paper_set(), "paper", scale);
    std::vector<synthetic::Params> ext;
    for (const auto& p : synthetic::extended_set())
      if (p.extended()) ext.push_back(p);
    add_synthetic(ws, ext, "extended", scale);
    add_synthetic(ws, synthetic::span_set(), "span", scale);
    add_real(ws, size);
  } else if (!set.empty()) {
    throw std::invalid_argument("unknown workload set '" + set + "' (paper, extended, span, real, all)");
  }
  for (const auto& p : specs) {
    Spec s = load_spec(p);
    std::string src = read_kernel_source(s);
    ws.push_back({std::move(s), std::move(src), "spec"});
  }
  return ws;
}

}  // namespace dop::cli
