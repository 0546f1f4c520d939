// Crash isolation for calls into Clang (internal to features/). Clang 15 has crash bugs reachable from bad input
// (e.g. `int i; float x[i;x[i` in OpenCL mode crashes it at the end of the translation unit), so every parse runs
// under llvm::CrashRecoveryContext, the mechanism libclang uses: a crash unwinds back here (by longjmp; what the
// crashed code allocated is leaked) and becomes a diagnostic. Set DOP_NO_CRASH_RECOVERY=1 to let crashes through
// (for debugging).
#pragma once

#include <llvm/ADT/STLFunctionalExtras.h>

namespace dop::features::detail {

/// Runs fn; returns false if it crashed (signal). Signal handlers are installed only while some thread is inside.
bool run_safely(llvm::function_ref<void()> fn);

}  // namespace dop::features::detail
