// Test helpers shared by the co-execution tests (PoCL with two devices): the device pair, and saxpy (an early
// return, an odd size, a float and an int scalar) with its reference.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "dop/runtime.hpp"

namespace dop::test {

inline cl::Selection two_devices() {
  auto sel = cl::select_devices(cl::discover(), "pocl:0", "pocl:1");
  REQUIRE(sel.cpu);
  REQUIRE(sel.gpu);
  return sel;
}

// A spec of one kernel (the spec takes its name) over `global` in work-groups of `local`.
inline Spec kernel_spec(const std::string& kernel, std::vector<size_t> global, std::vector<size_t> local,
                        std::vector<ArgSpec> args) {
  Spec s;
  s.name = kernel;
  s.kernel_name = kernel;
  s.global = std::move(global);
  s.local = std::move(local);
  s.args = std::move(args);
  return s;
}
// A buffer argument of `n` elements, filled as `fill` says (random with `seed`, in [0, 1) or [0, 1] by default).
inline ArgSpec buffer_arg(const std::string& name, ElemType type, size_t n, Access access, bool output,
                          Init::Fill fill = Init::Fill::zero, uint64_t seed = 0) {
  ArgSpec a{name, ArgKind::buffer, type, n, 0, access, output, {}};
  a.init.fill = fill;
  a.init.seed = seed;
  return a;
}
inline ArgSpec scalar_arg(const std::string& name, ElemType type, double value) {
  return {name, ArgKind::scalar, type, 0, value, Access::read, false, {}};
}

inline const char* kSaxpy = R"CL(
__kernel void saxpy(__global float* y, __global const float* x, float a, int n) {
  int i = get_global_id(0);
  if (i >= n) return;  /* early return */
  y[i] = a * x[i] + y[i];
}
)CL";

inline Spec saxpy_spec(size_t n, size_t local) {
  return kernel_spec("saxpy", {(n + local - 1) / local * local}, {local},
                     {buffer_arg("y", ElemType::f32, n, Access::read_write, true, Init::Fill::random, 5),
                      buffer_arg("x", ElemType::f32, n, Access::read, false, Init::Fill::random, 6),
                      scalar_arg("a", ElemType::f32, 1.5), scalar_arg("n", ElemType::i32, double(n))});
}

inline void saxpy_reference(const Spec&, std::vector<ArgData>& a) {
  const int n = *a[3].as<int>();
  for (int i = 0; i < n; ++i) a[0].as<float>()[i] = 1.5f * a[1].as<float>()[i] + a[0].as<float>()[i];
}

}  // namespace dop::test
