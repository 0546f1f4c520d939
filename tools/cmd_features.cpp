// dop features FILE.cl: static code features of each kernel (Dopia Table 1 and more), as text, --json or --csv.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "commands.hpp"
#include "dop/features.hpp"

namespace dop::cli {

namespace {

struct FeaturesFlags {
  std::string file;
  std::string kernel;
  std::string build_options;
  bool json = false;
  bool csv = false;
  bool accept_partial = false;
  unsigned time_limit_ms = 2000;
};

std::string number(double v) {
  std::ostringstream s;
  s.precision(15);
  s << v;
  return s.str();
}

void print_text(const features::KernelFeatures& k) {
  std::cout << "kernel " << k.name << " (" << k.file << ":" << k.line << ")"
            << (k.complete ? "" : "  [partial: see the diagnostics]") << "\n";
  for (const auto& [key, value] : k.values()) {
    if (key == "global_bytes_per_item") continue;
    std::printf("  %-24s %s\n", key.c_str(), number(value).c_str());
  }
  std::printf(
      "  %-24s %s\n", "global_bytes_per_item",
      k.global_bytes_per_item ? number(*k.global_bytes_per_item).c_str() : k.global_bytes_per_item_expr.c_str());
  if (!k.args.empty()) {
    std::cout << "  args:\n";
    for (const auto& a : k.args)
      std::printf("    %-16s %-28s %-8s %s\n", a.name.c_str(), a.type.c_str(), a.address_space.c_str(),
                  a.access() == "none" ? "-" : a.access().c_str());
  }
  if (!k.loop_list.empty()) {
    std::cout << "  loops:\n";
    for (size_t i = 0; i < k.loop_list.size(); ++i) {
      const auto& l = k.loop_list[i];
      std::printf("    #%zu line %-5u depth %u  %-8s trip %-9s %s%s\n", i, l.line, l.depth,
                  l.induction.empty() ? "-" : l.induction.c_str(), features::trip_kind_name(l.trip.kind),
                  l.trip.expr.c_str(), l.divergent ? "  (divergent)" : "");
    }
  }
}

void run_features(const FeaturesFlags& f) {
  std::ifstream in(f.file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + f.file + "': " + std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throw std::runtime_error("cannot read '" + f.file + "'");

  features::Options options;
  options.build_options = f.build_options;
  options.time_limit_ms = f.time_limit_ms;
  auto result = features::analyze(buf.str(), f.file, options);

  if (!f.json)
    for (const auto& d : result.diagnostics) std::cerr << d.str() << "\n";
  if (result.timed_out && !f.accept_partial)  // nothing printed: partial rows would pass for whole ones
    throw std::runtime_error("the analysis of '" + f.file + "' timed out (--time-limit " +
                             std::to_string(f.time_limit_ms) +
                             " ms): its features would be partial; --accept-partial prints them, or give more time");
  if (result.kernels.empty())
    throw std::runtime_error("no kernel in '" + f.file + "'" +
                             (result.has_errors() ? " (it has compile errors, see above)" : ""));
  if (!f.kernel.empty()) {
    std::string names;
    for (const auto& k : result.kernels) names += (names.empty() ? "" : ", ") + k.name;
    result.kernels.erase(std::remove_if(result.kernels.begin(), result.kernels.end(),
                                        [&](const features::KernelFeatures& k) { return k.name != f.kernel; }),
                         result.kernels.end());
    if (result.kernels.empty())
      throw std::runtime_error("no kernel named '" + f.kernel + "' in '" + f.file + "' (kernels: " + names + ")");
  }

  if (f.json) {
    std::cout << features::to_json(result, f.file) << "\n";
  } else if (f.csv) {
    std::cout << features::csv_header() << "\n";
    for (const auto& k : result.kernels) std::cout << features::to_csv_row(k) << "\n";
  } else {
    for (size_t i = 0; i < result.kernels.size(); ++i) {
      if (i) std::cout << "\n";
      print_text(result.kernels[i]);
    }
  }
}

}  // namespace

void add_features(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("features",
                         "Static code features of the kernels in an OpenCL C file (Dopia Table 1, then the rest; "
                         "see docs/features.md)");
  auto flags = std::make_shared<FeaturesFlags>();
  cmd->add_option("FILE", flags->file, "OpenCL C source file")->required();
  cmd->add_option("--kernel", flags->kernel, "Only this kernel");
  cmd->add_option("--options", flags->build_options, "OpenCL build options (-D, -U, -I, -cl-std=...)");
  auto* json = cmd->add_flag("--json", flags->json, "One JSON document: kernels with features, args, loops");
  auto* csv = cmd->add_flag("--csv", flags->csv, "CSV: a header and one row per kernel");
  json->excludes(csv);
  cmd->add_option("--time-limit", flags->time_limit_ms, "Time limit per kernel in milliseconds (0: none)")
      ->capture_default_str();
  cmd->add_flag("--accept-partial", flags->accept_partial,
                "Print the features when the time limit cut the analysis short (partial, and marked so); without "
                "it that is an error");
  cmd->callback([flags] { run_features(*flags); });
}

}  // namespace dop::cli
