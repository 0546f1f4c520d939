// The sweep dataset's columns (docs/dataset.md): their names and order, how numbers and row identities are written,
// and where a header read back holds them.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "dop/dataset.hpp"

namespace dop {

namespace {

// Function-local: the lists are safe to use from other translation units' static initialisers.
const std::vector<std::string>& head_columns() {
  static const std::vector<std::string> c = {"platform_id", "workload", "set", "kernel"};
  return c;
}
const std::vector<std::string>& tail_columns() {
  static const std::vector<std::string> c = {
      "cpu_util",    "gpu_util", "cpu_cores",       "gpu_alloc",       "gpu_throttled", "time_ms_median", "time_ms_min",
      "time_ms_max", "repeats",  "cpu_work_groups", "gpu_work_groups", "cpu_chunks",    "gpu_chunks",     "h2d_ms",
      "d2h_ms",      "merge_ms", "wall_ms",         "valid",           "error"};
  return c;
}

const char* const kNotDataset = "a dop sweep dataset (docs/dataset.md)";

}  // namespace

std::vector<std::string> dataset_columns(const std::vector<std::string>& feature_names) {
  std::vector<std::string> c = head_columns();
  c.insert(c.end(), feature_names.begin(), feature_names.end());
  c.insert(c.end(), dataset_launch_columns().begin(), dataset_launch_columns().end());
  c.insert(c.end(), dataset_data_columns().begin(), dataset_data_columns().end());
  c.insert(c.end(), tail_columns().begin(), tail_columns().end());
  return c;
}

const std::vector<std::string>& dataset_data_columns() {
  static const std::vector<std::string> c = {"data_on", "in_bytes", "out_bytes", "args"};
  return c;
}

std::string dataset_args_text(const std::map<std::string, int64_t>& args) {
  std::string s;
  for (const auto& [name, value] : args) s += (s.empty() ? "" : ";") + name + "=" + std::to_string(value);
  return s;
}

std::map<std::string, int64_t> parse_dataset_args(const std::string& text) {
  std::map<std::string, int64_t> out;
  if (text.empty()) return out;
  size_t at = 0;
  while (true) {
    const size_t end = std::min(text.find(';', at), text.size());
    const std::string item = text.substr(at, end - at);
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    const bool name_ok = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                         std::all_of(name.begin(), name.end(),
                                     [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; });
    errno = 0;
    char* stop = nullptr;
    const long long v = value.empty() ? 0 : std::strtoll(value.c_str(), &stop, 10);
    if (eq == std::string::npos || !name_ok || value.empty() || errno == ERANGE || *stop != '\0' ||
        std::isspace(static_cast<unsigned char>(value[0])))
      throw std::invalid_argument("'" + item + "' is not NAME=INTEGER (args are written K=256;N=1024)");
    if (!out.emplace(name, int64_t(v)).second) throw std::invalid_argument("argument '" + name + "' given twice");
    if (end == text.size()) break;
    at = end + 1;
  }
  return out;
}

const char* data_on_name(bool on_gpu) { return on_gpu ? "gpu" : "host"; }

const std::vector<std::string>& dataset_launch_columns() {
  static const std::vector<std::string> c = {"work_dim", "global_size", "local_size", "num_groups", "global_x",
                                             "global_y", "global_z",    "local_x",    "local_y",    "local_z"};
  return c;
}

std::string dataset_number(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string dataset_row_key(const std::string& platform_id, const std::string& workload, const std::string& data_on,
                            const std::string& cpu_util, const std::string& gpu_util) {
  return platform_id + "|" + workload + "|" + data_on + "|" + cpu_util + "," + gpu_util;
}

const std::string& DatasetColumns::data_on_of(const std::vector<std::string>& f) const {
  static const std::string host = data_on_name(false);
  return data_on == kNoColumn || f[data_on].empty() ? host : f[data_on];
}

std::string DatasetColumns::row_key(const std::vector<std::string>& f) const {
  return dataset_row_key(f[platform_id], f[workload], data_on_of(f), f[cpu_util], f[gpu_util]);
}

DatasetColumns locate_columns(const CsvTable& t) {
  auto col = [&](const char* name) { return t.column(name, kNotDataset); };
  DatasetColumns c;
  c.workload = col("workload");
  c.platform_id = col("platform_id");
  c.set = col("set");
  c.kernel = col("kernel");
  // The launch block starts at the work_dim that precedes global_size (a code feature may be named work_dim).
  const size_t i_gs = col("global_size");
  const auto& h = t.header;
  if (i_gs == 0 || h[i_gs - 1] != "work_dim" || i_gs + 9 > h.size())
    throw DatasetError(t.path + ":1: the launch columns (work_dim, global_size, ...) are not in dataset order");
  c.launch = i_gs - 1;
  const auto& launch = dataset_launch_columns();
  for (size_t k = 0; k < launch.size(); ++k)
    if (c.launch + k >= h.size() || h[c.launch + k] != launch[k])
      throw DatasetError(t.path + ":1: column " + std::to_string(c.launch + k + 1) + " should be '" + launch[k] +
                         "' (docs/dataset.md)");
  if (c.kernel >= c.launch) throw DatasetError(t.path + ":1: 'kernel' must come before the launch columns");
  c.features_begin = c.kernel + 1;
  c.features_end = c.launch;
  // The data block (data_on, in_bytes, out_bytes) is optional: datasets swept before it read as host data with
  // unknown buffer bytes (dop sweep upgrade adds it).
  auto optional_col = [&](const std::string& name) {
    const auto it = std::find(h.begin(), h.end(), name);
    return it == h.end() ? kNoColumn : size_t(it - h.begin());
  };
  c.data_on = optional_col("data_on");
  c.in_bytes = optional_col("in_bytes");
  c.out_bytes = optional_col("out_bytes");
  c.args = optional_col("args");  // added after the data block: older datasets lack it (no argument values)
  c.cpu_util = col("cpu_util");
  c.gpu_util = col("gpu_util");
  c.cpu_cores = col("cpu_cores");
  c.time_ms_median = col("time_ms_median");
  c.time_ms_min = col("time_ms_min");
  c.time_ms_max = col("time_ms_max");
  c.valid = col("valid");
  c.error = col("error");
  c.gpu_throttled = optional_col("gpu_throttled");
  c.cpu_work_groups = optional_col("cpu_work_groups");
  c.gpu_work_groups = optional_col("gpu_work_groups");
  return c;
}

DatasetTable read_dataset(const std::string& path) {
  DatasetTable d;
  d.csv = read_csv_table(path, LastLine::keep_whole, [&](const CsvTable& t) { d.columns = locate_columns(t); });
  return d;
}

}  // namespace dop
