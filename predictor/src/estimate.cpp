// The analytic time estimate (estimate.hpp): device costs, their combination, its inputs from code features, and
// the platform figures (from a platform record, to and from the model file).
#include "estimate.hpp"

#include <algorithm>

#include "internal.hpp"

namespace dop::pred {

namespace {

constexpr double kGiga = 1e9;
// Bytes of one memory operation (4-byte elements), to tell how often the loops run (EstimateInputs for traffic).
constexpr double kBytesPerMemOp = 4;
// A math builtin (arith_special: sqrt, exp, sin, ...) costs this many arithmetic operations.
constexpr double kSpecialOpCost = 8;

}  // namespace

double cpu_bandwidth_gbs(const PlatformFigures& f, double cores) {
  if (!(cores > 0) || f.cpu_triad_gbs.empty()) return 0;
  double best = 0, prev_cores = 0, prev_gbs = 0;
  for (const auto& b : f.cpu_triad_gbs) {
    const double gbs = std::max(best, b.gbs);  // never less with more cores
    if (cores <= b.cores) {
      if (prev_cores == 0) return gbs * cores / b.cores;  // below the first count: proportional to cores
      return prev_gbs + (gbs - prev_gbs) * (cores - prev_cores) / (b.cores - prev_cores);
    }
    best = gbs;
    prev_cores = b.cores;
    prev_gbs = gbs;
  }
  return best;
}

namespace {

// The CPU's best triad bandwidth, over every core count measured.
double best_triad_gbs(const PlatformFigures& f) {
  double top = 0;
  for (const auto& b : f.cpu_triad_gbs) top = std::max(top, b.gbs);
  return top;
}

// The CPU's gather bandwidth at the cores whose triad bandwidth is `bandwidth_gbs`: measured at all cores, it gets
// the share of its figure the triad gets (0 where not measured).
double cpu_gather_at(const PlatformFigures& f, double bandwidth_gbs) {
  if (!(f.cpu_gather_gbs > 0)) return 0;
  const double top = best_triad_gbs(f);
  return top > 0 ? f.cpu_gather_gbs * bandwidth_gbs / top : 0;
}

// The work-item's traffic of a launch, split by access kind: the random share moves at the gather bandwidth where
// the level has one.
void set_traffic(DeviceDemand& d, const EstimateInputs& in) {
  d.traffic = in.traffic_per_item();
  d.random = in.random_share > 0;
  d.stream_traffic = d.traffic * (1 - in.random_share);
  d.random_traffic = d.traffic * in.random_share;
}

}  // namespace

DeviceLevel cpu_level(const PlatformFigures& f, double cores) {
  DeviceLevel l;
  if (!(cores > 0)) return l;
  const double bandwidth_gbs = cpu_bandwidth_gbs(f, cores);
  l.used = true;
  l.stream_bytes_s = bandwidth_gbs * kGiga;
  l.gather_bytes_s = cpu_gather_at(f, bandwidth_gbs) * kGiga;
  l.ops_scale = cores * kGiga;
  l.launch_s = f.cpu_launch_us * 1e-6;
  return l;
}

DeviceLevel gpu_level(const PlatformFigures& f, double gpu) {
  DeviceLevel l;
  if (!(gpu > 0)) return l;
  // A fraction g of the compute units computes at g of the peak and draws about sqrt(g) of the bandwidth (the
  // malleable triad on the H100: 0.30 of the full bandwidth at 1/8, 0.50 at 2/8, 0.74 at 4/8, 0.86 at 7/8).
  const double share = gpu_bandwidth_share(gpu);
  l.used = true;
  l.stream_bytes_s = f.gpu_triad_gbs * share * kGiga;
  l.gather_bytes_s = f.gpu_gather_gbs * share * kGiga;
  l.ops_scale = gpu * kGiga;
  l.launch_s = f.gpu_launch_us * 1e-6;
  return l;
}

DeviceDemand cpu_demand(const PlatformFigures& f, const EstimateInputs& in) {
  DeviceDemand d;
  set_traffic(d, in);
  d.host_bytes = d.traffic;
  d.op_time = in.float_ops_per_item / f.cpu_gops_float + in.int_ops_per_item / f.cpu_gops_int;
  return d;
}

DeviceDemand gpu_demand(const PlatformFigures& f, const EstimateInputs& in) {
  DeviceDemand d;
  set_traffic(d, in);
  d.op_time = in.float_ops_per_item / f.gpu_gops_float + in.int_ops_per_item / f.gpu_gops_int;
  if (!in.data_on_gpu) {
    // Its share of the inputs comes in and its share of the outputs goes back over the copy link. Without the
    // buffer sizes, the kernel's traffic stands for both (as input: the copy bandwidths are about equal).
    const double in_per_item = std::isnan(in.in_bytes) ? d.traffic : in.in_bytes / in.items;
    const double out_per_item = std::isnan(in.out_bytes) ? 0 : in.out_bytes / in.items;
    d.copies = true;
    d.copy_s = in_per_item / (f.h2d_gbs * kGiga) + out_per_item / (f.d2h_gbs * kGiga);
    d.copy_latency_s = (f.h2d_latency_us + f.d2h_latency_us) * 1e-6;
    // Staged data crosses host memory staging_passes times; page-locked inputs once (the DMA reading them in place).
    // Outputs are staged either way (a merge compares with the inputs; docs/architecture.md).
    d.host_bytes = (in.data_pinned ? std::min(1.0, f.staging_passes) : f.staging_passes) * in_per_item +
                   f.staging_passes * out_per_item;
  }
  return d;
}

DeviceCost cpu_cost(const PlatformFigures& f, const EstimateInputs& in, double cores) {
  return device_cost(cpu_level(f, cores), cpu_demand(f, in));
}

DeviceCost gpu_cost(const PlatformFigures& f, const EstimateInputs& in, double gpu) {
  return device_cost(gpu_level(f, gpu), gpu_demand(f, in));
}

double host_bandwidth_gbs(const PlatformFigures& f) { return f.staging_passes > 0 ? best_triad_gbs(f) : 0; }

double estimate_ms(const PlatformFigures& f, const EstimateInputs& in, const Config& config, int cpu_units) {
  if (!in.known()) return std::nan("");
  return combined_ms(cpu_cost(f, in, cpu_cores_of(config.cpu, cpu_units)), gpu_cost(f, in, config.gpu), in.items,
                     host_bandwidth_gbs(f));
}

double best_estimate_ms(const PlatformFigures& f, const EstimateInputs& in, int cpu_units) {
  if (!in.known()) return std::nan("");
  const DeviceCost cpu = cpu_cost(f, in, cpu_cores_of(1.0, cpu_units)), gpu = gpu_cost(f, in, 1.0);
  const double host = host_bandwidth_gbs(f);
  return std::min({combined_ms(cpu, DeviceCost{}, in.items, host), combined_ms(DeviceCost{}, gpu, in.items, host),
                   combined_ms(cpu, gpu, in.items, host)});
}

// ---------------------------------------------------------------------------------------------------------------
// Inputs from code features
// ---------------------------------------------------------------------------------------------------------------

EstimateKeys estimate_keys(const std::vector<Feature>& features) {
  EstimateKeys k;
  static const char* mem[4] = {"mem_constant", "mem_continuous", "mem_stride", "mem_random"};
  int ci = 0;
  for (const Feature& f : features) {
    if (f.source != Source::code) continue;
    if (f.key == "global_bytes_per_item") k.bytes_per_item = ci;
    if (f.key == "arith_float") k.arith_float = ci;
    if (f.key == "arith_int") k.arith_int = ci;
    if (f.key == "arith_special") k.arith_special = ci;
    for (int m = 0; m < 4; ++m)
      if (f.key == mem[m]) k.mem_ops[m] = ci;
    ++ci;
  }
  return k;
}

EstimateInputs estimate_inputs(const EstimateKeys& k, const double* code, const LaunchShape& launch) {
  auto value = [&](int i) { return i < 0 || std::isnan(code[i]) ? 0.0 : code[i]; };
  EstimateInputs in;
  in.items = double(launch.global_size());
  // The launch's data (LaunchShape: 0 bytes = unknown): what the copies move, and whether they are needed at all.
  if (launch.in_bytes > 0) in.in_bytes = double(launch.in_bytes);
  if (launch.out_bytes > 0) in.out_bytes = double(launch.out_bytes);
  in.data_on_gpu = launch.data_on_gpu;
  in.data_pinned = launch.data_pinned;
  double mem_ops = 0;
  bool have_mem_ops = false;
  for (int i : k.mem_ops) {
    have_mem_ops |= i >= 0 && !std::isnan(code[i]);
    mem_ops += value(i);
  }
  if (mem_ops > 0) in.random_share = value(k.mem_ops[3]) / mem_ops;
  const double bytes = k.bytes_per_item < 0 ? std::nan("") : code[k.bytes_per_item];
  // Operations are counted once per source occurrence; the loops multiply them about as they multiply the bytes.
  double loop_factor = 1;
  if (!std::isnan(bytes)) {
    in.bytes_per_item = bytes;
    if (mem_ops > 0) loop_factor = std::max(1.0, bytes / (kBytesPerMemOp * mem_ops));
  }
  if (have_mem_ops) in.mem_ops_per_item = mem_ops;
  in.float_ops_per_item = (value(k.arith_float) + (kSpecialOpCost - 1) * value(k.arith_special)) * loop_factor;
  in.int_ops_per_item = value(k.arith_int) * loop_factor;
  return in;
}

// ---------------------------------------------------------------------------------------------------------------
// Figures: the platform record, the model file
// ---------------------------------------------------------------------------------------------------------------

namespace {

// One scalar figure: its name in the model file, where the platform record has it, its default (the H100 host's
// record, models/h100-xeon16/platform.json, rounded; peak rates: see docs/models.md).
struct Scalar {
  const char* name;
  double PlatformFigures::*field;
  const char* record_device;
  const char* record_path;  // within the device object; "a.b" for a nested object
  double fallback;
  bool optional = false;    // 0 allowed (not measured), and absent (0) from model files written before it existed
  bool of_runtime = false;  // a figure of dop's runtime, not of the platform: not in the record, not a default
};

const Scalar kScalars[] = {
    {"cpu_launch_us", &PlatformFigures::cpu_launch_us, "cpu", "launch_latency_us", 60},
    {"cpu_gops_float_per_core", &PlatformFigures::cpu_gops_float, "cpu", "peak_gops_float_per_core", 32},
    {"cpu_gops_int_per_core", &PlatformFigures::cpu_gops_int, "cpu", "peak_gops_int_per_core", 16},
    {"gpu_triad_gbs", &PlatformFigures::gpu_triad_gbs, "gpu", "triad_gbs", 1250},
    {"gpu_launch_us", &PlatformFigures::gpu_launch_us, "gpu", "launch_latency_us", 20},
    {"gpu_gops_float", &PlatformFigures::gpu_gops_float, "gpu", "peak_gops_float", 50000},
    {"gpu_gops_int", &PlatformFigures::gpu_gops_int, "gpu", "peak_gops_int", 25000},
    {"h2d_gbs", &PlatformFigures::h2d_gbs, "gpu", "copy_pinned.h2d_gbs", 55},
    {"d2h_gbs", &PlatformFigures::d2h_gbs, "gpu", "copy_pinned.d2h_gbs", 55},
    {"h2d_latency_us", &PlatformFigures::h2d_latency_us, "gpu", "copy_pinned.h2d_latency_us", 16},
    {"d2h_latency_us", &PlatformFigures::d2h_latency_us, "gpu", "copy_pinned.d2h_latency_us", 16},
    {"cpu_gather_gbs", &PlatformFigures::cpu_gather_gbs, "cpu", "gather_gbs", 0, true},
    {"gpu_gather_gbs", &PlatformFigures::gpu_gather_gbs, "gpu", "gather_gbs", 0, true},
    // The runtime stages host data through pinned memory: a copy reads and writes host memory, the DMA reads it
    // (measured on the H100 host: 26-35 GB/s staged against 95 GB/s of host triad; docs/models.md).
    {"staging_passes", &PlatformFigures::staging_passes, "", "", 3, true, true},
};
const char* kTriadName = "cpu_triad_gbs_by_cores";
const std::vector<PlatformFigures::CoreBandwidth> kTriadDefault = {{1, 12}, {16, 86}};

bool is_latency(const char* name) {
  return std::string(name).find("latency") != std::string::npos ||
         std::string(name).find("launch") != std::string::npos;
}

[[noreturn]] void bad(const std::string& where, const std::string& field, const std::string& problem) {
  throw ModelError(where + ": " + field + ": " + problem);
}

double number_at(const nlohmann::json& j, const std::string& where, const std::string& field) {
  if (!j.is_number()) bad(where, field, "not a number");
  return j.get<double>();
}

std::vector<PlatformFigures::CoreBandwidth> triad_table(const nlohmann::json& j, const std::string& where,
                                                        const std::string& field, const char* gbs_key) {
  if (!j.is_array()) bad(where, field, "not an array");
  std::vector<PlatformFigures::CoreBandwidth> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string e = field + "[" + std::to_string(i) + "]";
    if (!j[i].is_object() || !j[i].contains("cores") || !j[i].contains(gbs_key))
      bad(where, e, std::string("not an object with 'cores' and '") + gbs_key + "'");
    if (!j[i]["cores"].is_number_integer()) bad(where, e + ".cores", "not an integer");
    out.push_back({j[i]["cores"].get<int>(), number_at(j[i][gbs_key], where, e + "." + gbs_key)});
  }
  return out;
}

}  // namespace

void validate_figures(const PlatformFigures& f, const std::string& where, const std::string& prefix) {
  if (f.cpu_triad_gbs.empty()) bad(where, prefix + kTriadName, "empty");
  for (size_t i = 0; i < f.cpu_triad_gbs.size(); ++i) {
    const std::string e = prefix + kTriadName + "[" + std::to_string(i) + "]";
    if (f.cpu_triad_gbs[i].cores < 1 || (i && f.cpu_triad_gbs[i].cores <= f.cpu_triad_gbs[i - 1].cores))
      bad(where, e + ".cores", "core counts must be >= 1 and increase");
    if (!(f.cpu_triad_gbs[i].gbs > 0) || !std::isfinite(f.cpu_triad_gbs[i].gbs))
      bad(where, e + ".gbs", "not a finite positive bandwidth");
  }
  for (const Scalar& s : kScalars) {
    const double v = f.*s.field;
    const bool may_be_zero = is_latency(s.name) || s.optional;
    if (!std::isfinite(v) || v < 0 || (v == 0 && !may_be_zero))
      bad(where, prefix + s.name, "not a finite " + std::string(may_be_zero ? "non-negative" : "positive") + " number");
  }
}

PlatformFigures PlatformFigures::from_record(const std::string& text, const std::string& origin) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw ModelError(origin + ": not a JSON object (a platform record)");
  PlatformFigures f;
  const nlohmann::json* cpu = j.contains("cpu") && j["cpu"].is_object() ? &j["cpu"] : nullptr;
  if (cpu && cpu->contains("triad_gbs_by_cores")) {
    f.cpu_triad_gbs = triad_table((*cpu)["triad_gbs_by_cores"], origin, "cpu.triad_gbs_by_cores", "triad_gbs");
  } else {
    f.cpu_triad_gbs = kTriadDefault;
    f.defaults.push_back(kTriadName);
  }
  for (const Scalar& s : kScalars) {
    if (s.of_runtime) {
      f.*s.field = s.fallback;
      continue;
    }
    const nlohmann::json* at = j.contains(s.record_device) ? &j[s.record_device] : nullptr;
    std::string path = s.record_path, field = std::string(s.record_device) + "." + s.record_path;
    for (size_t dot; at && (dot = path.find('.')) != std::string::npos; path = path.substr(dot + 1))
      at = at->is_object() && at->contains(path.substr(0, dot)) ? &(*at)[path.substr(0, dot)] : nullptr;
    if (at && at->is_object() && at->contains(path)) {
      f.*s.field = number_at((*at)[path], origin, field);
    } else {
      f.*s.field = s.fallback;
      f.defaults.push_back(s.name);
    }
  }
  validate_figures(f, origin, "");
  return f;
}

nlohmann::ordered_json figures_to_json(const PlatformFigures& f) {
  nlohmann::ordered_json j, table = nlohmann::ordered_json::array();
  for (const auto& b : f.cpu_triad_gbs) table.push_back({{"cores", b.cores}, {"gbs", b.gbs}});
  j[kTriadName] = table;
  for (const Scalar& s : kScalars) j[s.name] = f.*s.field;
  j["defaults"] = f.defaults;
  return j;
}

PlatformFigures figures_from_json(const nlohmann::json& j, const std::string& path, const std::string& origin) {
  if (!j.is_object()) bad(origin, path, "not an object");
  const std::string prefix = path + ".";
  auto at = [&](const char* name) -> const nlohmann::json& {
    if (!j.contains(name)) bad(origin, prefix + name, "missing");
    return j[name];
  };
  PlatformFigures f;
  f.cpu_triad_gbs = triad_table(at(kTriadName), origin, prefix + kTriadName, "gbs");
  for (const Scalar& s : kScalars)
    f.*s.field = s.optional && !j.contains(s.name) ? 0.0 : number_at(at(s.name), origin, prefix + s.name);
  const auto& d = at("defaults");
  if (!d.is_array()) bad(origin, prefix + "defaults", "not an array");
  for (size_t i = 0; i < d.size(); ++i) {
    if (!d[i].is_string()) bad(origin, prefix + "defaults[" + std::to_string(i) + "]", "not a string");
    f.defaults.push_back(d[i].get<std::string>());
  }
  validate_figures(f, origin, prefix);
  return f;
}

}  // namespace dop::pred
