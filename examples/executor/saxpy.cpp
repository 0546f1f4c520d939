// Runs an application's own kernel (y = a*x + y) across the CPU and the GPU through dop::Executor at a chosen
// configuration, checks the result on the host and prints how the work was shared.
//
//   saxpy [CPU,GPU] [N] [MEMORY]  e.g. saxpy 0.5,0.75 1000000 pinned
//
// MEMORY is a dop memory mode (default auto); `pinned` allocates the arguments in page-locked memory of the GPU's
// context, which its DMA reads in place: on a discrete GPU, what makes co-executing host data pay.
//
// Without a GPU, PoCL can stand in a second CPU device for it: POCL_DEVICES="pthread pthread" saxpy
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "dop/runtime.hpp"

namespace {

const char* kSaxpy = R"CL(
__kernel void saxpy(__global const float* x, __global float* y, float a, int n) {
  int i = get_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
)CL";

// The launch described as dop describes every launch: the kernel, its NDRange and its arguments.
dop::Spec saxpy_spec(size_t n) {
  dop::Spec spec;
  spec.name = "saxpy";
  spec.kernel_file = "saxpy.cl";  // a name for messages: the source is given to the executor
  spec.kernel_name = "saxpy";
  spec.global = {(n + 255) / 256 * 256};
  spec.local = {256};
  dop::ArgSpec x{"x", dop::ArgKind::buffer, dop::ElemType::f32, n};
  x.access = dop::Access::read;
  x.init.fill = dop::Init::Fill::index;  // x[i] = i
  dop::ArgSpec y{"y", dop::ArgKind::buffer, dop::ElemType::f32, n};
  y.access = dop::Access::read_write;
  y.output = true;
  y.init.fill = dop::Init::Fill::constant;  // y[i] = 1
  y.init.value = 1;
  dop::ArgSpec a{"a", dop::ArgKind::scalar, dop::ElemType::f32};
  a.value = 2;
  dop::ArgSpec count{"n", dop::ArgKind::scalar, dop::ElemType::i32};
  count.value = double(n);
  spec.args = {x, y, a, count};
  return spec;
}

}  // namespace

int main(int argc, char** argv) try {
  const dop::Config config = dop::parse_config(argc > 1 ? argv[1] : "0.5,0.5");
  const size_t n = argc > 2 ? std::stoul(argv[2]) : size_t(1) << 20;
  if (n == 0 || n > (size_t(1) << 30)) throw std::invalid_argument("N must be in [1, 2^30]");

  const auto devices = dop::cl::select_devices(dop::cl::discover());
  if (!devices.cpu && !devices.gpu) throw std::runtime_error("no OpenCL device: run `dop devices`");
  const dop::Spec spec = saxpy_spec(n);
  dop::ExecutorOptions options;
  options.memory = dop::parse_memory_mode(argc > 3 ? argv[3] : "auto");
  dop::Executor executor(spec, kSaxpy, devices, options);
  auto args = executor.make_args();  // where this memory mode wants them (page-locked memory for pinned)
  const auto r = executor.launch(args, config);

  const float* x = args[0].as<float>();
  const float* y = args[1].as<float>();
  for (size_t i = 0; i < n; ++i) {
    const float want = 2.0f * x[i] + 1.0f;
    if (std::fabs(y[i] - want) > 1e-6f * std::fabs(want))
      throw std::runtime_error("wrong result at " + std::to_string(i) + ": " + std::to_string(y[i]) + ", want " +
                               std::to_string(want));
  }
  std::printf("saxpy n=%zu at %s, memory %s: %.3f ms, results checked\n", n, dop::to_string(r.config).c_str(),
              dop::memory_mode_name(r.memory), r.total_ms);
  if (r.h2d_bytes > 0)
    std::printf("  to the GPU: %zu bytes, %zu of them from page-locked memory in place\n", r.h2d_bytes,
                r.h2d_in_place_bytes);
  std::printf("  cpu %-8s %2d cores  %zu work-items\n", r.cpu.device.c_str(), r.cpu_cores, r.cpu.work_items);
  std::printf("  gpu %-8s %2d/%d      %zu work-items%s%s\n", r.gpu.device.c_str(), r.gpu_alloc, r.gpu_mod,
              r.gpu.work_items, r.note.empty() ? "" : "  note: ", r.note.c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "saxpy: %s\n", e.what());
  return 1;
}
