// Every real-world kernel of kernels/ (small size, both work-group organisations) reproduces its CPU reference at
// every one of the 44 configurations, co-executed on PoCL with two devices, in three memory modes.
#include <catch2/catch.hpp>

#include "dop/kernels.hpp"
#include "dop/runtime.hpp"

using namespace dop;

TEST_CASE("every real-world kernel validates at all 44 configurations") {
  kernels::register_references();
  const auto files = kernels::spec_files(kernels::default_dir(), "small");
  REQUIRE(files.size() == 30);
  const auto sel = cl::select_devices(cl::discover(), "pocl:0", "pocl:1");
  const auto configs = Grid{}.configs();
  size_t runs = 0;
  for (const auto& f : files) {
    const Spec s = load_spec(f);
    const auto want = run_reference(s);
    // A third of the kernels in each mode: copy mode exercises the discrete-GPU path (copies and merge) on PoCL
    // too, svm one context and shared virtual memory for both devices.
    ExecutorOptions o;
    const MemoryMode modes[] = {MemoryMode::zero_copy, MemoryMode::copy, MemoryMode::svm};
    o.memory = modes[(runs / 44) % 3];
    Executor ex(s, read_kernel_source(s), sel, o);
    for (const auto& c : configs) {
      auto args = ex.make_args();
      const auto r = ex.launch(args, c);
      const auto cmp = compare_outputs(s, args, want);
      INFO(f << " at " << to_string(c) << " (" << memory_mode_name(o.memory) << "): " << cmp.first);
      REQUIRE(cmp.ok);
      REQUIRE(r.cpu.work_items + r.gpu.work_items == s.global_items());
      ++runs;
    }
  }
  CHECK(runs == 30 * 44);
}
