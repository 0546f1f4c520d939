// Kernel transformations (analysis tier, Clang 15): the malleable GPU form of
// an OpenCL C kernel (Dopia Figs. 5-6).
//
//   auto r = dop::transform::make_malleable(source, "k.cl", "saxpy", "-DN=4");
//   if (r) options.malleable_source = r.source; else options.malleable_note =
//   r.reason;
//
// The malleable form keeps the kernel's name and appends two int arguments,
// dop_gpu_mod and dop_gpu_alloc. A work-item whose flattened local id %
// dop_gpu_mod is < dop_gpu_alloc is active; the active work-items of a
// work-group process all of the group's items in a strided loop, so the whole
// group's output is produced by the active subset. Inside the loop
// get_local_id/get_global_id (and the linear ids) return the virtual item's
// ids, in the kernel and in every helper function it calls; other builtins keep
// their values. The work-group-range form is not made here: the runtime's macro
// prelude (dop::range_form_prelude) provides it for the original and the
// malleable source alike. docs/bundle.md describes the transformation with an
// example.
#pragma once

#include <memory>
#include <string>

namespace dop {
class FormsProvider;  // dop/kernel_forms.hpp (runtime tier)
}

namespace dop::transform {

struct Result {
  bool ok = false;     ///< a malleable form was made
  std::string source;  ///< the malleable source (the whole translation unit;
                       ///< other kernels are unchanged)
  /// When !ok: why, naming file, line and kernel, e.g. "k.cl:12: kernel 'foo'
  /// calls barrier(): the work-list loop would break it; the GPU runs
  /// unthrottled".
  std::string reason;
  explicit operator bool() const { return ok; }
};

/// Makes the malleable GPU form of `kernel` in `source` (named `file` in
/// messages; build_options as for clBuildProgram: -D/-I/-cl-std are honoured).
/// Never throws for bad or unsupported source: the reason says why.
Result make_malleable(const std::string& source, const std::string& file, const std::string& kernel,
                      const std::string& build_options = {});

/// The analysis tier's dop::FormsProvider (dop/kernel_forms.hpp): the malleable form by make_malleable and the
/// features (footprint, code features) by the features library, made from a kernel's source. Plug it into a
/// KernelFormsResolver for kernels that have no bundle.
std::shared_ptr<const FormsProvider> forms_provider();

/// The names of the two extra arguments of the malleable form.
inline constexpr const char* gpu_mod_arg = "dop_gpu_mod";
inline constexpr const char* gpu_alloc_arg = "dop_gpu_alloc";

}  // namespace dop::transform
