// The OpenCL host layer on PoCL (two CPU devices: POCL_DEVICES="pthread pthread", set by CTest).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <set>
#include <vector>

#include "dop/cl.hpp"

using namespace dop;

namespace {
const char* kScale = R"CL(
__kernel void scale(__global float* x, float s) { x[get_global_id(0)] *= s; }
)CL";

std::vector<float> run_scale(cl_device_id dev, std::vector<float> data, float s, size_t local) {
  auto ctx = cl::create_context({dev});
  auto q = cl::create_queue(ctx, dev);
  auto prog = cl::build_program(ctx, {dev}, kScale, "", "scale.cl");
  auto k = cl::create_kernel(prog, "scale");
  auto buf = cl::create_buffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, data.size() * sizeof(float), data.data());
  cl_mem m = buf.get();
  cl::set_arg(k, 0, m);
  cl::set_arg(k, 1, s);
  auto ev = cl::enqueue_ndrange(q, k, {data.size()}, {local});
  const auto t = cl::event_times(ev);
  CHECK(t.queued <= t.start);
  CHECK(t.start <= t.end);
  cl::check(clEnqueueReadBuffer(q.get(), m, CL_TRUE, 0, data.size() * sizeof(float), data.data(), 0, nullptr, nullptr),
            "clEnqueueReadBuffer");
  return data;
}
}  // namespace

TEST_CASE("error codes have symbolic names") {
  CHECK(cl::error_name(CL_INVALID_WORK_GROUP_SIZE) == "CL_INVALID_WORK_GROUP_SIZE");
  CHECK(cl::error_name(-54) == "CL_INVALID_WORK_GROUP_SIZE");
  CHECK(cl::error_name(CL_BUILD_PROGRAM_FAILURE) == "CL_BUILD_PROGRAM_FAILURE");
  CHECK(cl::error_name(-12345) == "CL_UNKNOWN_ERROR(-12345)");
  cl::Error e(CL_INVALID_KERNEL_ARGS, "clEnqueueNDRangeKernel", "kernel 'k'");
  CHECK(std::string(e.what()) == "clEnqueueNDRangeKernel: CL_INVALID_KERNEL_ARGS (-52): kernel 'k'");
  CHECK(e.code() == CL_INVALID_KERNEL_ARGS);
}

TEST_CASE("discovery finds the PoCL devices with unique ids") {
  const auto devs = cl::discover();
  REQUIRE(devs.size() >= 2);  // POCL_DEVICES="pthread pthread"
  std::set<std::string> ids;
  for (const auto& d : devs) {
    ids.insert(d.id);
    CHECK(d.role == cl::Role::cpu);
    CHECK(d.platform_key == "pocl");
    CHECK(d.compute_units >= 1);
    CHECK(d.global_mem_bytes > 0);
    CHECK_FALSE(d.identity().empty());
  }
  CHECK(ids.size() == devs.size());
  CHECK(ids.count("pocl:0") == 1);
  CHECK(ids.count("pocl:1") == 1);
}

TEST_CASE("default selection: a second CPU device takes the gpu role") {
  ::unsetenv("DOP_CPU");
  ::unsetenv("DOP_GPU");
  const auto devs = cl::discover();
  const auto sel = cl::select_devices(devs);
  REQUIRE(sel.cpu);
  REQUIRE(sel.gpu);
  CHECK(sel.cpu->id == "pocl:0");
  CHECK(sel.gpu->id == "pocl:1");
}

TEST_CASE("selection by flag or platform key or none or environment") {
  ::unsetenv("DOP_CPU");
  ::unsetenv("DOP_GPU");
  const auto devs = cl::discover();
  auto s = cl::select_devices(devs, "pocl:1", "pocl:0");
  CHECK(s.cpu->id == "pocl:1");
  CHECK(s.gpu->id == "pocl:0");
  s = cl::select_devices(devs, "pocl", "none");
  CHECK(s.cpu->id == "pocl:0");
  CHECK_FALSE(s.gpu);
  ::setenv("DOP_GPU", "none", 1);
  CHECK_FALSE(cl::select_devices(devs).gpu);
  ::setenv("DOP_GPU", "pocl:7", 1);
  CHECK_THROWS_WITH(cl::select_devices(devs), Catch::Contains("pocl:7") && Catch::Contains("pocl:0"));
  ::unsetenv("DOP_GPU");
  CHECK_THROWS_WITH(cl::select_devices(devs, "nvidia:0"), Catch::Contains("--cpu 'nvidia:0'"));
  CHECK_THROWS_WITH(cl::select_devices(devs, "pocl:0", "pocl:0"), Catch::Contains("same device"));
}

TEST_CASE("a kernel runs on every device and gives the right answer") {
  for (const auto& d : cl::discover()) {
    std::vector<float> x(1024);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i);
    const auto y = run_scale(d.device, x, 2.5f, 64);
    for (size_t i = 0; i < x.size(); ++i) REQUIRE(y[i] == 2.5f * x[i]);
  }
}

TEST_CASE("1- and 2-core sub-devices by counts") {
  const auto devs = cl::discover();
  const auto& d = devs.at(0);
  REQUIRE(d.fission_by_counts);
  for (cl_uint cores : {1u, 2u}) {
    if (cores > d.compute_units) continue;
    auto sub = cl::create_sub_device(d, cores);
    REQUIRE(sub);
    CHECK(cl::device_value<cl_uint>(sub.get(), CL_DEVICE_MAX_COMPUTE_UNITS) == cores);
    std::vector<float> x(256, 1.0f);
    const auto y = run_scale(sub.get(), x, 3.0f, 32);
    for (float v : y) REQUIRE(v == 3.0f);
  }
  CHECK_THROWS_WITH(cl::create_sub_device(d, d.compute_units + 1), Catch::Contains("compute units"));
  CHECK_THROWS_AS(cl::create_sub_device(d, 0), std::invalid_argument);
}

TEST_CASE("a device that cannot be split gives a clear error") {
  auto d = cl::discover().at(0);
  d.fission_by_counts = false;  // as reported by a device without CL_DEVICE_PARTITION_BY_COUNTS
  CHECK_THROWS_WITH(cl::create_sub_device(d, 1),
                    Catch::Contains("does not support CL_DEVICE_PARTITION_BY_COUNTS") && Catch::Contains(d.id));
}

TEST_CASE("a kernel with a syntax error yields its build log and file name") {
  const auto d = cl::discover().at(0);
  auto ctx = cl::create_context({d.device});
  const std::string bad = "__kernel void broken(__global float* x) {\n  x[0] = 1.0f\n}\n";
  try {
    cl::build_program(ctx, {d.device}, bad, "", "kernels/broken.cl");
    FAIL("build should have failed");
  } catch (const cl::BuildError& e) {
    CHECK(e.code() == CL_BUILD_PROGRAM_FAILURE);
    CHECK(e.file() == "kernels/broken.cl");
    CHECK_THAT(e.log(), Catch::Contains("error"));
    CHECK_THAT(e.log(), Catch::Contains("expected ';'"));
    CHECK_THAT(std::string(e.what()),
               Catch::Contains("CL_BUILD_PROGRAM_FAILURE") && Catch::Contains("kernels/broken.cl"));
  }
}

TEST_CASE("an unknown kernel name lists the kernels that exist") {
  const auto d = cl::discover().at(0);
  auto ctx = cl::create_context({d.device});
  auto prog = cl::build_program(ctx, {d.device}, kScale);
  CHECK(cl::kernel_names(prog) == std::vector<std::string>{"scale"});
  CHECK_THROWS_WITH(cl::create_kernel(prog, "scal"),
                    Catch::Contains("CL_INVALID_KERNEL_NAME") && Catch::Contains("scale"));
}

TEST_CASE("an invalid launch reports the symbolic error") {
  const auto d = cl::discover().at(0);
  auto ctx = cl::create_context({d.device});
  auto q = cl::create_queue(ctx, d.device);
  // OpenCL 1.2 semantics: the local size must divide the global size.
  auto prog = cl::build_program(ctx, {d.device}, kScale, "-cl-std=CL1.2");
  auto k = cl::create_kernel(prog, "scale");
  auto buf = cl::create_buffer(ctx, CL_MEM_READ_WRITE, 100 * sizeof(float));
  cl_mem m = buf.get();
  cl::set_arg(k, 0, m);
  CHECK_THROWS_WITH(cl::set_arg(k, 1, double(2.0)), Catch::Contains("CL_INVALID_ARG_SIZE") &&
                                                        Catch::Contains("argument 1") && Catch::Contains("scale"));
  cl::set_arg(k, 1, 2.0f);
  CHECK_THROWS_WITH(cl::enqueue_ndrange(q, k, {100}, {64}),
                    Catch::Contains("CL_INVALID_WORK_GROUP_SIZE") && Catch::Contains("global 100 local 64"));
  const size_t too_big = d.max_work_group_size * 2;
  CHECK_THROWS_WITH(cl::enqueue_ndrange(q, k, {too_big}, {too_big}),
                    Catch::Contains("CL_INVALID_WORK_GROUP_SIZE") || Catch::Contains("CL_INVALID_WORK_ITEM_SIZE"));
}
