// Recorded programs (dop-record/1): the source and build options of each program an application built, written by
// the interposer under DOP_RECORD=DIR (`dop exec --record DIR`) on a runtime-only machine, so that `dop bundle
// --from-record DIR` can make the kernels' bundles on a machine with the analysis tier. Runtime tier: no OpenCL.
//
//   DIR/<hash>.cl    the program's source, verbatim
//   DIR/<hash>.json  {"format": "dop-record/1", "source": "<hash>.cl", "options": "...", "kernels": ["k", ...],
//                     "source_sha256": "..."}
//
// <hash> is the SHA-256 of the source and build options: one record per distinct program, whatever the process.
#pragma once

#include <string>
#include <vector>

namespace dop {

struct RecordedProgram {
  std::string record_path;  ///< DIR/<hash>.json
  std::string source_path;  ///< DIR/<hash>.cl
  std::string source;
  std::string build_options;
  std::vector<std::string> kernels;  ///< the program's kernels (CL_PROGRAM_KERNEL_NAMES)
};

/// Records a program in `dir` (created when missing) unless a record of it is there already; the files are written
/// atomically, so concurrent recorders of the same program are safe. Returns the record's path when it wrote one,
/// "" when it was there. Throws std::runtime_error naming the file.
std::string record_program(const std::string& dir, const std::string& source, const std::string& build_options,
                           const std::vector<std::string>& kernels);

/// Every record of `dir` (its *.json), in path order. Throws std::runtime_error naming the folder when it is not
/// one, or a record that cannot be read, is not a dop-record/1, or whose source is missing or changed.
std::vector<RecordedProgram> read_records(const std::string& dir);

}  // namespace dop
