// Resident buffers: argument buffers that live across Executor launches, on one or several executors. Per buffer,
// which byte ranges are current in host memory and in the GPU's copy (MSI over the two memories, dop/range_set.hpp,
// as the interposer keeps for an application's buffers): a launch moves only what its devices lack, and results
// stay where they were written until the caller asks for them. Runtime tier: OpenCL only.
#pragma once

#include <cstddef>
#include <limits>
#include <memory>

#include "dop/cl.hpp"
#include "dop/range_set.hpp"
#include "dop/spec.hpp"

namespace dop {

/// The GPU's copies of argument buffers, kept across the launches of every executor given this object
/// (ExecutorOptions::data; copy memory mode). A buffer is known by its host memory (ArgData::data()); the host
/// memory stays the caller's and the CPU computes in it in place.
///
/// - A launch tracks the buffers it is given that are not tracked yet (their host copy current), then makes current
///   on each device it runs on what the launch may read or write (the kernel's footprint over the whole launch
///   where ExecutorOptions::footprint bounds the buffer, else the whole buffer), moving only what that device lacks;
///   at a configuration of both devices, bounded buffers chunk by chunk, each device over its chunks' footprint.
/// - Afterwards what the GPU may have written is current only in the GPU's copy, what the CPU may have written only
///   in host memory: nothing is read back, unless both devices may have written the same bytes (then the GPU's
///   part is read back and merged, as a plain launch does).
/// - The caller reads results with sync (before looking at host memory), and declares its own writes to host
///   memory with wrote (the GPU's copy of those bytes is stale from then on).
/// - A launch that fails after it started leaves the bytes a device that ran may have written stale in that device's
///   memory (current nowhere where both ran: lost): sync and launches that need lost bytes throw std::runtime_error
///   naming the buffer until wrote() covers them again.
/// - The caller's own memory: over a context and GPU of the caller's (an application's), existing buffers of that
///   context are adopted as GPU copies and used in place; release() then says where each byte is current and hands
///   the buffer back, so that the caller keeps the one record of residency between launches.
/// Thread-safe; a launch holds the object for its whole run (executors sharing it run one after the other).
class DeviceData {
 public:
  static constexpr size_t npos = std::numeric_limits<size_t>::max();
  struct Moved {
    size_t h2d_bytes = 0, d2h_bytes = 0;  ///< to the GPU's copies, and from them to host memory
  };

  /// For launches on the GPU of `devices`: the GPU's copies live in a context made here, in which every executor
  /// given this object runs its GPU side. Throws std::invalid_argument when `devices` has no GPU.
  explicit DeviceData(const cl::Selection& devices);
  /// For launches whose GPU side runs in the caller's `context` on its `gpu` (both retained, not owned): the GPU's
  /// copies are buffers of that context, adopted (adopt) or made here. Executors given this object must have `gpu`
  /// as their GPU; in MemoryMode::automatic they run in copy mode (the GPU works on its copies, not host memory).
  DeviceData(cl_context context, cl_device_id gpu);
  ~DeviceData();
  DeviceData(const DeviceData&) = delete;
  DeviceData& operator=(const DeviceData&) = delete;

  /// Tracks `buffer` (its host copy current) if it is not tracked yet.
  void track(const ArgData& buffer);
  /// The host copy of `buffer` made current (sync), its GPU copy freed, and the buffer no longer tracked: call it
  /// before the buffer's host memory is freed or reallocated. A buffer not tracked is ignored.
  void forget(ArgData& buffer);
  /// The caller wrote bytes [lo, hi) of `buffer`'s host memory (clamped to the buffer): the GPU's copy of them is
  /// stale, the host's current (bytes a failed launch lost included).
  void wrote(const ArgData& buffer, size_t lo = 0, size_t hi = npos);
  /// Makes host memory current over bytes [lo, hi) of `buffer` (reading from the GPU what only it holds); returns
  /// the bytes read. Throws std::runtime_error where a failed launch lost bytes of the range.
  size_t sync(ArgData& buffer, size_t lo = 0, size_t hi = npos);
  /// Where the current copies are, over bytes [lo, hi): for tests and diagnostics. False for a buffer not tracked.
  bool host_current(const ArgData& buffer, size_t lo = 0, size_t hi = npos) const;
  bool gpu_current(const ArgData& buffer, size_t lo = 0, size_t hi = npos) const;
  /// Adopts `gpu_copy`, a buffer of this object's context of at least buffer.bytes, as `buffer`'s GPU copy (retained;
  /// launches use it in place): `host_current` and `gpu_current` are the byte ranges current in host memory and in
  /// `gpu_copy`, and every byte must be in one of them. Throws std::invalid_argument for a buffer of another context,
  /// one too small, bytes current nowhere, or a buffer tracked already with another GPU copy.
  void adopt(const ArgData& buffer, cl_mem gpu_copy, const RangeSet& host_current, const RangeSet& gpu_current);
  /// Where the bytes of a tracked buffer are current, and those a failed launch lost (current nowhere).
  struct Copies {
    RangeSet host, gpu, lost;
  };
  /// `buffer` no longer tracked, nothing moved (its GPU copy let go: an adopted one is the caller's again); returns
  /// where its bytes were current. A buffer not tracked: host memory current, nothing else.
  Copies release(const ArgData& buffer);
  /// Bytes moved since construction, by launches and by sync.
  Moved moved() const;
  /// The GPU device the copies live on.
  cl_device_id gpu_device() const;

  struct Impl;  ///< the engine's side of it (runtime/src/engine/resident.hpp)
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace dop
