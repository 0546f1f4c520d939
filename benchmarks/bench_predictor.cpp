// Predictor time per launch decision (all 44 configurations evaluated) and training time, on a synthetic dataset of
// the paper's size (1,238 workloads x 44 configurations = 54,472 rows) generated here from a simple performance model
// (compute and memory rates of the CPU and the GPU, contention for memory bandwidth, launch overheads, noise).
//
//   build/bin/bench_predictor --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Targets (docs/models.md): <= 1 us per decision for the decision tree, <= 20 us for 200 trees of depth 6.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>

#include "dop/predictor.hpp"
#include "dop/trainer.hpp"

using namespace dop;

namespace {

train::Dataset make_dataset(size_t workloads, uint64_t seed) {
  train::Dataset d;
  d.path = "synthetic (bench_predictor)";
  d.platform_id = "synthetic";
  d.code_keys = {"mem_constant", "mem_continuous", "mem_stride", "mem_random", "arith_int", "arith_float"};
  d.cpu_levels = {0, 0.25, 0.5, 0.75, 1};
  d.gpu_levels = {0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1};
  pred::Model grid;
  grid.cpu_levels = d.cpu_levels;
  grid.gpu_levels = d.gpu_levels;
  d.configs = grid.configs();
  d.cpu_units = 16;
  d.has_data = true;  // the models take the data features (data_on_gpu, in_bytes, out_bytes, gpu_recv_bytes)
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  for (size_t i = 0; i < workloads; ++i) {
    train::Workload w;
    w.name = "w" + std::to_string(i);
    w.kernel = "k" + std::to_string(i % 17);
    w.set = "paper";
    const double mc = double(rng() % 3), mcont = double(1 + rng() % 4), ms = double(rng() % 3), mr = double(rng() % 2),
                 ai = double(rng() % 8), af = double(rng() % 8);
    w.code = {mc, mcont, ms, mr, ai, af};
    const bool two_d = rng() % 2;
    const uint64_t n = uint64_t(1) << (14 + rng() % 8);
    w.launch.work_dim = two_d ? 2 : 1;
    w.launch.local = two_d ? std::array<uint64_t, 3>{rng() % 2 ? 8u : 16u, rng() % 2 ? 8u : 16u, 1}
                           : std::array<uint64_t, 3>{rng() % 2 ? 64u : 256u, 1, 1};
    w.launch.global = two_d ? std::array<uint64_t, 3>{uint64_t(std::sqrt(double(n))), uint64_t(std::sqrt(double(n))), 1}
                            : std::array<uint64_t, 3>{n, 1, 1};
    const double items = double(w.launch.global_size());
    const double bytes = 4 * (mcont + 2 * ms + 8 * mr + 0.1 * mc + 1);
    const double flops = ai + af * 1.5 + 1;
    // The data inputs: half the workloads have their data on the GPU already; the others' GPU shares pay a copy.
    w.launch.in_bytes = uint64_t(items * bytes);
    w.launch.out_bytes = uint64_t(items * 4);
    w.launch.data_on_gpu = i % 2;
    for (const auto& c : d.configs) {
      const double cpu_rate = c.cpu * 16 / (flops / 4.0 + bytes / 6.0);  // items per ns
      const double gpu_rate = c.gpu * 132 / (flops / 40.0 + bytes * (1 + mr) / 20.0);
      const double contention = 1 + 0.8 * c.cpu * c.gpu * bytes / (bytes + flops);
      const double t = items / ((cpu_rate + gpu_rate) / contention) * 1e-6 + (c.cpu > 0 ? 0.02 : 0) +
                       (c.gpu > 0 ? 0.05 : 0) +
                       (c.gpu > 0 && !w.launch.data_on_gpu ? double(w.launch.in_bytes) / 20e6 : 0);  // 20 GB/s
      w.time_ms.push_back(t * (1 + 0.05 * u(rng)));
    }
    w.best = size_t(std::min_element(w.time_ms.begin(), w.time_ms.end()) - w.time_ms.begin());
    d.workloads.push_back(std::move(w));
  }
  return d;
}

const train::Dataset& dataset() {
  static const train::Dataset d = make_dataset(1238, 42);
  return d;
}

train::TrainOptions options(const std::string& type) {
  train::TrainOptions o;
  o.type = type;
  o.gpu_units = 132;
  return o;
}

const pred::Model& model(const std::string& type) {
  static std::map<std::string, pred::Model> cache;
  auto it = cache.find(type);
  if (it == cache.end()) {
    const auto suffix = [&](const std::string& s) {
      return type.size() > s.size() && type.compare(type.size() - s.size(), s.size(), s) == 0;
    };
    const bool plain = suffix("-plain"), est = suffix("-est");
    train::TrainOptions o = options(plain ? type.substr(0, type.size() - 6)
                                    : est ? type.substr(0, type.size() - 4)
                                          : type);
    o.derived = !plain;
    if (est) o.estimate = pred::PlatformFigures::from_record("{}", "defaults");  // the documented defaults
    o.threads = 1;  // no idle OpenMP workers spinning next to the decision benchmarks
    if (o.type == "gbt") o.params = {{"rounds", "200"}, {"max_depth", "6"}};
    it = cache.emplace(type, train::train(dataset(), train::all_workloads(dataset()), o)).first;
    if (const char* dir = std::getenv("DOP_BENCH_SAVE_MODELS"))
      it->second.save(std::string(dir) + "/" + type + ".json");
  }
  return it->second;
}

struct Inputs {
  std::vector<std::vector<double>> code;
  std::vector<pred::LaunchShape> launch;
};

Inputs inputs(const pred::Model& m) {
  Inputs in;
  const auto& d = dataset();
  for (size_t i = 0; i < 64; ++i) {
    const auto& w = d.workloads[i * 19 % d.workloads.size()];
    in.code.push_back(pred::code_vector(m.features, w.code_features(d.code_keys), w.launch));
    in.launch.push_back(w.launch);
  }
  return in;
}

void decide(benchmark::State& state, const std::string& type, bool reference) {
  const pred::Model& m = model(type);
  const pred::Predictor p(m);
  const Inputs in = inputs(m);
  std::vector<double> out(p.num_configs());
  size_t i = 0, nodes = 0;
  int depth = 0;
  for (const auto& t : m.trees) {
    nodes += t.size();
    depth = std::max(depth, t.depth());
  }
  for (auto _ : state) {
    const size_t k = i++ & 63;
    if (reference) {
      p.scores_reference(in.code[k].data(), in.launch[k], out.data());
      benchmark::DoNotOptimize(out.data());
    } else {
      benchmark::DoNotOptimize(p.decide(in.code[k].data(), in.launch[k]));
    }
  }
  state.SetLabel(std::to_string(m.trees.size()) + " trees, depth " + std::to_string(depth) + ", " +
                 std::to_string(nodes) + " nodes, " + std::to_string(p.num_configs()) + " configurations");
}

// A committed model of the H100 host deciding the real workloads it was made for (models/h100-xeon16/: the model
// file, real.csv.gz with the code features of features.csv): the shipped model's trees and inputs, not the
// benchmark's own.
void decide_shipped(benchmark::State& state, const std::string& file) {
  const std::string dir = std::string(DOP_SOURCE_DIR) + "/models/h100-xeon16/";
  const pred::Predictor p = pred::Predictor::load(dir + file);
  train::LoadOptions o;
  o.features = dir + "features.csv";
  const train::Dataset d = train::load_dataset(dir + "real.csv.gz", o);
  std::vector<std::vector<double>> code;
  std::vector<pred::LaunchShape> launch;
  for (const auto& w : d.workloads) {
    code.push_back(w.code_vector(p.model().features, d.code_keys));
    launch.push_back(w.launch);
  }
  size_t i = 0;
  for (auto _ : state) {
    const size_t k = i++ % code.size();
    benchmark::DoNotOptimize(p.decide(code[k].data(), launch[k]));
  }
  state.SetLabel(file + ", " + std::to_string(code.size()) + " real workloads, " + std::to_string(p.num_configs()) +
                 " configurations");
}

void BM_DecideDT(benchmark::State& s) { decide(s, "dt", false); }
void BM_DecideGBT200(benchmark::State& s) { decide(s, "gbt", false); }
void BM_DecideRF100(benchmark::State& s) { decide(s, "rf", false); }
// Without the derived launch features (no features that depend on both the launch and the configuration).
void BM_DecideGBT200NoDerived(benchmark::State& s) { decide(s, "gbt-plain", false); }
void BM_DecideRank200(benchmark::State& s) { decide(s, "rank", false); }
// With the estimate features est_ms and est_rel (one value per configuration, computed per decision).
void BM_DecideDTEstimate(benchmark::State& s) { decide(s, "dt-est", false); }
void BM_DecideGBT200Estimate(benchmark::State& s) { decide(s, "gbt-est", false); }
void BM_DecideLinear(benchmark::State& s) { decide(s, "linear", false); }
void BM_ReferenceGBT200(benchmark::State& s) { decide(s, "gbt", true); }
void BM_DecideShippedGBT(benchmark::State& s) { decide_shipped(s, "gbt.json"); }
void BM_DecideShippedDT(benchmark::State& s) { decide_shipped(s, "dt.json"); }

// A memoised decision (the common case at run time: the same kernel launched with the same shape again).
void BM_DecideMemoised(benchmark::State& state) {
  const pred::Predictor p(model("gbt"));
  pred::CodeFeatures c;
  const auto& d = dataset();
  const auto& w = d.workloads[0];
  c = w.code_features(d.code_keys);
  p.decide("kernel.cl:k", c, w.launch);
  for (auto _ : state) benchmark::DoNotOptimize(p.decide("kernel.cl:k", c, w.launch));
}

void train_bench(benchmark::State& state, const std::string& type) {
  const auto& d = dataset();
  train::TrainOptions o = options(type);
  if (type == "gbt") o.params = {{"rounds", "200"}, {"max_depth", "6"}};
  for (auto _ : state) benchmark::DoNotOptimize(train::train(d, train::all_workloads(d), o));
  state.SetLabel(std::to_string(d.workloads.size() * d.configs.size()) + " rows");
}
void BM_TrainDT(benchmark::State& s) { train_bench(s, "dt"); }
void BM_TrainRF100(benchmark::State& s) { train_bench(s, "rf"); }
void BM_TrainGBT200(benchmark::State& s) { train_bench(s, "gbt"); }
void BM_TrainRank200(benchmark::State& s) { train_bench(s, "rank"); }
void BM_TrainLinear(benchmark::State& s) { train_bench(s, "linear"); }

}  // namespace

BENCHMARK(BM_DecideDT)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecideGBT200)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecideGBT200NoDerived)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecideDTEstimate)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecideGBT200Estimate)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecideRF100)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecideRank200)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecideLinear)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReferenceGBT200)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecideShippedGBT)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecideShippedDT)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecideMemoised)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TrainDT)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_TrainRF100)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_TrainGBT200)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_TrainRank200)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_TrainLinear)->Unit(benchmark::kMillisecond)->Iterations(1);

BENCHMARK_MAIN();
