// The interposer's kernel forms (docs/intercept.md): the resolver over DOP_BUNDLES and the on-disk forms cache
// (bundles made on the fly by the analysis-tier `dop bundle` in a child process, DOP_BUNDLER), and the recording
// of the programs an application builds (DOP_RECORD). Kept out of intercept.cpp: the launch path calls these.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dop/kernel_forms.hpp"

namespace dop_intercept {

using LogFn = std::function<void(const std::string&)>;

/// The resolver of the interposer's kernels: the bundles of DOP_BUNDLES, then the forms cache (cache_root()/forms,
/// DOP_CACHE_DIR) whose missing bundles DOP_BUNDLER (the analysis-tier dop binary; `dop exec` sets it) makes, within
/// DOP_BUNDLER_TIMEOUT seconds (default 120). Throws std::runtime_error naming a bad DOP_BUNDLES or
/// DOP_BUNDLER_TIMEOUT.
std::unique_ptr<dop::KernelFormsResolver> make_forms_resolver(LogFn log);

/// The forms of a captured kernel; logs, once per kernel, why it has none (the near-miss bundle and what differs,
/// or how to get bundles).
std::shared_ptr<const dop::KernelForms> resolve_forms(const dop::KernelFormsResolver& forms, const dop::KernelSource& k,
                                                      const LogFn& log);

/// Resolves, ahead of their launches, the forms of a built program's kernels that a bundle of DOP_BUNDLES names (a
/// match, or why it does not match) or that the forms cache holds (an earlier process made them: one JSON file read
/// now, about 0.5 ms, rather than at the kernel's first launch, inside the application's timed work), so that a
/// kernel's first launch finds them memoised; the other kernels are left to their launch (the forms cache's bundler
/// runs only for kernels that are launched). Returns the forms it resolved, by kernel name.
std::vector<std::pair<std::string, std::shared_ptr<const dop::KernelForms>>> resolve_program_forms(
    const dop::KernelFormsResolver& forms, cl_program program, const std::string& source, const std::string& options,
    const LogFn& log);

/// Under DOP_RECORD=DIR: records a program the application built from source (its source, build options and
/// kernel names; once per distinct program, dop/kernel_record.hpp). Never throws: a failure is logged.
void record_build(cl_program program, const std::string& source, const std::string& options, const LogFn& log);

}  // namespace dop_intercept
