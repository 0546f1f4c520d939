// Workload specs: buffers with deterministic initialisation, scalars, launch shape, outputs, reference, meta.
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "dop/synthetic.hpp"
#include "internal.hpp"

namespace dop::synthetic {

namespace {

using detail::scalar;
using detail::seed;

ElemType elem_type(DType t) {
  switch (t) {
    case DType::f32:
      return ElemType::f32;
    case DType::i32:
      return ElemType::i32;
    case DType::f64:
      return ElemType::f64;
  }
  return ElemType::f32;
}

std::string format_scale(double scale) {
  std::ostringstream s;
  s.precision(15);
  s << scale;
  return s.str();
}

}  // namespace

Workload generate(const Params& p, double scale) {
  const std::vector<size_t> n = extents(p, scale);  // validates p and scale
  Workload w;
  w.program = program_name(p);
  w.source = kernel_source(p);
  Spec& s = w.spec;
  s.name = name(p);
  s.kernel_file = w.program + ".cl";
  s.kernel_name = w.program;
  launch_shape(p, n, s.global, s.local);
  if (p.span()) {
    detail::span_spec(p, n, scale, w);
    return w;
  }

  size_t count = 1;
  for (size_t e : n) count *= e;
  const ElemType T = elem_type(p.dtype);
  const double fcount = double(count);

  for (int k = 0; k < p.alpha; ++k) {
    ArgSpec a;
    a.name = detail::matrix_name(k);
    a.type = T;
    a.count = count;
    a.access = Access::read;
    a.init.fill = Init::Fill::random;
    a.init.seed = seed(s.name + "/" + a.name);
    a.init.min = detail::data_min(p.dtype);
    a.init.max = detail::data_max(p.dtype);
    s.args.push_back(a);
  }
  {
    ArgSpec out;
    out.name = "Out";
    out.type = T;
    out.count = count;
    out.access = Access::write;
    out.output = true;  // init: zero
    s.args.push_back(out);
  }
  if (p.epsilon) {
    ArgSpec idx;
    idx.name = "Idx";
    idx.type = ElemType::i32;
    idx.count = count;
    idx.access = Access::read;
    idx.init.fill = Init::Fill::permutation;
    idx.init.seed = seed(s.name + "/Idx");
    s.args.push_back(idx);
  }
  for (int k = 0; k < p.beta; ++k)
    s.args.push_back(scalar("N" + std::to_string(k), ElemType::i32, double(n[size_t(k)])));
  if (p.theta) s.args.push_back(scalar("K", ElemType::i32, std::floor(fcount / 3)));
  for (int j = 1; j <= p.gamma; ++j)
    s.args.push_back(scalar("c" + std::to_string(j), T, detail::gamma_constant(p.dtype, j)));
  if (p.divergent) {
    s.args.push_back(scalar("b1", T, detail::div_constant(p.dtype, 1)));
    s.args.push_back(scalar("b2", T, detail::div_constant(p.dtype, 2)));
  }
  if (p.local_mem) {
    ArgSpec tile;
    tile.name = "tile";
    tile.kind = ArgKind::local;
    tile.type = T;
    tile.count = size_t(p.wg) * size_t(detail::tile_width(p));
    s.args.push_back(tile);
  }

  s.reference = "synthetic:" + s.name;
  // Floats: every term passes through γ roundings and the kernel may contract a*b+c into one fma; the error grows
  // with the number of terms and operations. Integers compare exactly.
  const double ops = double(p.terms()) * double(p.gamma + 2);
  if (p.dtype == DType::f64)
    s.tolerance = {1e-12, 1e-14 * ops};
  else
    s.tolerance = {1e-5, 2e-6 * ops};

  std::string shape;
  for (size_t e : n) shape += (shape.empty() ? "" : "x") + std::to_string(e);
  s.meta = {{"family", "synthetic"},
            {"set", p.extended() ? "extended" : "paper"},
            {"pattern", pattern(p)},
            {"program", w.program},
            {"alpha", std::to_string(p.alpha)},
            {"beta", std::to_string(p.beta)},
            {"gamma", std::to_string(p.gamma)},
            {"delta", std::to_string(p.delta)},
            {"epsilon", std::to_string(p.epsilon)},
            {"theta", std::to_string(p.theta)},
            {"dim", std::to_string(p.dim)},
            {"dtype", dtype_name(p.dtype)},
            {"rung", std::to_string(p.size)},
            {"wg", std::to_string(p.wg)},
            {"coarsen", std::to_string(p.coarsen)},
            {"divergent", p.divergent ? "1" : "0"},
            {"local_mem", p.local_mem ? "1" : "0"},
            {"scale", format_scale(scale)},
            {"extents", shape}};
  return w;
}

}  // namespace dop::synthetic
