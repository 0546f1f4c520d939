// dop range form: the macro prelude and build options that let any kernel run over a sub-range of its split
// dimension while every work-item builtin returns what it would in the full launch. Runtime tier.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dop {

/// The macro prelude that turns any kernel into its work-group-range form: launched over a sub-range of its split
/// dimension with a global offset, every work-item builtin returns what it would in the original full launch.
std::string range_form_prelude();
/// Build options of the range form for a full launch of `global`, split along `split_dim` (and an original global
/// offset). For kernels of fewer than 3 dimensions they do not depend on the sizes: the split dimension's full size
/// travels at launch time as the offset of an extra dimension (range_form_geometry), so one build (and the
/// implementations' kernel caches) serve every problem size of a kernel. `constant_size` passes the full size as a
/// constant instead, for launches without the extra dimension (whole launches of the range form).
std::string range_form_options(const std::vector<size_t>& global, size_t split_dim,
                               const std::vector<size_t>& offset = {}, bool constant_size = false);
/// Turns a chunk's launch geometry (global, local, offset over the kernel's own dimensions) into the range form's.
void range_form_geometry(const std::vector<size_t>& full_global, size_t split_dim, std::vector<size_t>& global,
                         std::vector<size_t>& local, std::vector<size_t>& offset);

}  // namespace dop
