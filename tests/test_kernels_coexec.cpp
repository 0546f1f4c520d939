// Every real-world kernel of kernels/ (small size, both work-group organisations) reproduces its CPU reference at
// every one of the 44 configurations, co-executed on PoCL with two devices, in both memory modes.
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
    // Copy mode for half of the kernels exercises the discrete-GPU path (copies and merge) on PoCL too.
    ExecutorOptions o;
    o.memory = (runs / 44) % 2 ? MemoryMode::copy : MemoryMode::zero_copy;
    Executor ex(s, read_kernel_source(s), sel, o);
    for (const auto& c : configs) {
      auto args = make_args(s);
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
