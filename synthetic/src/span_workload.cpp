// Span workload specs: buffers with deterministic data, scalars, launch shape, the output, reference, tolerance and
// the meta that describes the family, its intensity, orientation, rung and expected cost.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "dop/synthetic.hpp"
#include "internal.hpp"

namespace dop::synthetic::detail {

namespace {

ArgSpec input(const std::string& workload, const std::string& name, size_t count) {
  ArgSpec a;
  a.name = name;
  a.type = ElemType::f32;
  a.count = count;
  a.access = Access::read;
  a.init.fill = Init::Fill::random;  // uniform in [0, 1): every term is positive, so sums do not cancel
  a.init.seed = seed(workload + "/" + name);
  a.init.min = 0;
  a.init.max = 1;
  return a;
}

ArgSpec output(const std::string& name, size_t count) {
  ArgSpec a;
  a.name = name;
  a.type = ElemType::f32;
  a.count = count;
  a.access = Access::write;
  a.output = true;  // init: zero (a stencil's border keeps it)
  return a;
}

std::string number(double v, int digits = 4) {
  std::ostringstream s;
  s.precision(digits);
  s << v;
  return s.str();
}

// How the family reuses data and which device its access order suits (meta "reuse", "orientation").
const char* reuse(Family f) {
  switch (f) {
    case Family::triad:
      return "none";
    case Family::matmul:
    case Family::matmul_bt:
      return "n";
    case Family::matvec_rows:
    case Family::matvec_cols:
      return "vector";
    case Family::gather:
      return "random";  // x, K times per row on average, at random places
    default:
      return "stencil";
  }
}
const char* orientation(Family f) {
  switch (f) {
    case Family::matmul:
    case Family::matvec_cols:
      return "gpu";  // coalesced across neighbouring work-items, strided per work-item
    case Family::matmul_bt:
    case Family::matvec_rows:
    case Family::gather:
      return "cpu";  // contiguous per work-item, strided across neighbouring work-items
    default:
      return "both";
  }
}

}  // namespace

void span_spec(const Params& p, const std::vector<size_t>& n, double scale, Workload& w) {
  Spec& s = w.spec;
  double terms_per_output = 1;  // the reduction length, for the tolerance
  switch (p.family) {
    case Family::triad:
      s.args = {input(s.name, "A", n[0]), input(s.name, "B", n[0]), output("Out", n[0]),
                scalar("N", ElemType::i32, double(n[0])), scalar("s", ElemType::f32, kTriadScalar)};
      break;
    case Family::matmul:
    case Family::matmul_bt:
      s.args = {input(s.name, "A", n[0] * n[2]),
                input(s.name, "B", n[2] * n[1]),
                output("C", n[0] * n[1]),
                scalar("M", ElemType::i32, double(n[0])),
                scalar("N", ElemType::i32, double(n[1])),
                scalar("K", ElemType::i32, double(n[2]))};
      terms_per_output = double(n[2]);
      break;
    case Family::matvec_rows:
    case Family::matvec_cols: {
      const bool rows = p.family == Family::matvec_rows;
      s.args = {input(s.name, "A", n[0] * n[1]), input(s.name, "x", rows ? n[1] : n[0]),
                output("y", rows ? n[0] : n[1]), scalar("M", ElemType::i32, double(n[0])),
                scalar("N", ElemType::i32, double(n[1]))};
      terms_per_output = double(rows ? n[1] : n[0]);
      break;
    }
    case Family::gather: {
      ArgSpec cols;  // K column indices per row, uniform over the rows of x
      cols.name = "C";
      cols.type = ElemType::i32;
      cols.count = n[0] * n[1];
      cols.access = Access::read;
      cols.init.fill = Init::Fill::random_index;
      cols.init.seed = seed(s.name + "/C");
      cols.init.bound = n[0];
      s.args = {input(s.name, "A", n[0] * n[1]),
                cols,
                input(s.name, "x", n[0]),
                output("y", n[0]),
                scalar("N", ElemType::i32, double(n[0])),
                scalar("K", ElemType::i32, double(n[1]))};
      terms_per_output = double(n[1]);
      break;
    }
    default:
      s.args = {input(s.name, "In", n[0] * n[1]), output("Out", n[0] * n[1]), scalar("M", ElemType::i32, double(n[0])),
                scalar("N", ElemType::i32, double(n[1]))};
      terms_per_output = 4.0 * p.radius + 1;
      break;
  }
  if (p.gamma > 0) {
    s.args.push_back(scalar("c1", ElemType::f32, kChainMul));
    s.args.push_back(scalar("c2", ElemType::f32, kChainAdd));
  }

  s.reference = "synthetic:" + s.name;
  // Every term is positive, so the error is relative to the result. The kernel may contract a*b + acc and the
  // chain's t*c1 + c2 into fmas: each differs by at most half an ulp of a term per step, a long sum of K terms drifts
  // by about sqrt(K) of those (16 sqrt(K) ulps is a wide margin, as for the real kernels), and the chain's
  // differences shrink by c1 per step (at most 64 ulps in all). A wrong element (another row or column) is off by
  // about 1/sqrt(K), far above: 2e-3 at K = 23,000.
  const double ulp = std::ldexp(1.0, -24);
  s.tolerance = {std::max(1e-5, (16 * std::sqrt(terms_per_output) + 4 * std::min(p.gamma, 64)) * ulp), 1e-6};

  const SpanCost c = span_cost(p, n);
  std::string shape;
  for (size_t e : n) shape += (shape.empty() ? "" : "x") + std::to_string(e);
  std::ostringstream sc;
  sc.precision(15);
  sc << scale;
  s.meta = {{"family", "synthetic"},
            {"set", "span"},
            {"span_family", family_name(p.family)},
            {"pattern", span_pattern(p)},
            {"program", w.program},
            {"gamma", std::to_string(p.gamma)},
            {"radius", std::to_string(p.radius)},
            {"dim", std::to_string(p.dim)},
            {"dtype", "float"},
            {"rung", std::to_string(p.size)},
            {"wg", std::to_string(p.wg)},
            {"reuse", reuse(p.family)},
            {"orientation", orientation(p.family)},
            {"scale", sc.str()},
            {"extents", shape},
            {"bytes", number(c.bytes, 17)},
            {"flops", number(c.flops, 17)},
            {"intensity", number(c.flops / c.bytes, 3)},
            {"est_platform", "h100-xeon16"},
            {"est_cpu_ms", number(c.cpu_ms, 3)},
            {"est_gpu_ms", number(c.gpu_ms, 3)},
            {"est_best_ms", number(c.best_ms, 3)},
            {"est_slowest_ms", number(c.slowest_ms, 3)}};
}

}  // namespace dop::synthetic::detail
