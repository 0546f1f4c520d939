// dop memory modes: how a launch's buffers reach the GPU (copies, zero-copy, resident data, page-locked host memory,
// shared virtual memory), their names on the command line, and why shared virtual memory cannot run on a selection.
// Runtime tier.
#pragma once

#include <string>

#include "dop/cl.hpp"

namespace dop {

/// How buffers reach the GPU.
enum class MemoryMode {
  automatic,  ///< zero-copy where the GPU shares host memory (CL_DEVICE_HOST_UNIFIED_MEMORY), copies otherwise
  zero_copy,  ///< CL_MEM_USE_HOST_PTR on both devices over the same host memory
  copy,       ///< GPU buffers of its own: inputs copied in, outputs copied back and merged (all timed)
  /// As copy, but the data is resident: every input is on the GPU before the timed region starts, and the GPU's
  /// outputs are read back and merged after it ends (d2h_ms says how long that took; total_ms leaves it out).
  resident,
  /// As copy, with the arguments' buffers (Executor::make_args / place) in page-locked host memory of the GPU's
  /// context: the GPU's DMA reads read-only inputs, and writes outputs nothing is merged into, straight from and
  /// into them, without the staging copies of copy mode (which take a core and two more passes over host memory per
  /// byte sent), and the CPU computes in them in place. What page-locked memory gives a CUDA program (cudaMallocHost). Buffers not
  /// allocated there are staged as in copy mode. No guard page follows such a buffer (the bounds check before a
  /// launch still applies).
  pinned,
  /// Shared virtual memory: the CPU's sub-devices and the GPU in one context, and the arguments' buffers in its
  /// fine-grain buffer SVM (Executor::make_args / place), which both devices and the host use at once, with no
  /// buffers, copies or maps. Where available (svm_unavailable says why not): both devices on one platform with
  /// fine-grain buffer SVM. Allocated with cross-device atomics where every device has them. CPU core counts are
  /// those of ExecutorOptions::cpu_levels (the context's devices are fixed when it is made).
  svm
};
/// Why MemoryMode::svm cannot run on `devices`, naming the device or platforms; "" when it can.
std::string svm_unavailable(const cl::Selection& devices);
MemoryMode parse_memory_mode(const std::string& s);
const char* memory_mode_name(MemoryMode m);

}  // namespace dop
