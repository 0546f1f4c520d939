// Subcommands of the dop CLI. Each add_* registers one subcommand (with its --help) on the dispatcher.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

namespace dop {
class FormsProvider;  // dop/kernel_forms.hpp
}

namespace dop::cli {

/// The exit status of bad usage (docs/cli.md): CLI11's parse errors and UsageError.
constexpr int kUsageExit = 2;

/// Bad usage found after parsing (a missing or conflicting flag, a flag's value of the wrong form): exits with
/// kUsageExit and the message, as CLI11's own parse errors do. Errors in files, kernels and devices are not usage.
class UsageError : public CLI::ParseError {
 public:
  explicit UsageError(const std::string& message) : CLI::ParseError("UsageError", message, kUsageExit) {}
};

/// The analysis tier's kernel-forms provider (dop::transform::forms_provider(): malleable forms and features made
/// from the source), nullptr in a runtime-only build (dop.cpp).
std::shared_ptr<const FormsProvider> analysis_forms_provider();

/// --cpu / --gpu device selection flags shared by the subcommands that touch devices.
struct DeviceFlags {
  std::string cpu;
  std::string gpu;
};
void add_device_flags(CLI::App* cmd, DeviceFlags& flags);

/// The check of a count of sampled configurations per workload (dop sweep --configs N, dop train --sample-configs
/// N): 0 (the whole grid) or at least 3, since the three corners (CPU only, GPU only, all) are always among them.
CLI::Validator sampled_configs_check();

void add_devices(CLI::App& app);
void add_demo(CLI::App& app);
void add_run(CLI::App& app);
void add_bench(CLI::App& app);
void add_characterize(CLI::App& app);
void add_sweep(CLI::App& app);
void add_report(CLI::App& app);
void add_synth(CLI::App& app);
void add_features(CLI::App& app);  // analysis tier only (DOP_ANALYSIS)
void add_bundle(CLI::App& app);    // analysis tier only (DOP_ANALYSIS)
/// train, eval (analysis tier), predict, export: degree-of-parallelism models (cmd_models.cpp).
void add_models(CLI::App& app);
/// exec: runs an unmodified OpenCL application under libdop_intercept.so (cmd_exec.cpp, docs/intercept.md).
void add_exec(CLI::App& app);

}  // namespace dop::cli
