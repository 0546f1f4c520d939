// DeviceData's inside (internal to dop_runtime): the tracked buffers, each with the byte ranges current in host
// memory and in the GPU's copy, and the moves between them that launches and sync make (resident.cpp).
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "dop/device_data.hpp"
#include "dop/range_set.hpp"

namespace dop {

struct DeviceData::Impl {
  // One tracked buffer. Invariant: every byte not in `lost` is current in host memory (`host`) or in the GPU's copy
  // (`gpu`), or in both.
  struct Entry {
    size_t bytes = 0;
    std::string name;  // the argument's, for messages
    cl::Buffer buf;    // the GPU's copy, made at its first use
    RangeSet host, gpu, lost;
  };

  cl_device_id device = nullptr;
  std::string device_id;
  cl::Context ctx;                       // every executor given this object runs its GPU side in it
  bool external = false;                 // ctx is the caller's (DeviceData(cl_context, cl_device_id))
  cl::Queue queue;                       // the moves of sync, forget and launches
  mutable std::mutex m;                  // a launch holds it for its whole run
  std::map<const void*, Entry> buffers;  // by host memory
  Moved moved;

  // The entry of `a`, made (its host copy current) when it is not tracked yet; std::invalid_argument when another
  // buffer of another size was tracked at that address and not forgotten. Call with `m` held.
  Entry& entry(const ArgData& a);
  const Entry* find(const ArgData& a) const;
  cl_mem gpu_buffer(Entry& e);
  // Bytes [lo, hi) of the buffer (clamped) made current in the GPU's copy from host memory `host` (to_gpu), or in
  // host memory from the GPU's copy, on `q` (a queue of ctx), blocking: only what that side lacks; counted in
  // `moved`, returns the bytes moved. Call with `m` held.
  size_t move(Entry& e, bool to_gpu, void* host, size_t lo, size_t hi, cl_command_queue q);
  void check_not_lost(const Entry& e, size_t lo, size_t hi, const std::string& what) const;
};

}  // namespace dop
