// Embeds dop's predictor in a C++ program: a kernel's code features from a `dop features --csv` table, a launch
// shape and the kernel's scalar arguments go in; the configuration the model picks, and the model's output for
// every configuration, come out.
//
//   predict_cpp MODEL.json FEATURES.csv FILE.cl:KERNEL GLOBAL LOCAL [NAME=VALUE...]
//   predict_cpp models/h100-xeon16/gbt.json models/h100-xeon16/features.csv gemm.cl:gemm 1024,1024 16,16 nk=1024
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "dop/dataset.hpp"
#include "dop/predictor.hpp"

namespace {

// The kernel's row of the table as the predictor's input: numbers as values, *_expr columns as expressions.
dop::pred::CodeFeatures code_features(const dop::CodeFeatureTable& table, const std::string& key) {
  const auto* entry = table.find(key);
  if (!entry) throw std::runtime_error(table.path + ": no kernel " + key);
  dop::pred::CodeFeatures code;
  const std::string suffix = "_expr";
  for (size_t i = 0; i < table.names.size(); ++i) {
    const std::string& name = table.names[i];
    const std::string& text = entry->values[i];
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      if (!text.empty()) code.exprs[name] = text;
    } else if (name != "diagnostics") {
      code.values[name] = text.empty() ? std::nan("") : std::stod(text);
    }
  }
  return code;
}

dop::pred::ArgValues arg_values(int argc, char** argv, int first) {
  dop::pred::ArgValues args;
  for (int i = first; i < argc; ++i) {
    const std::string a = argv[i];
    const size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0) throw std::invalid_argument("argument '" + a + "': not NAME=VALUE");
    args[a.substr(0, eq)] = std::stoll(a.substr(eq + 1));
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s MODEL.json FEATURES.csv FILE.cl:KERNEL GLOBAL LOCAL [NAME=VALUE...]\n", argv[0]);
    return 2;
  }
  const auto predictor = dop::pred::Predictor::load(argv[1]);
  const auto table = dop::read_code_feature_table(argv[2]);
  const auto code = code_features(table, argv[3]);
  const auto launch = dop::pred::LaunchShape::parse(argv[4], argv[5]);
  const auto args = arg_values(argc, argv, 6);

  const auto decision = predictor.decide(argv[3], code, launch, args);
  std::printf("%s %s on %s: cpu_util %g gpu_util %g (predicted %.4f)\n", argv[3], launch.str().c_str(),
              predictor.model().platform.id.c_str(), decision.config.cpu, decision.config.gpu, decision.predicted);

  // The model's output for every configuration, best first.
  const auto scores = predictor.scores(code, launch, args);
  const auto configs = predictor.model().configs();
  std::vector<size_t> order(configs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  std::printf("best five of %zu configurations:\n", configs.size());
  for (size_t i = 0; i < std::min<size_t>(5, order.size()); ++i)
    std::printf("  %-10s %.4f\n", dop::to_string(configs[order[i]]).c_str(), scores[order[i]]);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "predict_cpp: %s\n", e.what());
  return 1;
}
