// libFuzzer target over the analysis entry point: any bytes as an OpenCL C file must give a result (features or
// diagnostics), never a crash, a leak or a hang.
// Build and run: ./setup.sh fuzz (CC=clang-15 CXX=clang++-15 cmake -DDOP_FUZZ=ON ...).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dop/features.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dop::features::Options options;
  options.time_limit_ms = 2000;
  const auto result =
      dop::features::analyze(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.cl", options);
  // Exercise the output paths too.
  for (const auto& k : result.kernels) {
    (void)dop::features::to_json(k);
    (void)dop::features::to_csv_row(k);
    for (const auto& l : k.loop_list) (void)l.trip.evaluate({{"N", 7}});
  }
  (void)dop::features::to_json(result, "fuzz.cl");
  // Clang's own crashes are recovered and reported (a known class of Clang 15 bugs); a crash of the analysis is a
  // bug of ours: fail loudly. (Run with DOP_NO_CRASH_RECOVERY=1 to get the stack of either.)
  for (const auto& d : result.diagnostics)
    if (d.message.find("internal error: the analysis") != std::string::npos) std::abort();
  return 0;
}
