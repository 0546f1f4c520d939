// Shared virtual memory (MemoryMode::svm) on PoCL with two devices of one platform: one context for the CPU's
// sub-devices and the GPU, buffers in its fine-grain SVM, used by both devices and the host at once.
#include <catch2/catch.hpp>

#include <memory>
#include <thread>

#include "coexec_support.hpp"
#include "dop/runtime.hpp"

using namespace dop;
using dop::test::buffer_arg;
using dop::test::kernel_spec;
using dop::test::kSaxpy;
using dop::test::saxpy_reference;
using dop::test::saxpy_spec;
using dop::test::two_devices;

namespace {

// A histogram: every work-item adds to one of 16 bins with a global atomic, so both devices update the same bytes
// at once. Exact only if the SVM allocation is coherent between the devices, atomics included.
const char* kHistogram = R"CL(
__kernel void histogram(__global const uint* in, __global uint* bins) {
  atomic_inc(&bins[in[get_global_id(0)] & 15u]);
}
)CL";

Spec histogram_spec(size_t n) {
  ArgSpec in = buffer_arg("in", ElemType::u32, n, Access::read, false, Init::Fill::random, 11);
  in.init.max = 1000;
  return kernel_spec("histogram", {n}, {64}, {in, buffer_arg("bins", ElemType::u32, 16, Access::read_write, true)});
}

// A 2D kernel with local memory and a barrier: each work-group reverses its rows' tiles.
const char* kReverse = R"CL(
__kernel void reverse_tiles(__global const int* in, __global int* out, __local int* tile) {
  size_t lx = get_local_id(0), ly = get_local_id(1), lw = get_local_size(0);
  size_t x = get_global_id(0), y = get_global_id(1), w = get_global_size(0);
  tile[ly * lw + lx] = in[y * w + x];
  barrier(CLK_LOCAL_MEM_FENCE);
  out[y * w + x] = 3 * tile[ly * lw + (lw - 1 - lx)];
}
)CL";

Spec reverse_spec(size_t w, size_t h) {
  return kernel_spec("reverse_tiles", {w, h}, {16, 4},
                     {buffer_arg("in", ElemType::i32, w * h, Access::read, false, Init::Fill::index),
                      buffer_arg("out", ElemType::i32, w * h, Access::write, true),
                      {"tile", ArgKind::local, ElemType::i32, 64, 0, Access::read_write, false, {}}});
}

// Both buffers are in the same (non-host) memory.
bool same_memory(const ArgData& a, const ArgData& b) {
  return a.storage.get_allocator().memory && a.storage.get_allocator().memory == b.storage.get_allocator().memory;
}

}  // namespace

TEST_CASE("svm: where it is available, and why not where it is not") {
  const auto sel = two_devices();
  // PoCL's devices: one platform, fine-grain buffer SVM with atomics.
  CHECK(sel.cpu->svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER);
  CHECK(svm_unavailable(sel).empty());
  CHECK(svm_unavailable({sel.cpu, std::nullopt}).empty());

  cl::Selection other = sel;  // a GPU of another platform (the H100 host's NVIDIA next to PoCL)
  other.gpu->platform = reinterpret_cast<cl_platform_id>(0x1);
  other.gpu->id = "nvidia:0";
  other.gpu->platform_name = "NVIDIA CUDA";
  const std::string why = svm_unavailable(other);
  CHECK_THAT(why, Catch::Contains("pocl:0") && Catch::Contains("nvidia:0") && Catch::Contains("different platforms"));
  ExecutorOptions o;
  o.memory = MemoryMode::svm;
  CHECK_THROWS_WITH(Executor(saxpy_spec(100, 64), kSaxpy, other, o),
                    Catch::Contains("memory mode svm for 'saxpy'") && Catch::Contains("different platforms"));

  cl::Selection coarse = sel;  // a device with coarse-grain SVM only
  coarse.gpu->svm = CL_DEVICE_SVM_COARSE_GRAIN_BUFFER;
  CHECK_THAT(svm_unavailable(coarse), Catch::Contains("device pocl:1") && Catch::Contains("'coarse'"));
  CHECK(svm_unavailable({}) == "no device is selected");

  CHECK(parse_memory_mode("svm") == MemoryMode::svm);
  CHECK(std::string(memory_mode_name(MemoryMode::svm)) == "svm");
  CHECK(cl::svm_name(CL_DEVICE_SVM_COARSE_GRAIN_BUFFER | CL_DEVICE_SVM_FINE_GRAIN_BUFFER | CL_DEVICE_SVM_ATOMICS) ==
        "coarse+fine+atomics");
  CHECK(cl::svm_name(0) == "none");
}

TEST_CASE("svm: all 44 configurations reproduce the reference, with no buffers copied") {
  const Spec s = saxpy_spec(100003, 64);
  auto want = make_args(s);
  saxpy_reference(s, want);
  ExecutorOptions o;
  o.memory = MemoryMode::svm;
  Executor ex(s, kSaxpy, two_devices(), o);
  const auto initial = make_args(s);
  auto args = ex.place(initial);
  for (size_t i = 0; i < 2; ++i) REQUIRE(args[i].storage.get_allocator().memory);  // the buffers are in SVM
  CHECK_FALSE(args[2].storage.get_allocator().memory);                             // scalars are not
  for (const auto& cfg : Grid{}.configs()) {
    for (int rep = 0; rep < 2; ++rep) {  // cold, then warm
      reset_writable(args, initial);
      const auto r = ex.launch(args, cfg);
      const auto cmp = compare_outputs(s, args, want);
      INFO("config " << to_string(cfg) << " launch " << rep << ": " << cmp.first);
      REQUIRE(cmp.ok);
      CHECK(r.memory == MemoryMode::svm);
      CHECK(r.h2d_bytes == 0);
      CHECK(r.d2h_bytes == 0);
      CHECK(r.cpu.work_items + r.gpu.work_items == 100032);
      if (cfg.cpu > 0 && cfg.gpu == 0) CHECK(r.gpu.work_items == 0);
      if (cfg.cpu == 0) CHECK(r.cpu.work_items == 0);
    }
  }
  // Static splits too: both devices write disjoint halves of one allocation.
  for (double share : {0.05, 0.5, 0.95}) {
    reset_writable(args, initial);
    const auto r = ex.launch_static(args, Config{1, 1}, share);
    REQUIRE(compare_outputs(s, args, want).ok);
    CHECK(r.cpu.work_items > 0);
    CHECK(r.gpu.work_items > 0);
  }
}

TEST_CASE("svm: both devices update the same bytes with atomics, and local memory with barriers works") {
  const auto sel = two_devices();
  ExecutorOptions o;
  o.memory = MemoryMode::svm;
  {
    const Spec s = histogram_spec(64 * 2000);
    auto want = make_args(s);
    for (size_t i = 0; i < s.global[0]; ++i) want[1].as<uint32_t>()[want[0].as<uint32_t>()[i] & 15u]++;
    Executor ex(s, kHistogram, sel, o);
    auto args = ex.make_args();
    const auto initial = args;  // a copy of SVM arguments is in SVM too
    CHECK(same_memory(initial[0], args[0]));
    for (const auto& cfg : Grid{}.configs()) {
      reset_writable(args, initial);
      ex.launch(args, cfg);
      const auto cmp = compare_outputs(s, args, want);
      INFO("histogram at " << to_string(cfg) << ": " << cmp.first);
      REQUIRE(cmp.ok);
    }
    // Static splits make sure both devices run, on the same bins at the same time.
    for (double share : {0.3, 0.5, 0.7}) {
      reset_writable(args, initial);
      const auto r = ex.launch_static(args, Config{1, 1}, share);
      INFO("histogram, CPU share " << share);
      REQUIRE(compare_outputs(s, args, want).ok);
      CHECK(r.cpu.work_items > 0);
      CHECK(r.gpu.work_items > 0);
    }
  }
  {
    const Spec s = reverse_spec(256, 64);
    auto want = make_args(s);
    for (size_t y = 0; y < 64; ++y)
      for (size_t x = 0; x < 256; ++x) want[1].as<int>()[y * 256 + x] = 3 * int(y * 256 + (x / 16) * 16 + 15 - x % 16);
    Executor ex(s, kReverse, sel, o);
    for (const auto& cfg : Grid{}.configs()) {
      auto args = ex.make_args();
      ex.launch(args, cfg);
      const auto cmp = compare_outputs(s, args, want);
      INFO("reverse_tiles at " << to_string(cfg) << ": " << cmp.first);
      REQUIRE(cmp.ok);
    }
  }
}

TEST_CASE("svm: arguments not in the executor's SVM are refused with their name") {
  const Spec s = saxpy_spec(1000, 64);
  const auto sel = two_devices();
  ExecutorOptions o;
  o.memory = MemoryMode::svm;
  Executor ex(s, kSaxpy, sel, o);
  auto host = make_args(s);
  CHECK_THROWS_WITH(ex.launch(host, Config{1, 1}),
                    Catch::Contains("argument 'y'") && Catch::Contains("Executor::make_args"));
  Executor other(s, kSaxpy, sel, o);  // another executor's SVM belongs to another context
  auto theirs = other.make_args();
  CHECK_THROWS_WITH(ex.launch(theirs, Config{1, 1}), Catch::Contains("argument 'y'"));
  // Assigning host arguments to SVM ones copies the bytes and keeps the SVM: they still launch.
  auto mine = ex.make_args();
  mine = host;
  CHECK(same_memory(mine[0], ex.make_args()[0]));
  auto want = make_args(s);
  saxpy_reference(s, want);
  ex.launch(mine, Config{0.5, 0.5});
  CHECK(compare_outputs(s, mine, want).ok);
  // Outside svm mode, make_args and place give host memory.
  Executor plain(s, kSaxpy, sel);
  CHECK_FALSE(plain.make_args()[0].storage.get_allocator().memory);
  CHECK_FALSE(plain.place(mine)[0].storage.get_allocator().memory);
}

TEST_CASE("svm: core counts are those of the grid, and arguments outlive their executor") {
  const Spec s = saxpy_spec(5000, 64);
  const auto sel = two_devices();
  ExecutorOptions o;
  o.memory = MemoryMode::svm;
  o.cpu_levels = {1};  // only the whole CPU in the shared context
  auto want = make_args(s);
  saxpy_reference(s, want);
  std::vector<ArgData> args;
  {
    Executor ex(s, kSaxpy, sel, o);
    args = ex.make_args();
    if (sel.cpu->compute_units > 1)
      CHECK_THROWS_WITH(ex.launch(args, Config{1.0 / sel.cpu->compute_units, 1}),
                        Catch::Contains("core counts of ExecutorOptions::cpu_levels (" +
                                        std::to_string(sel.cpu->compute_units) + ")") &&
                            Catch::Contains("1 cores is not among them"));
    ex.launch(args, Config{1, 1});
  }
  // The executor is gone; its context lives on with the allocations, which the host still reads and frees.
  CHECK(compare_outputs(s, args, want).ok);
  auto copy = args;
  copy[0].as<float>()[0] = 42;
  CHECK(args[0].as<float>()[0] != 42);
}

TEST_CASE("svm: concurrent launches from several threads, each on its own arguments") {
  const Spec s = saxpy_spec(30011, 64);
  ExecutorOptions o;
  o.memory = MemoryMode::svm;
  Executor ex(s, kSaxpy, two_devices(), o);
  auto want = make_args(s);
  saxpy_reference(s, want);
  std::vector<std::vector<ArgData>> per_thread;
  for (int t = 0; t < 3; ++t) per_thread.push_back(ex.make_args());
  std::vector<int> ok(3, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      ex.launch(per_thread[t], Config{t == 0 ? 1.0 : 0.5, t == 2 ? 0.0 : 1.0});
      ok[t] = compare_outputs(s, per_thread[t], want).ok;
    });
  for (auto& th : threads) th.join();
  CHECK(ok == std::vector<int>{1, 1, 1});
}
