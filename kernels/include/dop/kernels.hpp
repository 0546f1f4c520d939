// The real-world kernels of Dopia's Table 4 (2DCONV, ATAX1-2, BICG1-2, FDTD1-3, GESUMMV, MVT1-2, SYR2K, SpMV,
// PageRank) plus GEMM: OpenCL sources and workload specs under kernels/<benchmark>/, CPU references here.
// docs/kernels.md describes each kernel, its sizes and data. Runtime tier: C++17 and the spec API only.
#pragma once

#include <string>
#include <vector>

namespace dop::kernels {

/// The kernel names, which are also the reference names without the "kernels:" prefix: "conv2d", "atax1", "atax2",
/// "bicg1", "bicg2", "fdtd1", "fdtd2", "fdtd3", "gemm", "gesummv", "mvt1", "mvt2", "syr2k", "spmv", "pagerank".
const std::vector<std::string>& names();

/// Registers the CPU reference of every kernel under "kernels:<name>" with dop::register_reference. Idempotent.
/// A reference throws dop::SpecError (naming the spec and the argument) when an argument it needs is missing, of
/// another type, or too small for the sizes the spec's scalars give.
void register_references();

/// The folder that holds the kernels' folders: $DOP_KERNELS_DIR when set, else the kernels/ folder of the source
/// tree this library was built from.
std::string default_dir();

/// The spec files under `dir` (a folder holding <benchmark>/*.json, normally default_dir()), sorted by path.
/// `size` selects one size class by the file name (<kernel>_<size>_...json): "small", "paper" or "large"; empty
/// for all. Returns nothing for a folder that does not exist.
std::vector<std::string> spec_files(const std::string& dir, const std::string& size = {});

}  // namespace dop::kernels
