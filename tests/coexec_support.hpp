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

inline const char* kSaxpy = R"CL(
__kernel void saxpy(__global float* y, __global const float* x, float a, int n) {
  int i = get_global_id(0);
  if (i >= n) return;  /* early return */
  y[i] = a * x[i] + y[i];
}
)CL";

inline Spec saxpy_spec(size_t n, size_t local) {
  Spec s;
  s.name = "saxpy";
  s.kernel_name = "saxpy";
  s.global = {(n + local - 1) / local * local};
  s.local = {local};
  ArgSpec y{"y", ArgKind::buffer, ElemType::f32, n, 0, Access::read_write, true, {}};
  y.init.fill = Init::Fill::random;
  y.init.seed = 5;
  ArgSpec x{"x", ArgKind::buffer, ElemType::f32, n, 0, Access::read, false, {}};
  x.init.fill = Init::Fill::random;
  x.init.seed = 6;
  s.args = {y, x, {"a", ArgKind::scalar, ElemType::f32, 0, 1.5, Access::read, false, {}},
            {"n", ArgKind::scalar, ElemType::i32, 0, double(n), Access::read, false, {}}};
  return s;
}

inline void saxpy_reference(const Spec&, std::vector<ArgData>& a) {
  const int n = *a[3].as<int>();
  for (int i = 0; i < n; ++i) a[0].as<float>()[i] = 1.5f * a[1].as<float>()[i] + a[0].as<float>()[i];
}

}  // namespace dop::test
