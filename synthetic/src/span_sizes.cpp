// The span families' sizes: what a workload reads, writes and computes, an analytic cost model of the reference
// platform (h100-xeon16: 16 Xeon cores under PoCL, an H100 over PCIe, the data in host memory), and the size ladder
// that the model calibrates: rung 1 about 0.5 ms at the best configuration, the top rung up to 500 ms where the
// slowest configuration and the memory allow (docs/synthetic.md, "The span set"; a sample timed on that host in
// models/h100-xeon16/span/).
#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "dop/synthetic.hpp"
#include "internal.hpp"

namespace dop::synthetic::detail {

namespace {

// The model's figures. Sources: models/h100-xeon16/platform.json (triad bandwidths, launch latencies, copies) and
// the real kernels swept on that host (models/h100-xeon16/real/real-{small,sweep}-copy.csv.gz: atax, mvt, bicg,
// gemm, syr2k, conv2d, fdtd2d); the compute rates are assumptions (docs/synthetic.md lists which is which).
struct Platform {
  // CPU, 16 cores under PoCL.
  double cpu_fixed_s = 0.15e-3;     // the real kernels' fastest rows at small size (engine + launch)
  double cpu_stream_bps = 86e9;     // platform.json triad at 16 cores
  double cpu_rows_bps = 32e9;       // a row per work-item: atax1, mvt1, bicg2 at n = 4096 (27-37 GB/s)
  double cpu_cols_bps = 6.5e9;      // a column per work-item: atax2, mvt2, bicg1 at n = 4096 (6-7 GB/s)
  double cpu_stencil_bps = 35e9;    // conv2d, fdtd2d at 4096^2 (about 33 GB/s of compulsory traffic)
  double cpu_mm_flops = 8e9;        // gemm: 18 GFLOP/s at n = 512, 6 at n = 1024 (multiply-adds of a naive product)
  double cpu_mmt_flops = 16e9;      // assumed: both operands along rows per work-item (not measured)
  double cpu_chain_flops = 1.0e12;  // assumed: dependent FMAs over 16 AVX-512 cores, vectorized across work-items
  double cpu_gather_bps = 17e9;     // spmv, pagerank at n = 4M, 64 per row: 2.1 GB of compulsory traffic in 120-125 ms
  // GPU, the whole H100, inputs copied in and the output copied out.
  double gpu_fixed_s = 0.20e-3;       // the real kernels' fastest GPU rows at small size
  double gpu_copy_bps = 33e9;         // host<->GPU in the sweep: 30-49 GB/s effective (55 pinned, platform.json)
  double gpu_stream_bps = 1260e9;     // platform.json triad
  double gpu_mm_flops = 2e12;         // gemm at n = 1024: about 1.8 TFLOP/s including the copies
  double gpu_mmt_flops = 0.7e12;      // assumed: B read along rows per work-item (uncoalesced)
  double gpu_chain_flops = 25e12;     // assumed: half of the 50 TFLOP/s fp32 for dependent chains
  double gpu_gather_bps = 400e9;      // assumed: a 4-byte gather per 32-byte sector, a third of the triad's
  double gpu_iter_s = 0.25e-6;        // a reduction step per wave of resident work-items (atax2, mvt2: 0.2-0.3 us)
  double gpu_fma_latency_s = 2.4e-9;  // a dependent FMA in that step (4 cycles at 1.7 GHz)
  double gpu_resident = 132 * 2048;   // work-items resident at once (132 SMs x 2048)
  // The slowest configurations of the grid relative to the whole device (the real sweep: 2.7-3.3x for 4 of 16
  // cores, 1.6-3.8x for 1/8 of the GPU).
  double cpu_quarter = 3.2;
  double gpu_eighth = 3.0;
};
const Platform kPlatform;

// The ladder (scale 1): rung r targets kRung1 * (top / kRung1)^((r-1)/4) at the best configuration, where the top
// is kTop or less: the largest size whose slowest configuration stays within kSlowest (a sweep row then costs at most
// 4 x 4 s with --repeat 3 --warmup 1) and whose buffers stay within kFootprint (PoCL's CPU device on the host
// reports 5.4 GB of global memory).
constexpr double kRung1 = 0.5e-3;
constexpr double kTop = 0.5;
constexpr double kSlowest = 4.0;
constexpr double kFootprint = 2.0 * 1024 * 1024 * 1024;
constexpr int kRungs = 5;

bool product(Family f) { return f == Family::matmul || f == Family::matmul_bt; }

// gv: the entries per row (a sparse matrix's row length; spmv and pagerank in the real set have 64).
constexpr double kGatherRow = 16;

// Extents at a real-valued size n (square problems: M = N = K = n; tri: N = n).
std::vector<double> extents_at(const Params& p, double n) {
  if (p.family == Family::triad) return {n};
  if (product(p.family)) return {n, n, n};
  if (p.family == Family::gather) return {n, kGatherRow};
  return {n, n};
}

// How the work grows with n: n (tri, gv), n^2 (matrix-vector, stencils), n^3 (products).
int work_exponent(Family f) { return f == Family::triad || f == Family::gather ? 1 : product(f) ? 3 : 2; }

SpanCost cost_at(const Params& p, const std::vector<double>& n) {
  const Platform& P = kPlatform;
  SpanCost c;
  const double g = p.gamma;
  double in = 0, out = 0, items = 0, steps = 0;  // steps: reduction length per work-item
  switch (p.family) {
    case Family::triad:
      in = 2 * n[0];
      out = n[0];
      c.terms = n[0];
      items = n[0];
      steps = 1;
      break;
    case Family::matmul:
    case Family::matmul_bt:
      in = n[0] * n[2] + n[2] * n[1];
      out = n[0] * n[1];
      c.terms = n[0] * n[1] * n[2];
      items = n[0] * n[1];
      steps = n[2];
      break;
    case Family::matvec_rows:
    case Family::matvec_cols:
      in = n[0] * n[1] + (p.family == Family::matvec_rows ? n[1] : n[0]);
      out = p.family == Family::matvec_rows ? n[0] : n[1];
      c.terms = n[0] * n[1];
      items = out;
      steps = p.family == Family::matvec_rows ? n[1] : n[0];
      break;
    case Family::gather:  // A and C: K per row; x; y
      in = 2 * n[0] * n[1] + n[0];
      out = n[0];
      c.terms = n[0] * n[1];
      items = n[0];
      steps = n[1];
      break;
    default: {  // stencil: interior points only
      const double r = p.radius;
      const double interior = std::max(0.0, n[0] - 2 * r) * std::max(0.0, n[1] - 2 * r);
      in = n[0] * n[1];
      out = n[0] * n[1];
      c.terms = (4 * r + 1) * interior;
      items = n[0] * n[1];
      steps = 4 * r + 1;
      break;
    }
  }
  c.bytes = 4 * (in + out);
  c.footprint = c.bytes;
  c.flops = 2 * (1 + g) * c.terms;
  const double chain = 2 * g * c.terms;

  double cpu = 0, gpu = 0;
  switch (p.family) {
    case Family::matmul:
    case Family::matmul_bt:
      cpu = 2 * c.terms / (p.family == Family::matmul ? P.cpu_mm_flops : P.cpu_mmt_flops) + chain / P.cpu_chain_flops;
      gpu = 2 * c.terms / (p.family == Family::matmul ? P.gpu_mm_flops : P.gpu_mmt_flops) + chain / P.gpu_chain_flops;
      break;
    default: {
      const double bps = p.family == Family::triad         ? P.cpu_stream_bps
                         : p.family == Family::matvec_rows ? P.cpu_rows_bps
                         : p.family == Family::matvec_cols ? P.cpu_cols_bps
                         : p.family == Family::gather      ? P.cpu_gather_bps
                                                           : P.cpu_stencil_bps;
      cpu = std::max(c.bytes / bps, c.flops / P.cpu_chain_flops);
      gpu = std::max(c.bytes / (p.family == Family::gather ? P.gpu_gather_bps : P.gpu_stream_bps),
                     c.flops / P.gpu_chain_flops);
      break;
    }
  }
  // Few resident work-items (matrix-vector at every size, small products): the reduction's steps are latency-bound.
  const double waves = std::max(1.0, std::ceil(items / P.gpu_resident));
  gpu = std::max(gpu, waves * steps * (P.gpu_iter_s + g * P.gpu_fma_latency_s));
  c.cpu_ms = 1e3 * (P.cpu_fixed_s + cpu);
  c.gpu_ms = 1e3 * (P.gpu_fixed_s + c.bytes / P.gpu_copy_bps + gpu);
  // Work is shared dynamically between the devices; a split is about 10 % short of the ideal one.
  const double split = 1.1 / (1 / c.cpu_ms + 1 / c.gpu_ms);
  c.best_ms = std::min({c.cpu_ms, c.gpu_ms, split});
  c.slowest_ms = std::max(c.cpu_ms * P.cpu_quarter, c.gpu_ms * P.gpu_eighth);
  return c;
}

// The smallest real n at which `measure` (increasing in n) reaches `target`.
template <typename F>
double solve(F measure, double target) {
  double lo = 1, hi = 1e10;
  for (int i = 0; i < 200 && hi / lo > 1 + 1e-9; ++i) {
    const double mid = std::sqrt(lo * hi);
    (measure(mid) < target ? lo : hi) = mid;
  }
  return lo;
}

// The real size n of a rung at scale 1.
double ladder_size(const Params& p) {
  const auto at = [&](double n) { return cost_at(p, extents_at(p, n)); };
  const double cap = std::min(solve([&](double n) { return at(n).slowest_ms; }, 1e3 * kSlowest),
                              solve([&](double n) { return at(n).footprint; }, kFootprint));
  const double top = std::min(1e3 * kTop, at(cap).best_ms);
  const double target = 1e3 * kRung1 * std::pow(top / (1e3 * kRung1), double(p.size - 1) / (kRungs - 1));
  return solve([&](double n) { return at(n).best_ms; }, target);
}

}  // namespace

SpanCost span_cost(const Params& p, const std::vector<size_t>& n) {
  std::vector<double> d(n.begin(), n.end());
  return cost_at(p, d);
}

std::vector<size_t> span_extents(const Params& p, double scale) {
  // The work (n, n^2 or n^3) is multiplied by scale; n is rounded down to whole 16s (tri: 256s), at least one.
  const double n1 = ladder_size(p);
  const double n = n1 * std::pow(scale, 1.0 / work_exponent(p.family));
  const double step = p.family == Family::triad ? 256 : 16;
  const double least = p.family == Family::stencil ? std::max(16.0, 4.0 * p.radius) : step;
  const double rounded = std::max(least, std::floor(n / step) * step);
  // Every buffer is indexed with 32-bit ints: the largest has n (tri), n K (gv) or n^2 elements.
  const double largest = p.family == Family::triad    ? rounded
                         : p.family == Family::gather ? rounded * kGatherRow
                                                      : rounded * rounded;
  if (largest > double(INT_MAX))
    bad(span_name(p) + ": scale " + std::to_string(scale) + " gives buffers of " + std::to_string(largest) +
        " elements, more than 32-bit indices allow");
  std::vector<size_t> out;
  for (double e : extents_at(p, rounded)) out.push_back(size_t(e));
  return out;
}

}  // namespace dop::synthetic::detail
