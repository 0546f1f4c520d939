// A trained model moved to another platform (dop retarget): the platform's figures from its record, the trees kept.
#include <cmath>
#include <nlohmann/json.hpp>

#include "dop/predictor.hpp"

namespace dop::pred {

namespace {

using nlohmann::json;

[[noreturn]] void bad_record(const std::string& origin, const std::string& what) {
  throw ModelError(origin + ": " + what);
}

// A record's positive integer at DEVICE.compute_units, or 0 where the record has no such device.
int compute_units(const json& record, const char* device, const std::string& origin) {
  const auto d = record.find(device);
  if (d == record.end()) return 0;
  const std::string field = std::string(device) + ".compute_units";
  if (!d->is_object() || !d->contains("compute_units")) bad_record(origin, field + ": missing");
  const json& u = (*d)["compute_units"];
  if (!u.is_number_integer() || u.get<int64_t>() < 1 || u.get<int64_t>() > 1000000)
    bad_record(origin, field + ": not a positive count");
  return int(u.get<int64_t>());
}

// The record's grid (if it has one) must be the model's: the model decides the configurations of its own grid.
void check_grid(const Model& m, const json& record, const std::string& origin) {
  const auto g = record.find("grid");
  if (g == record.end()) return;
  auto levels = [&](const char* name) {
    if (!g->is_object() || !g->contains(name) || !(*g)[name].is_array())
      bad_record(origin, std::string("grid.") + name + ": missing");
    std::vector<double> v;
    for (const json& x : (*g)[name]) {
      if (!x.is_number()) bad_record(origin, std::string("grid.") + name + ": not a list of numbers");
      v.push_back(x.get<double>());
    }
    return v;
  };
  auto same = [](const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (std::fabs(a[i] - b[i]) > 1e-9) return false;
    return true;
  };
  if (!same(levels("cpu_levels"), m.cpu_levels) || !same(levels("gpu_levels"), m.gpu_levels))
    bad_record(origin, "the platform's grid is not the model's (" + std::to_string(m.cpu_levels.size()) + " CPU x " +
                           std::to_string(m.gpu_levels.size()) +
                           " GPU levels): a model decides only its own grid; train one on this platform's sweep");
}

}  // namespace

Model retarget(const Model& m, const std::string& record_text, const std::string& origin, const std::string& devices) {
  const json record = json::parse(record_text, nullptr, false);
  if (record.is_discarded() || !record.is_object()) bad_record(origin, "not a JSON object (a platform record)");
  const auto id = record.find("platform_id");
  if (id == record.end() || !id->is_string() || id->get<std::string>().empty())
    bad_record(origin, "platform_id: missing (a platform record of dop characterize)");
  check_grid(m, record, origin);
  Model r = m;
  r.platform.id = id->get<std::string>();
  r.platform.devices = devices;
  if (const int cpu = compute_units(record, "cpu", origin)) r.platform.cpu_units = cpu;
  if (const int gpu = compute_units(record, "gpu", origin)) r.platform.gpu_units = gpu;
  if (m.platform.figures) r.platform.figures = PlatformFigures::from_record(record_text, origin);
  json training = json::parse(m.training, nullptr, false);
  if (training.is_discarded() || !training.is_object()) training = json::object();
  json from = {{"platform_id", m.platform.id},
               {"devices", m.platform.devices},
               {"cpu_units", m.platform.cpu_units},
               {"gpu_units", m.platform.gpu_units},
               {"record", origin}};
  if (training.contains("retargeted") && training["retargeted"].is_array())
    training["retargeted"].push_back(from);
  else
    training["retargeted"] = json::array({from});
  r.training = training.dump();
  r.validate(origin);
  return r;
}

}  // namespace dop::pred
