// dop demo: builds and runs a small kernel on every device found (and on a CPU sub-device), validating results.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "commands.hpp"
#include "dop/cl.hpp"

namespace dop::cli {

namespace {

const char* kTriad = R"CL(
__kernel void triad(__global float* a, __global const float* b, __global const float* c, float s, int n) {
  int i = get_global_id(0);
  if (i < n) a[i] = b[i] + s * c[i];
}
)CL";

// Runs the triad on one device; returns the kernel time in ms, throws on any error or wrong result.
double run_triad(cl_device_id device, int n) {
  auto ctx = cl::create_context({device});
  auto q = cl::create_queue(ctx, device);
  auto prog = cl::build_program(ctx, {device}, kTriad, "", "demo/triad.cl");
  auto k = cl::create_kernel(prog, "triad");
  const size_t count = static_cast<size_t>(n);
  std::vector<float> a(count, 0.f), b(count), c(count);
  for (int i = 0; i < n; ++i) {
    b[size_t(i)] = float(i % 1000);
    c[size_t(i)] = float((i * 7) % 13);
  }
  const size_t bytes = sizeof(float) * size_t(n);
  auto A = cl::create_buffer(ctx, CL_MEM_WRITE_ONLY, bytes);
  auto B = cl::create_buffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, b.data());
  auto C = cl::create_buffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, c.data());
  const float s = 3.0f;
  cl_mem am = A.get(), bm = B.get(), cm = C.get();
  cl::set_arg(k, 0, am);
  cl::set_arg(k, 1, bm);
  cl::set_arg(k, 2, cm);
  cl::set_arg(k, 3, s);
  cl::set_arg(k, 4, n);
  const size_t local = 64, global = (size_t(n) + local - 1) / local * local;
  cl::enqueue_ndrange(q, k, {global}, {local});  // warm-up
  auto ev = cl::enqueue_ndrange(q, k, {global}, {local});
  const double ms = cl::event_times(ev).run_ms();
  cl::check(clEnqueueReadBuffer(q.get(), am, CL_TRUE, 0, bytes, a.data(), 0, nullptr, nullptr), "clEnqueueReadBuffer");
  for (int i = 0; i < n; ++i) {
    const float want = b[size_t(i)] + s * c[size_t(i)];
    if (std::fabs(a[size_t(i)] - want) > 1e-5f * std::fabs(want) + 1e-6f)
      throw std::runtime_error("demo: wrong result at index " + std::to_string(i) + ": got " +
                               std::to_string(a[size_t(i)]) + ", want " + std::to_string(want));
  }
  return ms;
}

void run_demo(int n) {
  const auto devices = cl::discover();
  if (devices.empty()) throw std::runtime_error("no OpenCL devices found: run `dop devices` for details");
  std::printf("triad a[i] = b[i] + s*c[i], n = %d floats, validated against the host\n", n);
  for (const auto& d : devices) {
    const double ms = run_triad(d.device, n);
    std::printf("  %-10s %-5s %-36s %3u CUs  %8.3f ms  %7.1f GB/s  ok\n", d.id.c_str(), cl::role_name(d.role),
                d.name.c_str(), d.compute_units, ms, 3.0 * 4.0 * n / (ms * 1e6));
    if (d.role == cl::Role::cpu && d.fission_by_counts && d.compute_units > 1) {
      const cl_uint half = d.compute_units / 2;
      auto sub = cl::create_sub_device(d, half);
      const double sms = run_triad(sub.get(), n);
      std::printf("  %-10s %-5s %-36s %3u CUs  %8.3f ms  %7.1f GB/s  ok\n", (d.id + "/sub").c_str(), "cpu",
                  ("sub-device of " + d.id).c_str(), half, sms, 3.0 * 4.0 * n / (sms * 1e6));
    }
  }
}

}  // namespace

void add_demo(CLI::App& app) {
  auto* cmd = app.add_subcommand("demo", "Build and run a validated triad kernel on every OpenCL device found");
  auto n = std::make_shared<int>(1 << 22);
  cmd->add_option("-n,--elements", *n, "Number of elements")->check(CLI::Range(1, 1 << 28));
  cmd->callback([n] { run_demo(*n); });
}

}  // namespace dop::cli
