// dop program cache: OpenCL program binaries kept on disk across processes (and in memory within one), so that a
// kernel is compiled once per machine, driver and source. Runtime tier: OpenCL only.
//
// Where: DOP_CACHE_DIR, else $XDG_CACHE_HOME/dop, else ~/.cache/dop, in a subfolder programs/; DOP_CACHE=0 turns the
// cache off (every build compiles the source). An entry is one device's binary of one source with one set of build
// options, keyed by the device's name, vendor and driver version, its OpenCL C version, the platform's name and
// version, the source, the options and the entry format's version. The file is named by a 64-bit FNV-1a hash of
// that key and holds the key itself, so a hash collision is a miss, never a wrong program. Entries are written to a
// temporary file in the same folder, fsync'd and renamed (concurrent writers are safe); an entry whose header,
// length or checksum is wrong is removed, and one the driver refuses is overwritten: either way the program is
// built from source (logged once to stderr under DOP_LOG). An unwritable folder only means nothing is stored.
// Binaries are stored where the program's devices are exactly those it was built for (one device in a context of
// its own, as the executor builds them); a program built for one device of a larger context (MemoryMode::svm)
// reads binaries but stores none.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "dop/cl.hpp"

namespace dop {

/// What the program cache did in this process so far (every build through build_program_cached).
struct ProgramCacheStats {
  std::size_t built = 0;       ///< programs compiled from source (a miss, the cache off, or a rejected entry)
  std::size_t from_cache = 0;  ///< programs made from cached binaries (this process's memory or the disk)
  std::size_t stored = 0;      ///< binaries written to the disk cache
  std::size_t rejected = 0;    ///< entries ignored: corrupt or truncated (removed), or refused by the driver
  double build_ms = 0;         ///< wall time of every build, of either kind
};
ProgramCacheStats program_cache_stats();

/// The folder entries live in ("<dir>/programs"), or "" when DOP_CACHE=0 turned the cache off. Read from the
/// environment at every call.
std::string program_cache_dir();

/// A built program and how it was made.
struct CachedProgram {
  cl::Program program;
  bool from_cache = false;  ///< made from cached binaries (no compilation)
  double ms = 0;            ///< wall time of the build
};

/// cl::build_program through the cache: for every device a cached binary of (source, options) is looked up; when
/// all are there the program is made from them (clCreateProgramWithBinary, then clBuildProgram as the specification
/// asks), otherwise it is compiled from source and each device's binary stored. Throws what cl::build_program
/// throws for a source that does not build.
CachedProgram build_program_cached(const cl::Context& ctx, const std::vector<cl_device_id>& devices,
                                   const std::string& source, const std::string& options,
                                   const std::string& file = "<source>");

}  // namespace dop
