// Every synthetic workload of the paper set (and a sample of the extensions) and every workload of the span set builds
// on PoCL and matches its CPU reference at a small scale. One test case per access pattern or span family, so that
// CTest can run them in parallel.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "dop/cl.hpp"
#include "dop/run_single.hpp"
#include "dop/spec.hpp"
#include "dop/synthetic.hpp"

namespace syn = dop::synthetic;

namespace {

constexpr double kTestScale = 0.004;      // 8K to 1M elements per matrix (docs/synthetic.md, "Sizes")
constexpr double kSpanTestScale = 0.001;  // the span set: products n = 32-176, the others up to 736 (179K for tri)

cl_device_id test_device() {
  static const cl_device_id device = [] {
    const auto sel = dop::cl::select_devices(dop::cl::discover());
    if (!sel.cpu) throw std::runtime_error("no CPU OpenCL device (PoCL) found");
    return sel.cpu->device;
  }();
  return device;
}

// dop::run_single builds the program on every call (a fresh context each time), which costs 0.1-0.5 s per workload
// on PoCL; the 1,224 workloads share 204 programs. This runner builds every program a test case needs at once, as
// one concatenated source (kernel names are unique per program), and otherwise does what run_single does.
class Runner {
 public:
  explicit Runner(const std::vector<syn::Params>& workloads) : device_(test_device()) {
    ctx_ = dop::cl::create_context({device_});
    queue_ = dop::cl::create_queue(ctx_, device_);
    std::map<std::string, std::string> sources;
    for (const auto& p : workloads) sources.emplace(syn::program_name(p), syn::kernel_source(p));
    std::string all;
    for (const auto& [name, src] : sources) all += src;
    program_ = dop::cl::build_program(ctx_, {device_}, all, "", "synthetic-test.cl");
  }

  dop::SingleRun run(const dop::Spec& spec) {
    auto k = dop::cl::create_kernel(program_, spec.kernel_name);
    cl_uint nargs = 0;
    dop::cl::check(clGetKernelInfo(k.get(), CL_KERNEL_NUM_ARGS, sizeof(nargs), &nargs, nullptr), "clGetKernelInfo");
    if (nargs != spec.args.size())
      throw std::runtime_error("kernel has " + std::to_string(nargs) + " arguments, the spec gives " +
                               std::to_string(spec.args.size()));
    dop::SingleRun r;
    r.args = dop::make_args(spec);
    std::vector<dop::cl::Buffer> bufs(spec.args.size());
    for (size_t i = 0; i < spec.args.size(); ++i) {
      const dop::ArgSpec& a = spec.args[i];
      const auto idx = static_cast<cl_uint>(i);
      if (a.kind == dop::ArgKind::buffer) {
        const cl_mem_flags flags = (a.access == dop::Access::read ? CL_MEM_READ_ONLY : CL_MEM_READ_WRITE);
        bufs[i] = dop::cl::create_buffer(ctx_, flags | CL_MEM_COPY_HOST_PTR, a.bytes(), r.args[i].data());
        cl_mem m = bufs[i].get();
        dop::cl::set_arg(k, idx, sizeof(cl_mem), &m);
      } else if (a.kind == dop::ArgKind::scalar) {
        dop::cl::set_arg(k, idx, a.bytes(), r.args[i].data());
      } else {
        dop::cl::set_arg(k, idx, a.bytes(), nullptr);
      }
    }
    auto ev = dop::cl::enqueue_ndrange(queue_, k, spec.global, spec.local);
    r.kernel_ms = dop::cl::event_times(ev).run_ms();
    for (size_t i = 0; i < spec.args.size(); ++i) {
      const dop::ArgSpec& a = spec.args[i];
      if (a.kind != dop::ArgKind::buffer || a.access == dop::Access::read) continue;
      dop::cl::check(clEnqueueReadBuffer(queue_.get(), bufs[i].get(), CL_TRUE, 0, a.bytes(), r.args[i].data(), 0,
                                         nullptr, nullptr),
                     "clEnqueueReadBuffer");
    }
    return r;
  }

 private:
  cl_device_id device_;
  dop::cl::Context ctx_;
  dop::cl::Queue queue_;
  dop::cl::Program program_;
};

// Runs one workload on the device and against its reference; returns "" or what went wrong.
std::string run_and_compare(Runner& runner, const syn::Params& p, double scale = kTestScale) {
  const syn::Workload w = syn::generate(p, scale);
  try {
    const dop::SingleRun run = runner.run(w.spec);
    const auto want = dop::run_reference(w.spec);
    const dop::Comparison c = dop::compare_outputs(w.spec, run.args, want);
    if (!c.ok) return w.spec.name + ": " + std::to_string(c.mismatches) + " mismatches, first " + c.first;
  } catch (const std::exception& e) {
    return w.spec.name + ": " + e.what();
  }
  return {};
}

void validate_pattern(const std::string& pattern) {
  syn::register_references();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<syn::Params> workloads;
  for (const syn::Params& p : syn::paper_set()) {
    syn::Params without_gamma = p;
    without_gamma.gamma = 0;
    if (syn::pattern(without_gamma) == pattern) workloads.push_back(p);
  }
  Runner runner(workloads);
  size_t n = 0;
  for (const syn::Params& p : workloads) {
    ++n;
    const std::string err = run_and_compare(runner, p);
    INFO(err);
    CHECK(err.empty());
  }
  CHECK(n == 72);  // 2 dtypes x 2 dims x 3 γ x 3 rungs x 2 work-group sizes
  std::printf("%s: %zu workloads validated in %.1f s\n", pattern.c_str(), n,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace

#define SYN_PATTERN_TEST(P) \
  TEST_CASE("synthetic " P ": all 72 workloads match the reference on PoCL") { validate_pattern(P); }

SYN_PATTERN_TEST("1mat3d")
SYN_PATTERN_TEST("1mat3d1R")
SYN_PATTERN_TEST("1mat3d1T")
SYN_PATTERN_TEST("1mat3d1C")
SYN_PATTERN_TEST("1mat3d1C1R")
SYN_PATTERN_TEST("1mat3d1C1T")
SYN_PATTERN_TEST("2mat3d")
SYN_PATTERN_TEST("2mat3d1R")
SYN_PATTERN_TEST("2mat3d1T")
SYN_PATTERN_TEST("2mat3d1R1T")
SYN_PATTERN_TEST("2mat3d1C")
SYN_PATTERN_TEST("2mat3d1C1R")
SYN_PATTERN_TEST("2mat3d1C1T")
SYN_PATTERN_TEST("2mat3d1C1R1T")
SYN_PATTERN_TEST("1mat4d")
SYN_PATTERN_TEST("1mat4d1R")
SYN_PATTERN_TEST("1mat4d1T")

TEST_CASE("synthetic: the 17 pattern test cases cover the paper's patterns") {
  // Keeps the list above in step with paper_patterns(): a pattern added there without a test case fails here.
  CHECK(syn::paper_patterns().size() == 17);
}

TEST_CASE("synthetic extensions: a sample of each extension matches the reference on PoCL") {
  syn::register_references();
  const auto t0 = std::chrono::steady_clock::now();
  size_t n = 0, coarsen = 0, div = 0, lm = 0, f64 = 0, d3 = 0;
  const auto set = syn::extended_set();
  std::vector<syn::Params> sample;
  for (size_t i = 1224; i < set.size(); ++i) {
    REQUIRE(set[i].extended());
    // Every 3D workload, and every seventh of the others (7 is prime to the grid's cycles of 2 work-group sizes,
    // 2 γ, 2 dims and 2 types, so the sample is spread over all of them and over every pattern).
    if (set[i].dim == 3 || i % 7 == 0) sample.push_back(set[i]);
  }
  Runner runner(sample);
  for (const syn::Params& p : sample) {
    ++n;
    coarsen += p.coarsen != 1;
    div += p.divergent;
    lm += p.local_mem;
    f64 += p.dtype == syn::DType::f64;
    d3 += p.dim == 3;
    const std::string err = run_and_compare(runner, p);
    INFO(err);
    CHECK(err.empty());
  }
  CHECK(coarsen >= 35);
  CHECK(div >= 35);
  CHECK(lm >= 35);
  CHECK(f64 >= 15);
  CHECK(d3 == 24);
  std::printf("extensions: %zu workloads validated in %.1f s\n", n,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

// The span set: every workload of a family (4 γ x 5 rungs x 2 work-group sizes) at the tests' scale.
void validate_span_family(const std::string& family) {
  syn::register_references();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<syn::Params> workloads;
  for (const syn::Params& p : syn::span_set())
    if (syn::pattern(p).rfind(family + "_", 0) == 0) workloads.push_back(p);
  REQUIRE(workloads.size() == 40);
  Runner runner(workloads);
  for (const syn::Params& p : workloads) {
    const std::string err = run_and_compare(runner, p, kSpanTestScale);
    INFO(err);
    CHECK(err.empty());
  }
  std::printf("span %s: %zu workloads validated in %.1f s\n", family.c_str(), workloads.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

#define SPAN_FAMILY_TEST(F) \
  TEST_CASE("span " F ": all 40 workloads match the reference on PoCL") { validate_span_family(F); }

SPAN_FAMILY_TEST("tri")
SPAN_FAMILY_TEST("mm")
SPAN_FAMILY_TEST("mmt")
SPAN_FAMILY_TEST("mvr")
SPAN_FAMILY_TEST("mvc")
SPAN_FAMILY_TEST("st1")
SPAN_FAMILY_TEST("st2")
SPAN_FAMILY_TEST("st4")
SPAN_FAMILY_TEST("gv")

TEST_CASE("synthetic: the validation detects a wrong result") {
  // The comparison must be able to fail: a small error in one element of a float output (1e-3, or 1e-4 of the value
  // for the span set's long sums, whose tolerance admits fma contraction and summation drift only) and a one-off
  // error in an int output are both caught.
  // This one goes through dop::run_single, as `dop run` does.
  syn::register_references();
  for (const char* name : {"2mat3d2c1C1R1T_d2_float_s1_wg64", "2mat3d2c1C1R1T_d2_int_s1_wg64", "mm_c0_s5_wg8x8",
                           "st4_c4_s3_wg16x16", "tri_c64_s1_wg64"}) {
    INFO(name);
    const syn::Params p = syn::parse_name(name);
    const syn::Workload w = syn::generate(p, p.span() ? kSpanTestScale : kTestScale);
    dop::SingleRun run = dop::run_single(w.spec, w.source, test_device());
    const auto want = dop::run_reference(w.spec);
    REQUIRE(dop::compare_outputs(w.spec, run.args, want).ok);
    size_t out = 0;
    while (!w.spec.args[out].output) ++out;
    if (w.spec.args[out].type == dop::ElemType::f32)
      run.args[out].as<float>()[777] += std::max(1e-3f, 1e-4f * std::fabs(run.args[out].as<float>()[777]));
    else
      run.args[out].as<int>()[777] += 1;
    const dop::Comparison c = dop::compare_outputs(w.spec, run.args, want);
    CHECK_FALSE(c.ok);
    CHECK(c.mismatches == 1);
    CHECK_THAT(c.first, Catch::Contains("[777]"));
  }
}
