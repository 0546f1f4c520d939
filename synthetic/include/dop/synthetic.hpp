// The parameterizable synthetic workloads: Dopia's element-wise family (PPoPP'22, Section 5.2, Tables 2 and 4)
//   αmatβd[γc][θC][εR][δT]  _d<dim>  _<dtype>  _s<rung>  _wg<size>  [_w<K>] [_div] [_lm]
// and the span families (products, matrix-vector by rows and columns, stencils, a triad; issue 16)
//   <tri|mm|mmt|mvr|mvc|st<r>>  _c<γ>  _s<rung>  _wg<size>|_wg<x>x<y>
// Each workload is an OpenCL C kernel (shared by every workload that differs only in rung and work-group size), a
// dop-spec/1 workload spec, and a CPU reference registered as "synthetic:". Runtime tier.
// The grammars, γ, the size ladders and the extensions are documented in docs/synthetic.md.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "dop/spec.hpp"

namespace dop::synthetic {

enum class DType { f32, i32, f64 };
/// "float", "int", "double" (the OpenCL C names, as they appear in workload names).
const char* dtype_name(DType t);

/// The kernel family. `elementwise` is Dopia's αmatβd family (the paper and extended sets); the others make up the
/// span set, which covers data reuse, arithmetic intensity and access orientation (docs/synthetic.md, "The span set").
enum class Family {
  elementwise,  ///< αmatβd...: Out[i] = the sum of γ-transformed terms (Dopia Table 2)
  triad,        ///< tri: Out[i] = f(A[i] + s*B[i]); streaming, every element read once
  matmul,       ///< mm: C = A*B, a work-item per element of C (2D); B read down a column (coalesced on a GPU)
  matmul_bt,    ///< mmt: C = A*B^T (B stored transposed), both operands read along rows per work-item
  matvec_rows,  ///< mvr: y = A*x, a work-item per row (a contiguous row per work-item)
  matvec_cols,  ///< mvc: y = A^T*x, a work-item per column (neighbouring work-items read neighbouring elements)
  stencil,      ///< st<r>: a 2D star stencil of radius r, a work-item per interior point
  gather,       ///< gv: y = A*x for a sparse A of K entries per row at random columns (x read at random)
};
/// "elementwise", "tri", "mm", "mmt", "mvr", "mvc", "st", "gv" (the stencil's name part takes its radius: st2).
const char* family_name(Family f);

/// One workload. Defaults: 1mat3d_d1_float_s1_wg64. A span workload sets `family`, `gamma`, `radius` (stencils),
/// `size` and `wg`; its `dim` is the family's (1 or 2) and the αmat fields keep their defaults.
struct Params {
  Family family = Family::elementwise;
  int alpha = 1;    ///< α: input matrices summed (1..8)
  int beta = 3;     ///< β: dimensionality of the matrices (2..4)
  int gamma = 0;    ///< γ: extra arithmetic operations per term (0..16); span: dependent FMAs per term (0..256)
  int delta = 0;    ///< δ: terms read transposed (constant non-unit stride), "T"
  int epsilon = 0;  ///< ε: terms read through the index array (random), "R"
  int theta = 0;    ///< θ: terms read at a constant address, "C"
  int dim = 1;      ///< work-item dimensions (1..3, below β: the remaining dimensions are loops)
  DType dtype = DType::f32;
  int size = 1;    ///< size rung: 1..8, about 256 MiB * 2^(size-1) * scale of DRAM traffic; span: 1..5, see extents()
  int wg = 64;     ///< work-items per work-group (a power of two, 1..1024; 2D: spread as 8x8, 16x16, ...)
  int radius = 0;  ///< span stencils: the star's radius (1..8); 0 for every other family
  // Extensions (off in the paper set):
  int coarsen = 1;         ///< _w<K>: every work-item processes K consecutive outer indices (K in 2..64)
  bool divergent = false;  ///< _div: odd outer indices take a longer branch
  bool local_mem = false;  ///< _lm: results staged in local memory, written per work-group after a barrier

  /// Number of terms summed per element: max(α, δ+ε+θ) (element-wise family).
  int terms() const;
  /// True when any extension of the element-wise family is used (double, 3D work-items, _w, _div, _lm).
  bool extended() const;
  /// True for the span families (everything but `elementwise`).
  bool span() const { return family != Family::elementwise; }
  bool operator==(const Params& o) const;
  bool operator!=(const Params& o) const { return !(*this == o); }
};

/// Throws std::invalid_argument naming the offending parameter.
void validate(const Params& p);

/// "2mat3d2c1C1R1T": the access pattern with γ (Dopia's grammar, zero counts omitted, order c C R T); span
/// workloads: the family with γ, "mm_c8", "st2_c0".
std::string pattern(const Params& p);
/// The stable workload name, e.g. "2mat3d2c1T_d1_float_s1_wg64", "1mat4d_d3_int_s2_wg256_w4_div",
/// "mm_c8_s3_wg16x16" or "mvr_c0_s2_wg256".
std::string name(const Params& p);
/// Parses a workload name; only the canonical spelling (the one name() prints) is accepted. Throws
/// std::invalid_argument saying what is wrong.
Params parse_name(const std::string& name);

/// The 17 access patterns of Table 4, in the paper's order (1mat3d, 1mat3d1R, ..., 1mat4d1T).
const std::vector<std::string>& paper_patterns();
/// Table 4: 17 patterns x {float, int} x dim {1, 2} x γ {0, 2, 4} x rungs {1, 2, 3} x wg {64, 256} = 1,224.
std::vector<Params> paper_set();
/// The paper set followed by the extension workloads (docs/synthetic.md lists them).
std::vector<Params> extended_set();
/// The span set: tri, mm, mmt, mvr, mvc, st1, st2, st4, gv x γ {0, 4, 16, 64} x rungs 1..5 x two work-group sizes
/// (64/256 for 1D, 8x8/16x16 for 2D) = 360 workloads, in that nesting order (gv last: added after the first sweeps).
std::vector<Params> span_set();

/// Name of the kernel function and of the .cl file (without extension) shared by all workloads that differ only in
/// rung and work-group size: "syn_2mat3d2c1T_d1_float" (plus extension suffixes).
std::string program_name(const Params& p);
/// The OpenCL C source of that program (one kernel, named program_name(p)).
std::string kernel_source(const Params& p);

/// Estimated DRAM traffic per output element in bytes: sizeof(dtype) for the store and every continuous term, 4 for
/// the index array (when ε > 0), 128 for every transposed or random term (a cache line and its adjacent-line
/// prefetch); constant-address terms are free. Element-wise family only (std::invalid_argument otherwise).
double traffic_per_element(const Params& p);
/// Element-wise family: matrix extents n[0] (outermost) .. n[β-1] (innermost) at a scale. The inner extents are
/// fixed per β (256 elements in all: 256, 16x16, 16x4x4); n[0] = max(1, round(256 MiB * 2^(rung-1) * scale /
/// traffic_per_element / 256)), so that every workload of a rung moves about the same bytes (docs/synthetic.md,
/// "Sizes"). Span families: the problem's extents, {N} (tri), {M, N, K} (mm, mmt), {M, N} (mvr, mvc, stencils), from
/// the rung's target time on the reference platform, the work multiplied by scale (docs/synthetic.md, "The span
/// set"). Throws std::invalid_argument when scale is not positive or the data would not be indexable with 32-bit ints.
std::vector<size_t> extents(const Params& p, double scale = 1.0);
/// Global and local work sizes for the extents (global rounded up to multiples of local).
void launch_shape(const Params& p, const std::vector<size_t>& extents, std::vector<size_t>& global,
                  std::vector<size_t>& local);

struct Workload {
  Spec spec;            ///< kernel_file is "<program>.cl" (relative); reference is "synthetic:<name>"
  std::string program;  ///< program_name(params)
  std::string source;   ///< kernel_source(params)
};
/// A complete workload at a scale (1.0: the calibrated default, see docs/synthetic.md).
Workload generate(const Params& p, double scale = 1.0);

/// What the parameters imply for the static code features of the kernel (Dopia Table 1), as lower bounds on the
/// counts of memory and arithmetic operations in the source (each operation counted once, loops not unrolled).
struct ImpliedFeatures {
  int mem_constant = 0;    ///< θ
  int mem_continuous = 0;  ///< continuous terms + the output store (+ the index-array read when ε > 0)
  int mem_stride = 0;      ///< δ
  int mem_random = 0;      ///< ε
  int arith_data = 0;      ///< operations on dtype data: (terms-1) additions + terms*γ (+ the _div branch's)
  bool data_is_float = true;
};
/// Element-wise family only (std::invalid_argument otherwise).
ImpliedFeatures implied_features(const Params& p);

/// Computes the expected outputs of a synthetic workload into `args` (as made by dop::make_args(spec)). The
/// workload is identified by spec.reference ("synthetic:<name>") or else spec.name; extents and constants are read
/// from the spec's scalar arguments, so any scale works. Throws dop::SpecError when the spec does not fit the name.
void reference(const Spec& spec, std::vector<ArgData>& args);
/// Registers reference() for every "synthetic:" reference name. Idempotent; call once at startup.
void register_references();

}  // namespace dop::synthetic
