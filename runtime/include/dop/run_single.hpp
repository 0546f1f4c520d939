// A plain run of a workload spec on one OpenCL device (no co-execution): what validations compare dop's runs with.
// Runtime tier (dop_runtime: OpenCL).
#pragma once

#include <string>
#include <vector>

#include "dop/cl.hpp"
#include "dop/footprint.hpp"
#include "dop/spec.hpp"

namespace dop {

/// Runs a spec once on one device (plain launch, no co-execution), returning the arguments after the run (outputs
/// read back) and the kernel time. Throws cl::Error / cl::BuildError / SpecError with names; the launch-time checks
/// of dop/bounds.hpp first (LaunchError), the buffers against `footprint` where it bounds them.
struct SingleRun {
  std::vector<ArgData> args;
  double kernel_ms = 0;
};
SingleRun run_single(const Spec& spec, const std::string& source, cl_device_id device, const Footprint& footprint = {});

}  // namespace dop
