// dop train / eval (analysis tier), dop predict / export (runtime tier): degree-of-parallelism models.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.hpp"
#include "dop/kernel_forms.hpp"
#include "dop/platform.hpp"
#include "dop/predictor.hpp"
#if DOP_ANALYSIS
#include "dop/dataset.hpp"  // parse_number
#include "dop/trainer.hpp"
#endif

namespace dop::cli {

namespace {

using nlohmann::json;

// The devices a platform record (dop characterize) names, as dop names an unnamed platform (devices_platform_id).
std::string record_devices(const json& record) {
  auto name = [&record](const char* role) {
    const auto d = record.find(role);
    if (d == record.end() || !d->is_object() || !d->contains("name") || !(*d)["name"].is_string()) return std::string();
    return (*d)["name"].get<std::string>();
  };
  return devices_platform_id(name("cpu"), name("gpu"));
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot be read");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f || !(f << text) || !f.flush()) throw std::runtime_error(path + ": cannot be written");
}

std::string default_namespace(const std::string& header_path) {
  std::string base = header_path.substr(header_path.find_last_of('/') + 1);
  base = base.substr(0, base.find('.'));
  std::string ns;
  for (char c : base) ns += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (ns.empty() || std::isdigit(static_cast<unsigned char>(ns[0]))) ns = "dop_model_" + ns;
  return ns;
}

// ---------------------------------------------------------------------------------------------------------------
// dop export
// ---------------------------------------------------------------------------------------------------------------

struct ExportFlags {
  std::string model, header, ns;
};

void run_export(const ExportFlags& f) {
  const pred::Model m = pred::Model::load(f.model);
  const std::string ns = f.ns.empty() ? default_namespace(f.header) : f.ns;
  write_text(f.header, pred::generate_header(m, ns));
  std::printf("wrote %s (namespace %s): %s model, %zu trees, %zu features, %zu configurations\n", f.header.c_str(),
              ns.c_str(), m.type.c_str(), m.trees.size(), m.features.size(), m.configs().size());
}

// ---------------------------------------------------------------------------------------------------------------
// dop retarget
// ---------------------------------------------------------------------------------------------------------------

struct RetargetFlags {
  std::string model, platform, out;
};

void run_retarget(const RetargetFlags& f) {
  const pred::Model m = pred::Model::load(f.model);
  const std::string text = read_text(f.platform);
  const json record = json::parse(text, nullptr, false);
  const pred::Model r =
      pred::retarget(m, text, f.platform, record.is_object() ? record_devices(record) : std::string());
  r.save(f.out);
  std::printf("%s -> %s: %s model of platform '%s' (%s) for platform '%s' (%s)\n", f.model.c_str(), f.out.c_str(),
              m.type.c_str(), m.platform.id.c_str(), m.platform.devices.c_str(), r.platform.id.c_str(),
              r.platform.devices.c_str());
  std::printf("  cpu units %d -> %d, gpu units %d -> %d\n", m.platform.cpu_units, r.platform.cpu_units,
              m.platform.gpu_units, r.platform.gpu_units);
  if (m.platform.cpu_units != r.platform.cpu_units || m.platform.gpu_units != r.platform.gpu_units)
    std::printf("note: the units differ from those the model was trained on: its trees extrapolate (docs/models.md)\n");
  if (!m.platform.figures) {
    std::printf("  no estimate features: the platform's figures do not enter its decisions\n");
    return;
  }
  const auto row = [](const std::string& name, double a, double b) {
    std::printf("  %-24s %12.4g -> %-12.4g%s\n", name.c_str(), a, b,
                a > 0 && std::fabs(b / a - 1) > 0.1 ? "  (differs by more than 10 %)" : "");
  };
  const auto& ta = m.platform.figures->cpu_triad_gbs;
  const auto& tb = r.platform.figures->cpu_triad_gbs;
  if (!ta.empty() && !tb.empty())  // at all cores
    row("cpu_triad_gbs (" + std::to_string(ta.back().cores) + "/" + std::to_string(tb.back().cores) + " cores)",
        ta.back().gbs, tb.back().gbs);
  const json before = json::parse(m.to_json())["estimate"], after = json::parse(r.to_json())["estimate"];
  for (const auto& [key, value] : after.items())
    if (value.is_number() && before.contains(key) && before[key].is_number())
      row(key, before[key].get<double>(), value.get<double>());
}

// ---------------------------------------------------------------------------------------------------------------
// dop predict
// ---------------------------------------------------------------------------------------------------------------

struct PredictFlags {
  std::string model, source, kernel, features, global, local, platform_id, build_options;
  std::vector<std::string> args;
  bool json = false, all = false;
  DeviceFlags devices;  // whose platform this is, when no id names it
};

// A repeatable NAME=VALUE option's value split at its first '=' (the name not empty), or a usage error naming the
// option and the form it takes.
std::pair<std::string, std::string> key_value(const std::string& a, const char* option, const char* form) {
  const auto eq = a.find('=');
  if (eq == std::string::npos || eq == 0) throw UsageError(std::string(option) + " '" + a + "' must be " + form);
  return {a.substr(0, eq), a.substr(eq + 1)};
}

void run_predict(const PredictFlags& f) {
  if (f.source.empty() == f.features.empty())
    throw UsageError("dop predict needs either KERNEL.cl or --features F.json");
  const auto loaded =
      load_model_for_platform(f.model, f.platform_id, cl::select_devices(cl::discover(), f.devices.cpu, f.devices.gpu));
  const pred::Predictor& p = *loaded;
  const pred::LaunchShape launch = pred::LaunchShape::parse(f.global, f.local);
  pred::ArgValues args;
  for (const auto& a : f.args) {
    const auto [name, value] = key_value(a, "--arg", "NAME=INTEGER");
    try {
      size_t used = 0;
      args[name] = std::stoll(value, &used);
      if (used != value.size()) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw UsageError("--arg '" + a + "' must be NAME=INTEGER");
    }
  }
  KernelFormsOptions fo;  // the code features from the source: the analysis tier's
  fo.provider = analysis_forms_provider();
  fo.wanted.malleable = false;
  const pred::CodeFeatures code =
      f.features.empty()
          ? KernelFormsResolver(fo).resolve({read_text(f.source), f.kernel, f.build_options, f.source}).code_features()
          : code_features_from_json(read_text(f.features), f.features, f.kernel);
  const auto& m = p.model();
  std::string origin = f.features.empty() ? f.source : f.features;
  pred::Decision d;
  std::vector<double> scores;
  try {
    d = p.decide(code, launch, args);
    if (f.all || f.json) scores = p.scores(code, launch, args);
  } catch (const pred::ModelError& e) {
    throw pred::ModelError(f.model + ": " + e.what() + " in " + origin);
  }
  const char* what = m.output == "score" ? "ranking score" : "predicted normalised performance";
  if (f.json) {
    json j = {{"model", f.model},         {"type", m.type},           {"platform_id", m.platform.id},
              {"kernel", f.kernel},       {"launch", launch.str()},   {"cpu_util", d.config.cpu},
              {"gpu_util", d.config.gpu}, {"predicted", d.predicted}, {"output", m.output}};
    json all = json::array();
    const auto cfgs = m.configs();
    for (size_t c = 0; c < cfgs.size(); ++c)
      all.push_back({{"cpu_util", cfgs[c].cpu}, {"gpu_util", cfgs[c].gpu}, {"predicted", scores[c]}});
    j["configurations"] = all;
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("%s%s %s: cpu_util %g, gpu_util %g (%s %.4g; %s model for %s)\n", f.kernel.c_str(),
              f.kernel.empty() ? "kernel" : "", launch.str().c_str(), d.config.cpu, d.config.gpu, what, d.predicted,
              m.type.c_str(), m.platform.id.c_str());
  if (f.all) {
    const auto cfgs = m.configs();
    for (size_t c = 0; c < cfgs.size(); ++c)
      std::printf("  %4g %6g  %.4f%s\n", cfgs[c].cpu, cfgs[c].gpu, scores[c], c == d.index ? "  <- best" : "");
  }
}

#if DOP_ANALYSIS
// ---------------------------------------------------------------------------------------------------------------
// dop train / dop eval
// ---------------------------------------------------------------------------------------------------------------

struct TrainFlags {
  std::string data, type = "gbt", out, header, ns, platform, platform_id, features, test_set;
  std::vector<std::string> params, set_weights;
  size_t cv = 64, sample_configs = 0, seeds = 1;
  bool no_loko = false, json = false, no_derived = false, estimate = false, verbose = false, score_partial = false;
  int gpu_units = 0, threads = 0;
  uint64_t seed = 1;
  double mixed_margin = -1;  // negative: the trainer's default for the model type
};

void print_problems(const train::Dataset& d, bool verbose) {
  const size_t show = verbose ? d.problems.size() : std::min<size_t>(d.problems.size(), 8);
  for (size_t i = 0; i < show; ++i) std::fprintf(stderr, "dop: warning: %s\n", d.problems[i].c_str());
  if (show < d.problems.size())
    std::fprintf(stderr, "dop: warning: ... and %zu more (--verbose lists all)\n", d.problems.size() - show);
}

json dataset_json(const train::Dataset& d) {
  return {{"path", d.path},
          {"platform_id", d.platform_id},
          {"rows", d.rows},
          {"workloads", d.workloads.size()},
          {"configurations", d.configs.size()},
          {"code_features", d.code_keys},
          {"invalid_rows", d.invalid_rows},
          {"excluded_workloads", d.excluded_workloads},
          {"partial_workloads", d.partial_workloads},
          {"data_columns", d.has_data},
          {"args_column", d.has_args},
          {"problems", d.problems}};
}

void print_dataset(const train::Dataset& d) {
  std::printf(
      "dataset %s: platform %s, %zu workloads x %zu configurations (%zu rows; %zu invalid rows, %zu "
      "workloads excluded, %zu partial), %zu code features%s\n",
      d.path.c_str(), d.platform_id.c_str(), d.workloads.size(), d.configs.size(), d.rows, d.invalid_rows,
      d.excluded_workloads, d.partial_workloads, d.code_keys.size(),
      !d.has_data   ? "; no data columns (all host data, bytes unknown: dop sweep upgrade adds them)"
      : !d.has_args ? "; no args column (expressions of kernel arguments unknown: dop sweep upgrade adds it)"
                    : "");
  if (d.code_keys.empty())
    std::printf(
        "note: no code features in the dataset (sweep with --features): the model sees launch features "
        "and the configuration only\n");
}

void run_train(const TrainFlags& f) {
  train::LoadOptions lo;
  lo.platform_id = f.platform_id;
  lo.features = f.features;
  const train::Dataset d = train::load_dataset(f.data, lo);
  print_problems(d, f.verbose);
  train::TrainOptions o;
  o.type = f.type;
  o.seed = f.seed;
  o.threads = f.threads;
  o.derived = !f.no_derived;
  o.sample_configs = f.sample_configs;
  o.score_partial = f.score_partial;
  o.mixed_margin = f.mixed_margin;
  for (const auto& p : f.params) {
    const auto [key, value] = key_value(p, "--param", "KEY=VALUE");
    o.params[key] = value;
  }
  for (const auto& p : f.set_weights) {
    const auto set_weight = key_value(p, "--set-weight", "SET=WEIGHT");
    const std::string& set = set_weight.first;  // a name the lambda below can capture (C++17)
    const std::string& weight = set_weight.second;
    if (std::none_of(d.workloads.begin(), d.workloads.end(), [&](const train::Workload& w) { return w.set == set; }))
      throw UsageError("--set-weight '" + p + "': no workload of set '" + set + "' in " + f.data);
    const std::optional<double> w = parse_number(weight);
    if (!w) throw UsageError("--set-weight '" + p + "': the weight is not a number");
    o.set_weights[set] = *w;
  }
  if (!f.platform.empty()) {
    const json pj = json::parse(read_text(f.platform), nullptr, false);
    if (pj.is_discarded() || !pj.is_object() || !pj.contains("platform_id"))
      throw std::runtime_error(f.platform + ": not a platform record (dop characterize)");
    if (pj["platform_id"] != d.platform_id)
      throw std::runtime_error(f.platform + ": platform '" + pj["platform_id"].get<std::string>() +
                               "', the dataset was measured on '" + d.platform_id + "'");
    if (pj.contains("gpu") && pj["gpu"].contains("compute_units")) o.gpu_units = pj["gpu"]["compute_units"].get<int>();
    o.platform_devices = record_devices(pj);
    if (f.estimate) o.estimate = pred::PlatformFigures::from_record(read_text(f.platform), f.platform);
  }
  if (f.estimate && f.platform.empty()) throw UsageError("--estimate needs the platform record (--platform P.json)");
  if (f.gpu_units > 0) o.gpu_units = f.gpu_units;
  train::effective_params(o);  // rejects unknown types and objectives before any work
  json out;
  out["dataset"] = dataset_json(d);
  out["params"] = train::effective_params(o);
  if (!f.json) print_dataset(d);
  // Each evaluation over --seeds seeds: the first seed's table (and JSON), then the spread of the model's metrics.
  const auto evaluate = [&](const char* key, const std::function<train::Evaluation(const train::TrainOptions&)>& run) {
    const train::SeedSpread s = train::over_seeds(run, o, f.seeds);
    const train::Evaluation& e = s.evaluations[0];
    out[key] = json::parse(train::evaluation_json(e, &d));
    if (f.seeds > 1) out[key]["seed_spread"] = json::parse(train::seed_spread_json(s));
    if (!f.json)
      std::printf("\n%s%s", train::format_evaluation(e).c_str(),
                  f.seeds > 1 ? train::format_seed_spread(s).c_str() : "");
  };
  if (f.cv > 0) evaluate("cv", [&](const train::TrainOptions& x) { return train::cross_validate(d, x, f.cv); });
  if (!f.no_loko) evaluate("loko", [&](const train::TrainOptions& x) { return train::leave_one_kernel_out(d, x); });
  if (!f.test_set.empty())
    evaluate("test_set", [&](const train::TrainOptions& x) { return train::evaluate_test_set(d, x, f.test_set); });
  if (!f.out.empty() || !f.header.empty()) {
    const pred::Model m = train::train(d, train::all_workloads(d), o);
    const json t = json::parse(m.training);
    json mj = {{"type", m.type}, {"trees", m.trees.size()}, {"train_seconds", t["train_seconds"]}};
    if (!f.out.empty()) {
      m.save(f.out);
      mj["path"] = f.out;
    }
    if (!f.header.empty()) {
      const std::string ns = f.ns.empty() ? default_namespace(f.header) : f.ns;
      write_text(f.header, pred::generate_header(m, ns));
      mj["header"] = f.header;
      mj["namespace"] = ns;
    }
    out["model"] = mj;
    if (!f.json)
      std::printf("\nmodel: %s on all %zu workloads in %.2f s%s%s%s%s\n", m.type.c_str(), d.workloads.size(),
                  t["train_seconds"].get<double>(), f.out.empty() ? "" : " -> ", f.out.c_str(),
                  f.header.empty() ? "" : ", header ", f.header.c_str());
  }
  if (f.json) std::cout << out.dump(2) << "\n";
}

struct EvalFlags {
  std::string model, data, features, platform_id;
  bool json = false, verbose = false;
};

void run_eval(const EvalFlags& f) {
  const pred::Model m = pred::Model::load(f.model);
  train::LoadOptions lo;
  lo.platform_id = f.platform_id.empty() ? m.platform.id : f.platform_id;
  lo.features = f.features;
  const train::Dataset d = train::load_dataset(f.data, lo);
  if (!f.json && lo.platform_id != m.platform.id)
    std::printf("note: the model was trained for platform '%s'; deciding the rows of platform '%s'\n",
                m.platform.id.c_str(), lo.platform_id.c_str());
  print_problems(d, f.verbose);
  train::Evaluation e;
  try {
    e = train::evaluate_model(m, d, !f.platform_id.empty());
  } catch (const pred::ModelError& x) {
    throw pred::ModelError(f.model + ": " + x.what());
  }
  if (f.json) {
    json out = {
        {"model", f.model}, {"dataset", dataset_json(d)}, {"evaluation", json::parse(train::evaluation_json(e, &d))}};
    std::cout << out.dump(2) << "\n";
    return;
  }
  print_dataset(d);
  std::printf("\n%s", train::format_evaluation(e).c_str());
}
#endif

}  // namespace

void add_models(CLI::App& app) {
#if DOP_ANALYSIS
  {
    auto f = std::make_shared<TrainFlags>();
    auto* cmd = app.add_subcommand("train", "Train a DoP model on a sweep dataset, with grouped cross-validation");
    cmd->add_option("data", f->data, "Sweep dataset (CSV, docs/dataset.md)")->required();
    cmd->add_option("--model", f->type, "dt | rf | gbt | rank | linear (default gbt)")
        ->check(CLI::IsMember({"dt", "rf", "gbt", "rank", "linear"}));
    cmd->add_option("--cv", f->cv, "Folds of the cross-validation grouped by workload (default 64; 0: none)");
    cmd->add_flag("--no-loko", f->no_loko, "Skip leave-one-kernel-out over the real-world kernels");
    cmd->add_option("--test-set", f->test_set,
                    "Dopia's protocol: train on every other set, decide every workload of this set (e.g. real)");
    cmd->add_option("--sample-configs", f->sample_configs,
                    "Train on N configurations per workload, as dop sweep --configs N picks them (evaluations "
                    "still decide the full grid; default 0: all; N >= 3)")
        ->check(sampled_configs_check());
    cmd->add_flag("--score-partial", f->score_partial,
                  "Cross-validation and leave-one-kernel-out also decide partial workloads, among their measured "
                  "configurations");
    cmd->add_option("--out", f->out, "Write the model trained on all workloads (dop-model/1 JSON)");
    cmd->add_option("--header", f->header, "Also write it as a self-contained C++ header");
    cmd->add_option("--namespace", f->ns, "Namespace of the header (default: from its file name)");
    cmd->add_option("--set-weight", f->set_weights,
                    "SET=WEIGHT: sample weight of the rows of a workload set (dt, rf, gbt; default 1); repeatable");
    cmd->add_option("--mixed-margin", f->mixed_margin,
                    "The decision's margin for both devices (normalised performance): a configuration of both is "
                    "picked only where its output beats every other by more (default 0.05; 0: the highest output; "
                    "rank models: 0)")
        ->check(CLI::Range(0.0, 0.99));
    cmd->add_option("--param", f->params, "KEY=VALUE: XGBoost parameter, rounds, or lambda (linear); repeatable");
    cmd->add_option("--platform", f->platform,
                    "Platform record (dop characterize): GPU compute units, and the figures of the estimate features");
    cmd->add_option("--gpu-units", f->gpu_units, "GPU compute units for the derived features (overrides --platform)");
    cmd->add_option("--platform-id", f->platform_id, "Use the rows of this platform (datasets with several)");
    cmd->add_option("--features", f->features,
                    "Join code features by kernel name (dop features --csv output) into "
                    "a dataset swept without them");
    cmd->add_flag("--no-derived", f->no_derived, "Without the derived launch features (waves, groups per unit)");
    cmd->add_flag("--estimate", f->estimate,
                  "With the analytic estimate features (est_rel, est_best_ms) from --platform's figures");
    cmd->add_option("--seed", f->seed, "Seed of folds and sampling (default 1)");
    cmd->add_option("--seeds", f->seeds,
                    "Repeat each evaluation with N seeds (--seed, --seed + 1, ...) and print the spread of the "
                    "model's metrics (default 1)")
        ->check(CLI::Range(size_t(1), size_t(1000)));
    cmd->add_option("--threads", f->threads, "XGBoost threads (default 0: 1 below 50,000 rows, else all cores)");
    cmd->add_flag("--json", f->json, "Print JSON");
    cmd->add_flag("--verbose", f->verbose, "List every invalid row and excluded workload");
    cmd->callback([f] { run_train(*f); });
  }
  {
    auto f = std::make_shared<EvalFlags>();
    auto* cmd = app.add_subcommand("eval", "Evaluate a trained model on a sweep dataset (Dopia's metrics)");
    cmd->add_option("model", f->model, "Model file (dop-model/1)")->required();
    cmd->add_option("data", f->data, "Sweep dataset (CSV)")->required();
    cmd->add_option("--features", f->features, "Join code features by kernel name (dop features --csv output)");
    cmd->add_option("--platform-id", f->platform_id,
                    "Decide the rows of this platform (default: the model's): a model on another host's data");
    cmd->add_flag("--json", f->json, "Print JSON");
    cmd->add_flag("--verbose", f->verbose, "List every invalid row and excluded workload");
    cmd->callback([f] { run_eval(*f); });
  }
#else
  for (const char* name : {"train", "eval"}) {
    auto* cmd = app.add_subcommand(name, std::string("(analysis tier) ") + (name[0] == 't' ? "Train" : "Evaluate") +
                                             " a DoP model: this dop was built without it");
    cmd->allow_extras();
    cmd->callback([name] {
      throw std::runtime_error(std::string("dop ") + name +
                               " needs the analysis tier (XGBoost, Eigen): build with "
                               "-DDOP_ANALYSIS=ON (./setup.sh)");
    });
  }
#endif
  {
    auto f = std::make_shared<PredictFlags>();
    auto* cmd = app.add_subcommand("predict", "Predict the best CPU/GPU configuration of a kernel launch");
    cmd->add_option("--model", f->model, "Model file (dop-model/1), or a folder of models (models/: this platform's)")
        ->required();
    cmd->add_option("source", f->source, "Kernel source (.cl); its code features are extracted (analysis tier)");
    cmd->add_option("--kernel", f->kernel, "Kernel name (needed when the source or features file has several)");
    cmd->add_option("--features", f->features,
                    "Code features instead of a source: `dop features --json` output "
                    "or a flat JSON object");
    cmd->add_option("--global", f->global, "Global size X[,Y[,Z]]")->required();
    cmd->add_option("--local", f->local, "Local size A[,B[,C]]")->required();
    cmd->add_option("--arg", f->args, "NAME=INTEGER: a kernel scalar argument for symbolic features; repeatable");
    cmd->add_option("--build-options", f->build_options, "OpenCL build options for the feature extraction (-D ...)");
    cmd->add_option("--platform-id", f->platform_id,
                    "This platform's id [env DOP_PLATFORM_ID]: a model trained for another is refused (without "
                    "one, a model not trained on these devices gives a warning)");
    add_device_flags(cmd, f->devices);
    cmd->add_flag("--all", f->all, "Also print the model's output for every configuration");
    cmd->add_flag("--json", f->json, "Print JSON");
    cmd->callback([f] { run_predict(*f); });
  }
  {
    auto f = std::make_shared<RetargetFlags>();
    auto* cmd = app.add_subcommand(
        "retarget", "Move a trained model to another platform: its record's figures for the estimate, the trees kept");
    cmd->add_option("model", f->model, "Model file (dop-model/1)")->required();
    cmd->add_option("--platform", f->platform, "The other platform's record (dop characterize --out)")->required();
    cmd->add_option("--out", f->out, "The retargeted model file")->required();
    cmd->callback([f] { run_retarget(*f); });
  }
  {
    auto f = std::make_shared<ExportFlags>();
    auto* cmd = app.add_subcommand("export", "Write a model as a self-contained C++ header");
    cmd->add_option("model", f->model, "Model file (dop-model/1)")->required();
    cmd->add_option("--header", f->header, "Output header (.hpp)")->required();
    cmd->add_option("--namespace", f->ns, "C++ namespace (default: from the header's file name)");
    cmd->callback([f] { run_export(*f); });
  }
}

}  // namespace dop::cli
