// dop synth: the synthetic workload family (Dopia Table 2/4): list the names, emit kernels and specs.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "commands.hpp"
#include "dop/spec.hpp"
#include "dop/synthetic.hpp"

namespace dop::cli {

namespace {

namespace fs = std::filesystem;
namespace syn = dop::synthetic;

struct SynthOptions {
  std::string set = "paper";
  std::vector<std::string> names;
  bool all = false;
  std::string out;
  double scale = 1.0;
};

std::vector<syn::Params> workload_set(const std::string& set) {
  if (set == "span") return syn::span_set();
  return set == "extended" ? syn::extended_set() : syn::paper_set();
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (f) f << text;
  if (!f) throw std::runtime_error("cannot write '" + path.string() + "'");
}

void run_list(const SynthOptions& o) {
  std::string out;
  for (const auto& p : workload_set(o.set)) out += syn::name(p) + "\n";
  std::fputs(out.c_str(), stdout);
}

void run_emit(const SynthOptions& o) {
  if (o.all == !o.names.empty()) throw UsageError("synth emit: give workload names or --all (not both)");
  // Everything is generated before anything is written: a bad name or scale leaves no partial output.
  std::vector<syn::Workload> workloads;
  if (o.all) {
    for (const auto& p : workload_set(o.set)) workloads.push_back(syn::generate(p, o.scale));
  } else {
    for (const auto& n : o.names) workloads.push_back(syn::generate(syn::parse_name(n), o.scale));
  }
  const fs::path dir(o.out);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw std::runtime_error("cannot create output folder '" + o.out + "'" + (ec ? ": " + ec.message() : ""));
  std::set<std::string> programs;
  for (const auto& w : workloads) {
    if (programs.insert(w.program).second) write_file(dir / (w.program + ".cl"), w.source);
    write_file(dir / (w.spec.name + ".json"), spec_to_json(w.spec) + "\n");
  }
  std::printf("wrote %zu workload specs and %zu kernels to %s (scale %g)\n", workloads.size(), programs.size(),
              o.out.c_str(), o.scale);
}

}  // namespace

void add_synth(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("synth", "The synthetic workloads (Dopia's αmatβdγcδTεRθC, the span families): list, emit");
  cmd->require_subcommand(1);
  auto o = std::make_shared<SynthOptions>();
  const auto sets = CLI::IsMember({"paper", "extended", "span"});

  auto* list = cmd->add_subcommand("list", "Print the workload names of a set, one per line");
  list->add_option(
          "--set", o->set,
          "paper (Table 4, 1,224 workloads), extended (paper + extensions) or span (320: products, matrix-vector, "
          "stencils, triad)")
      ->check(sets)
      ->capture_default_str();
  list->callback([o] { run_list(*o); });

  auto* emit = cmd->add_subcommand("emit", "Write kernels (<program>.cl, shared) and specs (<name>.json) to a folder");
  emit->add_option("names", o->names, "Workload names (see `dop synth list`)");
  emit->add_flag("--all", o->all, "Every workload of --set");
  emit->add_option("--set", o->set, "The set for --all: paper, extended or span")->check(sets)->capture_default_str();
  emit->add_option("--out", o->out, "Output folder (created if missing)")->required();
  emit->add_option(
          "--scale", o->scale,
          "Size scale: paper/extended rung r moves about 256 MiB * 2^(r-1) * scale (1: 2-20 ms on a 16-core CPU); "
          "span: the work is scale times the calibrated size")
      ->capture_default_str();  // checked by synthetic::extents(), which names the problem
  emit->callback([o] { run_emit(*o); });
}

}  // namespace dop::cli
