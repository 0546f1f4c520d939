// Feature extraction time per kernel (parse + analysis, as `dop features --kernel K` does it), over every .cl file
// under tests/data/features, kernels/ and synthetic/ of the source tree, and under $DOP_BENCH_KERNELS if set (e.g. a
// folder of generated synthetic kernels). Run with --benchmark_repetitions=N: the summary at the end gives the
// median over kernels of each kernel's median time, against the 10 ms target (docs/features.md).
#include <benchmark/benchmark.h>

#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "dop/features.hpp"

namespace fs = std::filesystem;

namespace {

struct Item {
  std::string label;  // path relative to its root, ":kernel"
  std::string path;
  std::string kernel;
  std::string source;
};

std::vector<Item> collect() {
  std::vector<fs::path> roots = {fs::path(DOP_SOURCE_DIR) / "tests" / "data" / "features",
                                 fs::path(DOP_SOURCE_DIR) / "kernels", fs::path(DOP_SOURCE_DIR) / "synthetic"};
  if (const char* extra = std::getenv("DOP_BENCH_KERNELS"); extra && *extra) roots.emplace_back(extra);
  std::vector<Item> items;
  for (const auto& root : roots) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) continue;
    std::vector<fs::path> files;
    for (fs::recursive_directory_iterator it(root, ec), end; it != end && !ec; it.increment(ec))
      if (it->is_regular_file(ec) && it->path().extension() == ".cl") files.push_back(it->path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::ostringstream s;
      s << in.rdbuf();
      const auto r = dop::features::analyze(s.str(), f.string());
      const auto rel = fs::relative(f, fs::path(DOP_SOURCE_DIR), ec);
      const std::string shown = (!ec && !rel.empty() && *rel.begin() != "..") ? rel.string() : f.string();
      for (const auto& k : r.kernels) items.push_back({shown + ":" + k.name, f.string(), k.name, s.str()});
    }
  }
  return items;
}

/// Console output as usual, plus the per-kernel medians collected for the summary.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  SummaryReporter() : ConsoleReporter(isatty(1) ? OO_ColorTabular : OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& r : runs) {
      const std::string agg = r.aggregate_name;
      if (agg == "median" || (agg.empty() && r.repetitions <= 1 && r.run_type == Run::RT_Iteration))
        medians_[r.benchmark_name()] = r.GetAdjustedRealTime();  // in the benchmark's unit (ms)
    }
  }
  void summary() const {
    if (medians_.empty()) return;
    std::vector<double> v;
    for (const auto& [name, t] : medians_) v.push_back(t);
    std::sort(v.begin(), v.end());
    const double median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    std::printf(
        "\nfeature extraction: %zu kernels, median %.2f ms per kernel (min %.2f, max %.2f); "
        "target <= 10 ms: %s\n",
        v.size(), median, v.front(), v.back(), median <= 10.0 ? "met" : "NOT met");
  }

 private:
  std::map<std::string, double> medians_;
};

}  // namespace

int main(int argc, char** argv) {
  static const std::vector<Item> items = collect();
  for (const auto& item : items) {
    benchmark::RegisterBenchmark(item.label.c_str(), [&item](benchmark::State& state) {
      dop::features::Options o;
      o.kernel = item.kernel;
      for (auto _ : state) {
        auto r = dop::features::analyze(item.source, item.path, o);
        benchmark::DoNotOptimize(r);
        if (r.kernels.size() != 1) state.SkipWithError("kernel not found");
      }
    })->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.summary();
  benchmark::Shutdown();
  return 0;
}
