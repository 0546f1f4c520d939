// libFuzzer target over workload specs: any bytes as a spec file must be parsed or refused with an error (never a
// crash, a leak, undefined behaviour or a hang); a spec that parses must survive spec_to_json and parse again to the
// same spec, and is validated against the signature of the kernel it names, as the analysis reads it (no launch).
// Build and run: ./setup.sh fuzz (CC=clang-15 CXX=clang++-15 cmake -DDOP_FUZZ=ON ...); seeds: tests/data/run.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>

#include "dop/features.hpp"
#include "dop/spec.hpp"

namespace {

// The kernels a fuzzed spec may name: the signatures a spec meets in the seeds (saxpy of tests/data/run) and every
// kind of argument (global, constant and local pointers, scalars of several types).
const char* const kKernels = R"(
__kernel void saxpy(__global float* y, __global const float* x, float a, int n) {
  int i = get_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
__kernel void mixed(__global double* out, __constant int* idx, __local float* tmp, long n, uchar flag, half h) {
  tmp[get_local_id(0)] = (float)idx[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  out[get_global_id(0)] = tmp[0] + n + flag;
}
)";

const std::map<std::string, dop::features::KernelFeatures>& signatures() {
  static const auto by_name = [] {
    std::map<std::string, dop::features::KernelFeatures> m;
    for (auto& k : dop::features::analyze(kKernels, "fuzz_kernels.cl").kernels) m[k.name] = k;
    if (m.size() != 2) std::abort();  // the harness's own kernels must parse
    return m;
  }();
  return by_name;
}

// Whether the spec's arguments fit the kernel's signature: their number, and each argument's kind (a buffer for a
// __global or __constant pointer, local memory for a __local one, a scalar otherwise).
bool fits(const dop::Spec& s, const dop::features::KernelFeatures& k) {
  if (s.args.size() != k.args.size()) return false;
  for (size_t i = 0; i < s.args.size(); ++i) {
    const auto& a = k.args[i];
    const dop::ArgKind want = !a.is_pointer                ? dop::ArgKind::scalar
                              : a.address_space == "local" ? dop::ArgKind::local
                                                           : dop::ArgKind::buffer;
    if (s.args[i].kind != want) return false;
  }
  return true;
}

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
  // Validated against the kernel it names (no launch): one the harness knows, or none.
  (void)spec.global_items();
  (void)spec.work_groups();
  const auto k = signatures().find(spec.kernel_name);
  if (k != signatures().end()) (void)fits(spec, k->second);
  return 0;
}
