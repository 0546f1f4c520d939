// libFuzzer target over workload specs: any bytes as a spec file must be parsed or refused with an error (never a
// crash, a leak, undefined behaviour or a hang); a spec that parses must survive spec_to_json and parse again to the
// same spec; its sizes are computed (no launch). Checking a spec against its kernel's signature needs the kernel
// (dop::check_kernel_args, an OpenCL kernel object): not here.
// Build and run: ./setup.sh fuzz (CC=clang-15 CXX=clang++-15 cmake -DDOP_FUZZ=ON ...); seeds: tests/data/run.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>

#include "dop/spec.hpp"

namespace {

bool same(const dop::Spec& a, const dop::Spec& b) {
  if (a.name != b.name || a.kernel_name != b.kernel_name || a.build_options != b.build_options ||
      a.global != b.global || a.local != b.local || a.reference != b.reference || a.meta != b.meta ||
      a.args.size() != b.args.size() || a.tolerance.rel != b.tolerance.rel || a.tolerance.abs != b.tolerance.abs)
    return false;
  for (size_t i = 0; i < a.args.size(); ++i) {
    const auto &x = a.args[i], &y = b.args[i];
    if (x.name != y.name || x.kind != y.kind || x.type != y.type || x.count != y.count || x.access != y.access ||
        x.output != y.output || x.bytes() != y.bytes() || x.init.fill != y.init.fill || x.init.seed != y.init.seed ||
        !(x.value == y.value || (x.value != x.value && y.value != y.value)))
      return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  dop::Spec spec;
  try {
    spec = dop::parse_spec(text, "/fuzz/spec.json");
  } catch (const std::exception&) {
    return 0;  // refused with a message: what a bad spec must get
  }
  // What parses serialises and parses back to the same spec: the format has one meaning.
  dop::Spec again;
  try {
    again = dop::parse_spec(dop::spec_to_json(spec), "/fuzz/spec.json");
  } catch (const std::exception&) {
    std::abort();
  }
  if (!same(spec, again)) std::abort();
  // Its sizes (no launch).
  (void)spec.global_items();
  (void)spec.work_groups();
  return 0;
}
