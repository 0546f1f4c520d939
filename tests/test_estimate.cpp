// The analytic estimate (predictor/src/estimate.hpp): hand-computed cases, the features the predictor computes from
// it, its platform figures from a platform record and in the model file.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "dop/predictor.hpp"
#include "estimate.hpp"
#include "support.hpp"

using namespace dop::pred;

namespace {

// Round figures, so that every case below is computed by hand.
PlatformFigures figures() {
  PlatformFigures f;
  f.cpu_triad_gbs = {{1, 10}, {4, 40}, {16, 80}};
  f.cpu_launch_us = 50;
  f.cpu_gops_float = 10;  // per core
  f.cpu_gops_int = 10;
  f.gpu_triad_gbs = 1000;
  f.gpu_launch_us = 20;
  f.gpu_gops_float = 10000;
  f.gpu_gops_int = 5000;
  f.h2d_gbs = 50;
  f.d2h_gbs = 25;
  f.h2d_latency_us = 10;
  f.d2h_latency_us = 10;
  return f;
}

EstimateInputs streaming() {  // a triad-like kernel: 12 bytes and 2 operations per work-item
  EstimateInputs in;
  in.items = 1e6;
  in.bytes_per_item = 12;
  in.float_ops_per_item = 2;
  return in;
}

constexpr int kCores = 16;

Feature code_feature(const std::string& key) {
  Feature f;
  f.name = f.key = key;
  return f;
}

// A one-tree model on the estimate: est_rel < 1.0001 (the estimate's best configurations) scores 1, others 0.
Model estimate_model() {
  Model m;
  m.type = "gbt";
  m.objective = "reg:squarederror";
  m.output = "normalised_performance";
  m.platform.id = "test-platform";
  m.platform.cpu_units = kCores;
  m.platform.gpu_units = 4;
  m.platform.figures = figures();
  m.cpu_levels = {0, 0.25, 0.5, 0.75, 1};
  m.gpu_levels = {0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1};
  m.features = {code_feature("global_bytes_per_item"), code_feature("arith_float"), builtin_feature("cpu_util"),
                builtin_feature("gpu_util"),           builtin_feature("est_ms"),   builtin_feature("est_rel"),
                builtin_feature("est_best_ms")};
  Tree t;
  t.feature = {5, -1, -1};
  t.threshold = {1.0001f, 0, 0};
  t.left = {1, -1, -1};
  t.right = {2, -1, -1};
  t.default_left = {0, 0, 0};
  t.value = {0, 1, 0};
  m.trees = {t};
  return m;
}

std::string tmp(const std::string& f) { return std::string(DOP_BINARY_DIR) + "/estimate_test_" + f; }

}  // namespace

TEST_CASE("the estimate on hand-computed cases", "[estimate]") {
  const PlatformFigures f = figures();
  SECTION("CPU bandwidth: linear between measured core counts, proportional below the first") {
    CHECK(cpu_bandwidth_gbs(f, 16) == Approx(80));
    CHECK(cpu_bandwidth_gbs(f, 8) == Approx(40 + 40.0 * 4 / 12));
    CHECK(cpu_bandwidth_gbs(f, 32) == Approx(80));
    CHECK(cpu_bandwidth_gbs(f, 0) == 0);
  }
  SECTION("a streaming kernel is bandwidth-bound on the CPU: bytes / bandwidth + launch latency") {
    // 12e6 bytes / 80 GB/s = 0.15 ms, + 50 us; the 2e6 operations would take 0.0125 ms on 16 cores.
    CHECK(estimate_ms(f, streaming(), {1, 0}, kCores) == Approx(0.2));
    CHECK(estimate_ms(f, streaming(), {0.5, 0}, kCores) == Approx(12e6 / (40 + 40.0 * 4 / 12) / 1e6 + 0.05));
  }
  SECTION("a compute-heavy kernel is compute-bound") {
    EstimateInputs in = streaming();
    in.bytes_per_item = 4;
    in.float_ops_per_item = 1000;
    in.data_on_gpu = true;
    // CPU: 1e9 operations / (16 cores x 10 Gop/s) = 6.25 ms, + 50 us (its 4e6 bytes would take 0.05 ms).
    CHECK(estimate_ms(f, in, {1, 0}, kCores) == Approx(6.3));
    // GPU: 1e9 / 10,000 Gop/s = 0.1 ms, + 20 us; at half the units, half the rate.
    CHECK(estimate_ms(f, in, {0, 1}, kCores) == Approx(0.12));
    CHECK(estimate_ms(f, in, {0, 0.5}, kCores) == Approx(0.22));
  }
  SECTION("data in host memory costs the GPU its copies; resident data none") {
    EstimateInputs in = streaming();
    in.data_on_gpu = true;
    // 12e6 bytes at 1000 GB/s = 0.012 ms, + 20 us launch.
    CHECK(estimate_ms(f, in, {0, 1}, kCores) == Approx(0.032));
    in.data_on_gpu = false;
    // Without buffer sizes the traffic is copied in: + 12e6 / 50 GB/s = 0.24 ms and both copy latencies.
    CHECK(estimate_ms(f, in, {0, 1}, kCores) == Approx(0.032 + 0.24 + 0.02));
    in.in_bytes = 8e6;
    in.out_bytes = 4e6;
    // 8e6 / 50 GB/s + 4e6 / 25 GB/s = 0.32 ms.
    CHECK(estimate_ms(f, in, {0, 1}, kCores) == Approx(0.032 + 0.32 + 0.02));
    // A quarter of the units draws half the bandwidth (sqrt).
    in.data_on_gpu = true;
    CHECK(estimate_ms(f, in, {0, 0.25}, kCores) == Approx(0.024 + 0.02));
  }
  SECTION("random accesses move at the gather bandwidths, where the platform has them") {
    EstimateInputs in = streaming();
    in.data_on_gpu = true;
    in.random_share = 0.25;  // a quarter of the memory operations at data-dependent addresses
    // Not measured (0): every byte at the streaming bandwidths, as before.
    CHECK(estimate_ms(f, in, {1, 0}, kCores) == Approx(0.2));
    CHECK(estimate_ms(f, in, {0, 1}, kCores) == Approx(0.032));
    PlatformFigures g = f;
    g.cpu_gather_gbs = 8;  // a tenth of the CPU's triad at all cores
    g.gpu_gather_gbs = 250;
    // CPU: 9e6 bytes at 80 GB/s + 3e6 at 8 GB/s = 0.1125 + 0.375 ms, + 50 us.
    CHECK(estimate_ms(g, in, {1, 0}, kCores) == Approx(0.1125 + 0.375 + 0.05));
    // At 4 cores the triad is 40 of 80 GB/s, and the gather half of its figure too: 0.225 + 0.75 ms.
    CHECK(estimate_ms(g, in, {0.25, 0}, kCores) == Approx(0.225 + 0.75 + 0.05));
    // GPU: 9e6 at 1000 GB/s + 3e6 at 250 GB/s = 0.009 + 0.012 ms, + 20 us.
    CHECK(estimate_ms(g, in, {0, 1}, kCores) == Approx(0.009 + 0.012 + 0.02));
    in.random_share = 0;  // a kernel without random accesses is unchanged
    CHECK(estimate_ms(g, in, {1, 0}, kCores) == Approx(0.2));
  }
  SECTION("two devices of equal rates share the work and finish together") {
    PlatformFigures g = f;
    g.gpu_triad_gbs = 80;  // the GPU streams as fast as 16 cores
    g.gpu_launch_us = 50;
    EstimateInputs in = streaming();
    in.data_on_gpu = true;
    const double cpu = estimate_ms(g, in, {1, 0}, kCores), gpu = estimate_ms(g, in, {0, 1}, kCores),
                 both = estimate_ms(g, in, {1, 1}, kCores);
    CHECK(cpu == Approx(0.2));
    CHECK(gpu == Approx(0.2));
    CHECK(both == Approx(0.075 + 0.05));  // half the items each, one launch latency
    CHECK(both < std::min(cpu, gpu));
    CHECK(best_estimate_ms(g, in, kCores) == both);
  }
  SECTION("a device whose share would be empty sits out") {
    // 1,000 work-items: the GPU's 40 us of launch and copy latency exceed what the CPU needs for all of them.
    PlatformFigures g = f;
    g.cpu_launch_us = 5;
    EstimateInputs in = streaming();
    in.items = 1000;
    CHECK(estimate_ms(g, in, {1, 0}, kCores) == Approx(0.005 + 12e3 / 80e9 * 1e3));
    CHECK(estimate_ms(g, in, {1, 1}, kCores) == estimate_ms(g, in, {1, 0}, kCores));
  }
  SECTION("with the staging modelled, the GPU's copies and the CPU's traffic share the host's bandwidth") {
    // The host bandwidth is the CPU's best triad, 80 GB/s; each copied byte crosses host memory 3 times.
    PlatformFigures g = f;
    g.staging_passes = 3;
    CHECK(host_bandwidth_gbs(g) == 80);
    CHECK(host_bandwidth_gbs(f) == 0);  // not modelled (a model file from before): independent rates, as above
    EstimateInputs in = streaming();
    in.in_bytes = 8e6;
    in.out_bytes = 4e6;
    // The CPU alone already moves its 12e6 bytes at the host's bandwidth: unchanged.
    CHECK(estimate_ms(g, in, {1, 0}, kCores) == Approx(0.2));
    // The GPU alone: its copies (0.32 ms at the copy bandwidths) would need 36e6 bytes of host traffic, 0.45 ms.
    CHECK(estimate_ms(f, in, {0, 1}, kCores) == Approx(0.372));
    CHECK(estimate_ms(g, in, {0, 1}, kCores) == Approx(0.45));
    // Both: every item the GPU takes costs the host 3x what the CPU's costs, and the CPU alone moves its bytes at
    // the host's bandwidth: the GPU gains only the bandwidth the CPU leaves during its 50 us of launch. The CPU
    // takes 8/9 of the items (0.05 + 0.15 * 8/9 ms = the host's 12 * 8/9 + 36 / 9 bytes per item at 80 GB/s);
    // independent rates would have promised about 0.15 ms.
    CHECK(estimate_ms(f, in, {1, 1}, kCores) == Approx(0.15).epsilon(0.01));
    CHECK(estimate_ms(g, in, {1, 1}, kCores) == Approx(0.05 + 0.15 * 8 / 9));
    CHECK(best_estimate_ms(g, in, kCores) == Approx(0.05 + 0.15 * 8 / 9));
    // Half the cores leave host bandwidth to the GPU's staging: better than those cores alone, worse than all.
    const double half = estimate_ms(g, in, {0.5, 0}, kCores), half_gpu = estimate_ms(g, in, {0.5, 1}, kCores);
    CHECK(half_gpu < half);
    CHECK(half_gpu > 0.2);
    // Resident data: no staging, so the bound is the CPU's own traffic and the devices share as before.
    in.data_on_gpu = true;
    CHECK(estimate_ms(g, in, {1, 1}, kCores) == Approx(estimate_ms(f, in, {1, 1}, kCores)));
    // Page-locked host data: the inputs cross host memory once (the DMA reads them in place), the outputs still 3
    // times: 8e6 + 3 x 4e6 = 20e6 bytes, 0.25 ms at 80 GB/s, under the copies' 0.32 ms: the GPU alone is bound by
    // its copies again, and both devices gain over pageable data; the CPU alone does not change.
    in.data_on_gpu = false;
    const double pageable_both = estimate_ms(g, in, {1, 1}, kCores);
    in.data_pinned = true;
    CHECK(estimate_ms(g, in, {0, 1}, kCores) == Approx(0.372));
    CHECK(estimate_ms(g, in, {1, 0}, kCores) == Approx(0.2));
    CHECK(estimate_ms(g, in, {1, 1}, kCores) < pageable_both);
    in.data_on_gpu = true;  // resident data: where the valid copy is wins over the host memory's kind
    CHECK(estimate_ms(g, in, {1, 1}, kCores) == Approx(estimate_ms(f, in, {1, 1}, kCores)));
  }
  SECTION("the shares that minimise the bounded time are the least of a fine search") {
    // Random device costs: the closed form (where two of the three bounds cross) against 100,001 shares.
    uint64_t x = 42;
    auto uniform = [&] {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      return double(x >> 11) / double(1ULL << 53);
    };
    for (int k = 0; k < 200; ++k) {
      DeviceCost cpu, gpu;
      cpu.per_item_s = 1e-9 * (0.1 + 10 * uniform());
      gpu.per_item_s = 1e-9 * (0.1 + 10 * uniform());
      cpu.rate = 1 / cpu.per_item_s;
      gpu.rate = 1 / gpu.per_item_s;
      cpu.overhead_s = 1e-4 * uniform();
      gpu.overhead_s = 1e-4 * uniform();
      cpu.host_bytes_per_item = 40 * uniform();
      gpu.host_bytes_per_item = 40 * uniform();
      const double items = 1e5 * (1 + 10 * uniform()), host_gbs = 5 + 100 * uniform(), bps = host_gbs * 1e9;
      double least = INFINITY;
      for (int i = 0; i <= 100000; ++i) {
        const double n = items * i / 100000.0;
        double t = (n * cpu.host_bytes_per_item + (items - n) * gpu.host_bytes_per_item) / bps;
        if (n > 0) t = std::max(t, cpu.overhead_s + n * cpu.per_item_s);
        if (n < items) t = std::max(t, gpu.overhead_s + (items - n) * gpu.per_item_s);
        least = std::min(least, t);
      }
      CHECK(combined_ms(cpu, gpu, items, host_gbs) == Approx(least * 1e3).epsilon(1e-3));
    }
  }
  SECTION("unknown bytes: no estimate") {
    EstimateInputs in = streaming();
    in.bytes_per_item = std::nan("");
    CHECK(std::isnan(estimate_ms(f, in, {1, 0}, kCores)));
  }
}

TEST_CASE("the estimate's inputs come from the code features and the launch", "[estimate]") {
  std::vector<Feature> fs = {
      code_feature("mem_continuous"), code_feature("mem_stride"), code_feature("global_bytes_per_item"),
      code_feature("arith_float"),    code_feature("arith_int"),  code_feature("arith_special")};
  const EstimateKeys k = estimate_keys(fs);
  const LaunchShape l = LaunchShape::parse("1024,16", "64,1");
  // 2 + 1 global operations in the source; 120 bytes per work-item: the loops run 10 times.
  const double with_bytes[] = {2, 1, 120, 3, 4, 1};
  EstimateInputs in = estimate_inputs(k, with_bytes, l);
  CHECK(in.items == 16384);
  CHECK(in.bytes_per_item == 120);
  CHECK(in.float_ops_per_item == (3 + 7 * 1) * 10);  // a math builtin costs 8 operations
  CHECK(in.int_ops_per_item == 40);
  // Without a byte count: 4 bytes per operation, the loops once; the buffers' bytes when the launch knows them.
  const double without[] = {2, 1, std::nan(""), 3, 4, 0};
  in = estimate_inputs(k, without, l);
  CHECK(in.traffic_per_item() == 12);
  in.in_bytes = 16384 * 16;
  in.out_bytes = 16384 * 4;
  CHECK(in.traffic_per_item() == 20);
  CHECK(in.float_ops_per_item == 3);
  CHECK(in.known());
  CHECK(in.random_share == 0);  // no mem_random feature
  // Nothing of the memory: unknown.
  CHECK_FALSE(estimate_inputs(estimate_keys({code_feature("arith_float")}), without, l).known());
  // The random share: mem_random over every class of global memory operation (SpMV's x[col[k]]: 1 of 5).
  const EstimateKeys kr =
      estimate_keys({code_feature("mem_constant"), code_feature("mem_continuous"), code_feature("mem_stride"),
                     code_feature("mem_random"), code_feature("global_bytes_per_item")});
  const double spmv[] = {0, 4, 0, 1, 24};
  CHECK(estimate_inputs(kr, spmv, l).random_share == Approx(0.2));
}

TEST_CASE("the predictor's estimate features are the estimate", "[estimate]") {
  const Model m = estimate_model();
  const Predictor p(m);
  const LaunchShape l = LaunchShape::parse("1000000", "100");
  const double code[] = {12, 2};  // streaming()
  const EstimateInputs in = streaming();
  REQUIRE(in.items == double(l.global_size()));
  std::vector<float> x(m.features.size());
  const double best = best_estimate_ms(*m.platform.figures, in, kCores);
  for (const Config& c : m.configs()) {
    feature_vector(m.features, m.platform, code, l, c, x.data());
    const double est = estimate_ms(*m.platform.figures, in, c, kCores);
    CHECK(x[4] == static_cast<float>(est));
    CHECK(x[5] == static_cast<float>(est / best));
    CHECK(x[6] == static_cast<float>(best));
  }
  // One decision's vectors at once (the reference scorer's and the trainer's way) are the same vectors.
  const auto configs = m.configs();
  std::vector<float> all(configs.size() * m.features.size());
  feature_vectors(m.features, m.platform, code, l, configs, all.data());
  for (size_t c = 0; c < configs.size(); ++c) {
    feature_vector(m.features, m.platform, code, l, configs[c], x.data());
    CHECK(std::equal(x.begin(), x.end(), all.begin() + long(c * x.size())));
  }
  // The tree scores the estimate's best configuration 1: the predictor picks it, by the fast path too.
  std::vector<double> fast(m.configs().size()), ref(fast.size());
  p.scores(code, l, fast.data());
  p.scores_reference(code, l, ref.data());
  CHECK(fast == ref);
  const Decision d = p.decide(code, l);
  CHECK(d.predicted == 1.0);
  CHECK(estimate_ms(*m.platform.figures, in, d.config, kCores) == best);
  // An unknown launch (no bytes): the estimate features are missing and go the default way (right: 0).
  const double unknown[] = {std::nan(""), 2};
  p.scores(unknown, l, fast.data());
  p.scores_reference(unknown, l, ref.data());
  CHECK(fast == ref);
  CHECK(p.decide(unknown, l).predicted == 0.0);
}

TEST_CASE("the estimate's figures travel in the model file", "[estimate]") {
  const Model m = estimate_model();
  const std::string path = tmp("model.json");
  m.save(path);
  const Model back = Model::load(path);
  REQUIRE(back.platform.figures);
  CHECK(back.platform.figures->gpu_gops_int == 5000);
  CHECK(back.platform.figures->cpu_triad_gbs.size() == 3);
  CHECK(back.platform.figures->cpu_triad_gbs[1].gbs == 40);
  CHECK(back.to_json() == m.to_json());

  SECTION("the staging figure travels; a file from before it reads 0 (not modelled)") {
    Model staged = m;
    staged.platform.figures->staging_passes = 3;
    CHECK(Model::parse(staged.to_json(), "m.json").platform.figures->staging_passes == 3);
    nlohmann::json j = nlohmann::json::parse(staged.to_json());
    j["estimate"].erase("staging_passes");
    CHECK(Model::parse(j.dump(), "m.json").platform.figures->staging_passes == 0);
    j["estimate"]["staging_passes"] = -1;
    CHECK_THROWS_WITH(Model::parse(j.dump(), "m.json"),
                      Catch::Contains("$.estimate.staging_passes: not a finite non-negative number"));
  }
  SECTION("an older file without the section loads") {
    const Model old = Model::load(std::string(DOP_SOURCE_DIR) + "/tests/data/models/gbt.json");
    CHECK_FALSE(old.platform.figures);
    CHECK(old.to_json().find("\"estimate\"") == std::string::npos);
  }
  SECTION("a malformed section is refused, naming the field") {
    const nlohmann::json good = nlohmann::json::parse(m.to_json());
    auto refuse = [&](const std::function<void(nlohmann::json&)>& edit, const std::string& expected) {
      nlohmann::json j = good;
      edit(j);
      CHECK_THROWS_WITH(Model::parse(j.dump(1), "m.json"), Catch::Contains("m.json") && Catch::Contains(expected));
    };
    refuse([](auto& j) { j["estimate"]["gpu_triad_gbs"] = "fast"; }, "$.estimate.gpu_triad_gbs: not a number");
    refuse([](auto& j) { j["estimate"]["h2d_gbs"] = -50; }, "$.estimate.h2d_gbs: not a finite positive number");
    refuse([](auto& j) { j["estimate"].erase("d2h_gbs"); }, "$.estimate.d2h_gbs: missing");
    refuse([](auto& j) { j["estimate"]["cpu_gather_gbs"] = -3; },
           "$.estimate.cpu_gather_gbs: not a finite non-negative number");
    refuse([](auto& j) { j["estimate"]["cpu_triad_gbs_by_cores"][1]["cores"] = 1; },
           "$.estimate.cpu_triad_gbs_by_cores[1].cores: core counts must be >= 1 and increase");
    refuse([](auto& j) { j["estimate"]["defaults"] = "none"; }, "$.estimate.defaults: not an array");
    refuse([](auto& j) { j.erase("estimate"); }, "an estimate feature, and the model has no estimate section");
  }
}

TEST_CASE("the estimate's figures come from a platform record, defaults named", "[estimate]") {
  const std::string rec = std::string(DOP_SOURCE_DIR) + "/models/h100-xeon16/platform.json";
  const PlatformFigures f = PlatformFigures::from_record(dop::test::read_file(rec), rec);
  // Each figure is the record's own (the platform is characterized again from time to time).
  const auto j = nlohmann::json::parse(dop::test::read_file(rec));
  CHECK(f.cpu_triad_gbs.size() == j["cpu"]["triad_gbs_by_cores"].size());
  CHECK(f.cpu_triad_gbs.back().cores == 16);
  CHECK(f.cpu_triad_gbs.back().gbs == j["cpu"]["triad_gbs_by_cores"].back()["triad_gbs"].get<double>());
  CHECK(f.gpu_triad_gbs == j["gpu"]["triad_gbs"].get<double>());
  CHECK(f.h2d_gbs == j["gpu"]["copy_pinned"]["h2d_gbs"].get<double>());  // pinned: the runtime stages into it
  CHECK(f.gpu_launch_us == j["gpu"]["launch_latency_us"].get<double>());
  CHECK(f.cpu_gops_float == j["cpu"]["peak_gops_float_per_core"].get<double>());  // per core, measured
  CHECK(f.cpu_gather_gbs == j["cpu"]["gather_gbs"].get<double>());                // measured since 2026-11-27
  CHECK(f.gpu_gather_gbs == j["gpu"]["gather_gbs"].get<double>());
  CHECK(f.cpu_gather_gbs > 0);
  CHECK(f.staging_passes == 3);  // the runtime's staging, not the platform's: set, and not a default
  CHECK(f.defaults.empty());
  // A record that predates the gather bandwidths: they are 0 (random accesses cost what streaming ones do), named.
  auto no_gather = j;
  no_gather["cpu"].erase("gather_gbs");
  no_gather["gpu"].erase("gather_gbs");
  const PlatformFigures g = PlatformFigures::from_record(no_gather.dump(), rec);
  CHECK(g.cpu_gather_gbs == 0);
  CHECK(g.gpu_gather_gbs == 0);
  CHECK(g.defaults == std::vector<std::string>{"cpu_gather_gbs", "gpu_gather_gbs"});
  // A record that predates the peak rates: those four are defaults, and say so.
  auto old_record = no_gather;
  for (const char* k : {"peak_gops_float_per_core", "peak_gops_int_per_core"}) old_record["cpu"].erase(k);
  for (const char* k : {"peak_gops_float", "peak_gops_int"}) old_record["gpu"].erase(k);
  CHECK(PlatformFigures::from_record(old_record.dump(), rec).defaults ==
        std::vector<std::string>{"cpu_gops_float_per_core", "cpu_gops_int_per_core", "gpu_gops_float", "gpu_gops_int",
                                 "cpu_gather_gbs", "gpu_gather_gbs"});
  CHECK(PlatformFigures::from_record("{}", "empty").defaults.size() == 14);
  // A record with them (dop characterize since 2026-11-27) is read.
  auto new_record = no_gather;
  new_record["cpu"]["gather_gbs"] = 9.5;
  new_record["gpu"]["gather_gbs"] = 310.0;
  const PlatformFigures n = PlatformFigures::from_record(new_record.dump(), rec);
  CHECK(n.cpu_gather_gbs == 9.5);
  CHECK(n.gpu_gather_gbs == 310.0);
  CHECK(n.defaults.empty());
  new_record["gpu"]["gather_gbs"] = -1.0;
  CHECK_THROWS_WITH(PlatformFigures::from_record(new_record.dump(), rec),
                    Catch::Contains("gpu_gather_gbs: not a finite non-negative number"));
  CHECK_THROWS_WITH(PlatformFigures::from_record("{\"gpu\": {\"triad_gbs\": \"x\"}}", "p.json"),
                    Catch::Contains("p.json: gpu.triad_gbs: not a number"));
  CHECK_THROWS_WITH(PlatformFigures::from_record("[", "p.json"), Catch::Contains("p.json: not a JSON object"));
}
