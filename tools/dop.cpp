// dop: degree-of-parallelism toolkit, command-line entry point.
#include <cstdio>
#include <exception>
#include <iostream>

#include "commands.hpp"
#include "dop/kernel_forms.hpp"
#include "dop/kernels.hpp"
#include "dop/synthetic.hpp"
#include "dop_version.hpp"
#if DOP_ANALYSIS
#include "dop/transform.hpp"
#endif

namespace dop::cli {
std::shared_ptr<const FormsProvider> analysis_forms_provider() {
#if DOP_ANALYSIS
  return transform::forms_provider();
#else
  return nullptr;
#endif
}

void add_device_flags(CLI::App* cmd, DeviceFlags& flags) {
  cmd->add_option("--cpu", flags.cpu,
                  "CPU device: an id from `dop devices` (pocl:0), a platform key (pocl), or none [env DOP_CPU]");
  cmd->add_option("--gpu", flags.gpu,
                  "GPU device: an id from `dop devices` (nvidia:0), a platform key (nvidia), or none [env DOP_GPU]");
}

CLI::Validator sampled_configs_check() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        size_t n = 0, used = 0;
        try {
          n = std::stoul(v, &used);
        } catch (const std::exception&) {
          return "'" + v + "' is not a count of configurations";
        }
        if (used != v.size() || v[0] == '-') return "'" + v + "' is not a count of configurations";
        if (n == 1 || n == 2)
          return "'" + v +
                 "' is fewer than the 3 configurations always measured (CPU only, GPU only, all): give 0 (the whole "
                 "grid) or at least 3";
        return std::string();
      },
      "0|N>=3");
}
}  // namespace dop::cli

int main(int argc, char** argv) {
  CLI::App app{"dop: picks how many CPU cores and how much of the GPU an OpenCL kernel should use, and runs it so"};
  app.set_version_flag("--version", std::string("dop ") + DOP_VERSION_STRING +
                                        (DOP_ANALYSIS ? " (analysis tier on)" : " (analysis tier off)"));
  app.require_subcommand(1);
  dop::kernels::register_references();    // "kernels:<name>": the specs under kernels/
  dop::synthetic::register_references();  // "synthetic:<name>": the generated workloads
  dop::cli::add_devices(app);
  dop::cli::add_demo(app);
  dop::cli::add_run(app);
  dop::cli::add_bench(app);
  dop::cli::add_characterize(app);
  dop::cli::add_sweep(app);
  dop::cli::add_report(app);
  dop::cli::add_synth(app);
#if DOP_ANALYSIS
  dop::cli::add_features(app);
  dop::cli::add_bundle(app);
#endif
  dop::cli::add_models(app);
  dop::cli::add_exec(app);
  // Bad usage (docs/cli.md): exit status 2 with the message, whatever CLI11's own code for it (105-114); --help
  // and --version succeed.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return std::string("dop: usage error: ") + e.what() + "\nRun with --help for more information.\n";
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 || dynamic_cast<const CLI::RuntimeError*>(&e) ? code : dop::cli::kUsageExit;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::fprintf(stderr, "dop: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
