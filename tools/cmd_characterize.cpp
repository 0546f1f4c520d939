// dop characterize: per-platform microbenchmarks saved as a platform record (JSON, docs/dataset.md): CPU bandwidth
// per core count, GPU bandwidth, host<->GPU copy bandwidth and latency (pinned and pageable), launch latency,
// peak float and int operation rates, compute units and the DoP grid.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "dop/platform.hpp"
#include "dop/runtime.hpp"

namespace dop::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct CharFlags {
  std::string out = "platform.json";
  std::string name;
  size_t mib = 256;  // triad/copy size per array
  int repeat = 5;
  DeviceFlags devices;
};

const char* kTriad = R"CL(
__kernel void triad(__global float* a, __global const float* b, __global const float* c, float s) {
  size_t i = get_global_id(0);
  a[i] = b[i] + s * c[i];
}
__kernel void nop(__global int* x) { }
// Random access: each work-item reads one element of x at a random place (idx, uniform over x).
__kernel void gather(__global float* out, __global const float* x, __global const uint* idx) {
  size_t i = get_global_id(0);
  out[i] = x[idx[i]];
}
// Peak operation rates: 8 independent chains of dependent multiply-adds per work-item (2 operations each, as the
// code features count them), over many work-items.
#define PEAK(NAME, T)                                                       \
  __kernel void NAME(__global T* out, T a, T b, int iterations) {           \
    T x0 = (T)get_global_id(0), x1 = x0 + 1, x2 = x0 + 2, x3 = x0 + 3;     \
    T x4 = x0 + 4, x5 = x0 + 5, x6 = x0 + 6, x7 = x0 + 7;                  \
    for (int i = 0; i < iterations; ++i) {                                  \
      x0 = x0 * a + b; x1 = x1 * a + b; x2 = x2 * a + b; x3 = x3 * a + b;   \
      x4 = x4 * a + b; x5 = x5 * a + b; x6 = x6 * a + b; x7 = x7 * a + b;   \
    }                                                                       \
    out[get_global_id(0)] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;          \
  }
PEAK(peak_float, float)
PEAK(peak_int, uint)  // unsigned: wraps without undefined behaviour
)CL";

struct Bench {
  cl::Context ctx;
  cl::Queue q;
  cl::Program prog;
  explicit Bench(cl_device_id d) {
    ctx = cl::create_context({d});
    q = cl::create_queue(ctx, d, true);
    prog = cl::build_program(ctx, {d}, kTriad, "", "characterize/triad.cl");
  }
};

// The best kernel time (ms) of `repeat` runs over `items` work-items, after one that pays for compilation and first
// touch.
double best_run_ms(Bench& b, cl::Kernel& k, size_t items, int repeat) {
  double best = 1e300;
  for (int r = 0; r < repeat + 1; ++r) {
    auto ev = cl::enqueue_ndrange(b.q, k, {items}, {64});
    const double ms = cl::event_times(ev).run_ms();
    if (r > 0) best = std::min(best, ms);
  }
  return best;
}

// Device buffers of `bytes` each, filled with 1.0f.
std::vector<cl::Buffer> filled_buffers(Bench& b, size_t count, size_t bytes) {
  std::vector<cl::Buffer> out;
  const float one = 1.0f;
  for (size_t i = 0; i < count; ++i) {
    out.push_back(cl::create_buffer(b.ctx, CL_MEM_READ_WRITE, bytes));
    cl::check(clEnqueueFillBuffer(b.q.get(), out.back().get(), &one, sizeof one, 0, bytes, 0, nullptr, nullptr),
              "clEnqueueFillBuffer");
  }
  return out;
}

// Best triad bandwidth (GB/s, 3 arrays moved) over `repeat` runs on device-resident buffers.
double triad_gbs(cl_device_id dev, size_t n, int repeat) {
  Bench b(dev);
  auto k = cl::create_kernel(b.prog, "triad");
  const size_t bytes = n * sizeof(float);
  const auto bufs = filled_buffers(b, 3, bytes);
  cl_mem a = bufs[0].get(), bb = bufs[1].get(), c = bufs[2].get();
  const float s = 2.0f;
  cl::set_arg(k, 0, a);
  cl::set_arg(k, 1, bb);
  cl::set_arg(k, 2, c);
  cl::set_arg(k, 3, s);
  return 3.0 * double(bytes) / (best_run_ms(b, k, n, repeat) * 1e6);
}

// Best gather bandwidth (GB/s) over `repeat` runs on device-resident buffers: n work-items, each reading its index
// and one float of an n-element x at a random place and writing one float (12 bytes of compulsory traffic; a cache
// line or a sector moves for the 4 bytes of x, which is the cost the estimate needs).
double gather_gbs(cl_device_id dev, size_t n, int repeat) {
  Bench b(dev);
  auto k = cl::create_kernel(b.prog, "gather");
  const size_t bytes = n * sizeof(float);
  std::vector<cl_uint> idx(n);
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  for (auto& v : idx) {  // splitmix64: uniform indices, the same on every run
    state += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    v = cl_uint((z ^ (z >> 31)) % n);
  }
  const auto bufs = filled_buffers(b, 2, bytes);
  cl::Buffer I = cl::create_buffer(b.ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, idx.data());
  cl_mem o = bufs[0].get(), x = bufs[1].get(), i = I.get();
  cl::set_arg(k, 0, o);
  cl::set_arg(k, 1, x);
  cl::set_arg(k, 2, i);
  return 3.0 * double(bytes) / (best_run_ms(b, k, n, repeat) * 1e6);
}

// The peak kernels' shape (PEAK above: x0..x7 are the chains): kChains independent chains of kIterations dependent
// multiply-adds (kOpsPerStep operations each) per work-item, over kPeakItemsPerCore work-items per CPU core or
// kPeakItemsPerUnit per GPU compute unit (enough to fill every lane).
constexpr int kIterations = 4096, kChains = 8, kOpsPerStep = 2;
constexpr size_t kPeakItemsPerCore = 1024, kPeakItemsPerUnit = 2048;

// Best operation rate (Gop/s) of the peak kernel (peak_float or peak_int) over `items` work-items.
double peak_gops(cl_device_id dev, const char* kernel, size_t items, int repeat) {
  Bench b(dev);
  auto k = cl::create_kernel(b.prog, kernel);
  cl::Buffer out = cl::create_buffer(b.ctx, CL_MEM_WRITE_ONLY, items * 4);
  cl_mem o = out.get();
  cl::set_arg(k, 0, o);
  if (std::string(kernel) == "peak_float") {  // a contraction towards b / (1 - a): stays finite
    cl::set_arg(k, 1, 0.999f);
    cl::set_arg(k, 2, 0.001f);
  } else {
    cl::set_arg(k, 1, cl_uint(3));
    cl::set_arg(k, 2, cl_uint(7));
  }
  cl::set_arg(k, 3, cl_int(kIterations));
  return double(items) * kIterations * kChains * kOpsPerStep / (best_run_ms(b, k, items, repeat) * 1e6);
}

struct CopyStats {
  double h2d_gbs = 0, d2h_gbs = 0, h2d_latency_us = 0, d2h_latency_us = 0;
};

// Host<->device copies: bandwidth of `bytes` and latency of a 4-byte copy (blocking, wall clock, best of repeat).
CopyStats copies(cl_device_id dev, size_t bytes, int repeat, bool pinned) {
  Bench b(dev);
  cl::Buffer dbuf = cl::create_buffer(b.ctx, CL_MEM_READ_WRITE, bytes);
  cl::Buffer pin;
  void* host = nullptr;
  std::vector<char> pageable;
  if (pinned) {
    pin = cl::create_buffer(b.ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes);
    cl_int err = CL_SUCCESS;
    host = clEnqueueMapBuffer(b.q.get(), pin.get(), CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, nullptr, nullptr,
                              &err);
    cl::check(err, "clEnqueueMapBuffer", "pinned staging");
  } else {
    pageable.assign(bytes, 1);
    host = pageable.data();
  }
  std::memset(host, 1, bytes);
  auto wall = [&](bool write, size_t n) {
    double best = 1e300;
    for (int r = 0; r < repeat + 1; ++r) {
      const auto t0 = Clock::now();
      if (write)
        cl::check(clEnqueueWriteBuffer(b.q.get(), dbuf.get(), CL_TRUE, 0, n, host, 0, nullptr, nullptr),
                  "clEnqueueWriteBuffer");
      else
        cl::check(clEnqueueReadBuffer(b.q.get(), dbuf.get(), CL_TRUE, 0, n, host, 0, nullptr, nullptr),
                  "clEnqueueReadBuffer");
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (r > 0) best = std::min(best, ms);
    }
    return best;
  };
  CopyStats s;
  s.h2d_gbs = double(bytes) / (wall(true, bytes) * 1e6);
  s.d2h_gbs = double(bytes) / (wall(false, bytes) * 1e6);
  s.h2d_latency_us = wall(true, 4) * 1e3;
  s.d2h_latency_us = wall(false, 4) * 1e3;
  if (pinned)
    cl::check(clEnqueueUnmapMemObject(b.q.get(), pin.get(), host, 0, nullptr, nullptr), "clEnqueueUnmapMemObject");
  cl::finish(b.q);
  return s;
}

// Enqueue-to-completion latency of an empty kernel (wall clock, median of many).
double launch_latency_us(cl_device_id dev) {
  Bench b(dev);
  auto k = cl::create_kernel(b.prog, "nop");
  cl::Buffer x = cl::create_buffer(b.ctx, CL_MEM_READ_WRITE, 64);
  cl_mem m = x.get();
  cl::set_arg(k, 0, m);
  std::vector<double> us;
  for (int r = 0; r < 201; ++r) {
    const auto t0 = Clock::now();
    cl::enqueue_ndrange(b.q, k, {64}, {64});
    cl::finish(b.q);
    if (r > 0) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

nlohmann::json device_record(const cl::DeviceInfo& d) {
  return {{"id", d.id},
          {"name", d.name},
          {"identity", d.identity()},
          {"compute_units", d.compute_units},
          {"global_mem_bytes", d.global_mem_bytes},
          {"host_unified_memory", d.host_unified_memory},
          {"opencl_version", d.version}};
}

void run_characterize(const CharFlags& f) {
  const auto sel = cl::select_devices(cl::discover(), f.devices.cpu, f.devices.gpu);
  if (!sel.cpu) throw std::invalid_argument("dop characterize needs a CPU device");
  const size_t bytes = f.mib << 20, n = bytes / sizeof(float);
  const Grid grid;
  nlohmann::json rec;
  rec["format"] = "dop-platform/1";
  rec["platform_id"] = f.name.empty() ? devices_platform_id(sel) : f.name;
  rec["grid"] = {{"cpu_levels", grid.cpu_levels}, {"gpu_levels", grid.gpu_levels}};
  rec["cpu"] = device_record(*sel.cpu);
  std::printf("platform %s\n", rec["platform_id"].get<std::string>().c_str());

  // CPU bandwidth per core count: every count the grid uses, plus powers of two.
  std::vector<cl_uint> counts;
  const cl_uint total = sel.cpu->compute_units;
  for (double l : grid.cpu_levels)
    if (l > 0) counts.push_back(cl_uint(cpu_cores_at(l, int(total))));  // as a launch rounds it
  for (cl_uint c = 1; c < total; c *= 2) counts.push_back(c);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  nlohmann::json bw = nlohmann::json::array();
  for (cl_uint c : counts) {
    cl::DeviceHandle sub;
    cl_device_id dev = sel.cpu->device;
    if (c < total) {
      sub = cl::create_sub_device(*sel.cpu, c);
      dev = sub.get();
    }
    const double g = triad_gbs(dev, n, f.repeat);
    std::printf("  cpu %3u cores: triad %7.1f GB/s\n", c, g);
    std::fflush(stdout);
    bw.push_back({{"cores", c}, {"triad_gbs", g}});
  }
  rec["cpu"]["triad_gbs_by_cores"] = bw;
  rec["cpu"]["gather_gbs"] = gather_gbs(sel.cpu->device, n, f.repeat);
  std::printf("  cpu gather %.1f GB/s (all cores)\n", rec["cpu"]["gather_gbs"].get<double>());
  rec["cpu"]["launch_latency_us"] = launch_latency_us(sel.cpu->device);
  std::printf("  cpu launch latency %.1f us\n", rec["cpu"]["launch_latency_us"].get<double>());
  // Peak rates at all cores, per core (the estimate scales them by the configuration's cores).
  for (const char* type : {"float", "int"}) {
    const double g = peak_gops(sel.cpu->device, type[0] == 'f' ? "peak_float" : "peak_int",
                               size_t(total) * kPeakItemsPerCore, f.repeat);
    rec["cpu"][std::string("peak_gops_") + type + "_per_core"] = g / total;
    std::printf("  cpu peak %-5s %8.1f Gop/s (%.1f per core)\n", type, g, g / total);
  }

  if (sel.gpu) {
    rec["gpu"] = device_record(*sel.gpu);
    rec["gpu"]["triad_gbs"] = triad_gbs(sel.gpu->device, n, f.repeat);
    rec["gpu"]["gather_gbs"] = gather_gbs(sel.gpu->device, n, f.repeat);
    std::printf("  gpu gather %.1f GB/s\n", rec["gpu"]["gather_gbs"].get<double>());
    rec["gpu"]["launch_latency_us"] = launch_latency_us(sel.gpu->device);
    std::printf("  gpu triad %.1f GB/s, launch latency %.1f us\n", rec["gpu"]["triad_gbs"].get<double>(),
                rec["gpu"]["launch_latency_us"].get<double>());
    for (const char* type : {"float", "int"}) {
      const double g = peak_gops(sel.gpu->device, type[0] == 'f' ? "peak_float" : "peak_int",
                                 size_t(sel.gpu->compute_units) * kPeakItemsPerUnit, f.repeat);
      rec["gpu"][std::string("peak_gops_") + type] = g;
      std::printf("  gpu peak %-5s %8.1f Gop/s\n", type, g);
    }
    for (bool pinned : {true, false}) {
      const auto c = copies(sel.gpu->device, bytes, f.repeat, pinned);
      rec["gpu"][pinned ? "copy_pinned" : "copy_pageable"] = {{"h2d_gbs", c.h2d_gbs},
                                                              {"d2h_gbs", c.d2h_gbs},
                                                              {"h2d_latency_us", c.h2d_latency_us},
                                                              {"d2h_latency_us", c.d2h_latency_us}};
      std::printf("  copies %-8s h2d %6.1f GB/s, d2h %6.1f GB/s, latency h2d %.1f us, d2h %.1f us\n",
                  pinned ? "pinned" : "pageable", c.h2d_gbs, c.d2h_gbs, c.h2d_latency_us, c.d2h_latency_us);
    }
  }
  rec["measured"] = {
      {"array_mib", f.mib},
      {"repeat", f.repeat},
      {"statistic", "best of repeat after one warm-up"},
      {"peak",
       std::to_string(kChains) + " chains x " + std::to_string(kIterations) + " dependent multiply-adds (" +
           std::to_string(kOpsPerStep) + " operations each) per work-item; CPU: " + std::to_string(kPeakItemsPerCore) +
           " work-items per core at all cores, GPU: " + std::to_string(kPeakItemsPerUnit) + " per compute unit"}};
  std::ofstream o(f.out);
  if (!o) throw std::runtime_error("cannot write " + f.out);
  o << rec.dump(2) << "\n";
  std::printf("platform record written to %s\n", f.out.c_str());
}

}  // namespace

void add_characterize(CLI::App& app) {
  auto* cmd = app.add_subcommand("characterize",
                                 "Measure the platform (bandwidths, copies, latencies, peak rates) into a record");
  auto f = std::make_shared<CharFlags>();
  cmd->add_option("--out", f->out, "Platform record to write (default platform.json)");
  cmd->add_option("--name", f->name, "Platform id (default: the device names)");
  cmd->add_option("--mib", f->mib, "Size of each array in MiB (default 256)")->check(CLI::Range(1, 65536));
  cmd->add_option("--repeat", f->repeat, "Timed repetitions, best kept (default 5)")->check(CLI::Range(1, 1000));
  add_device_flags(cmd, f->devices);
  cmd->callback([f] { run_characterize(*f); });
}

}  // namespace dop::cli
