// libFuzzer target over workload specs: any bytes as a spec file must be parsed or refused with an error (never a
// crash, a leak, undefined behaviour or a hang); a spec that parses must survive spec_to_json and parse again to the
// same spec, and is checked against the signature of the kernel it names (dop::check_signature, the check the runtime
// makes against the built kernel, here with the parameters of the seeds' kernels; no launch): it must fit or be
// refused with a SpecError.
// Build and run: ./setup.sh fuzz (CC=clang-15 CXX=clang++-15 cmake -DDOP_FUZZ=ON ...); seeds: tests/data/run.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "dop/spec.hpp"

namespace {

using dop::ArgKind;
using dop::KernelParam;

// The kernels a fuzzed spec may name, as the runtime reads their parameters from the built kernel: saxpy of the
// seeds (tests/data/run/saxpy.cl), gemm of kernels/gemm, and one with every kind of parameter and a typedef scalar.
const std::map<std::string, std::vector<KernelParam>>& signatures() {
  static const std::map<std::string, std::vector<KernelParam>> by_name = {
      {"saxpy", {{ArgKind::buffer, ""}, {ArgKind::buffer, ""}, {ArgKind::scalar, "float"}, {ArgKind::scalar, "int"}}},
      {"gemm",
       {{ArgKind::buffer, ""},
        {ArgKind::buffer, ""},
        {ArgKind::buffer, ""},
        {ArgKind::scalar, "float"},
        {ArgKind::scalar, "float"},
        {ArgKind::scalar, "int"},
        {ArgKind::scalar, "int"},
        {ArgKind::scalar, "int"}}},
      {"mixed",
       {{ArgKind::buffer, ""},
        {ArgKind::buffer, ""},
        {ArgKind::local, ""},
        {ArgKind::scalar, "long"},
        {ArgKind::scalar, "uchar"},
        {ArgKind::scalar, "real_t"}}},
  };
  return by_name;
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
  // Its sizes, and its arguments against the kernel it names (no launch): they fit or are refused with a message.
  (void)spec.global_items();
  (void)spec.work_groups();
  const auto k = signatures().find(spec.kernel_name);
  if (k != signatures().end()) {
    try {
      dop::check_signature(spec, k->second);
    } catch (const dop::SpecError&) {
    }
  }
  return 0;
}
