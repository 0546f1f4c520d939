// The sweep dataset loader (docs/dataset.md): strict about malformed input, explicit about invalid measurements.
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <unordered_map>

#include "dop/dataset.hpp"
#include "dop/trainer.hpp"

namespace dop::train {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct Partial {
  Workload w;
  std::vector<size_t> row_line;  // per configuration: line of its row (0: none)
  std::vector<uint8_t> valid;
};

// The rows of a code-feature table by kernel function name (a dataset swept without code features is joined to
// them by name): a kernel listed twice must have the same features.
std::map<std::string, const CodeFeatureTable::Entry*> by_kernel_name(const CodeFeatureTable& t) {
  std::map<std::string, const CodeFeatureTable::Entry*> by_kernel;
  for (const auto& e : t.entries) {
    const auto [it, first] = by_kernel.emplace(e.kernel, &e);
    if (!first && it->second->values != e.values)
      throw DatasetError(t.path + ":" + std::to_string(e.line) + ": kernel '" + e.kernel +
                         "' again with other features (first at line " + std::to_string(it->second->line) +
                         "): kernels are joined by name");
  }
  return by_kernel;
}

}  // namespace

pred::CodeFeatures Workload::code_features(const std::vector<std::string>& code_keys) const {
  pred::CodeFeatures f;
  for (size_t i = 0; i < code_keys.size() && i < code.size(); ++i) f.values[code_keys[i]] = code[i];
  f.exprs = exprs;
  return f;
}

std::vector<double> Workload::code_vector(const std::vector<pred::Feature>& features,
                                          const std::vector<std::string>& code_keys) const {
  return pred::code_vector(features, code_features(code_keys), launch, args);
}

Dataset load_dataset(const std::string& path, const LoadOptions& options) {
  const DatasetTable data = read_dataset(path);  // the sweep's own reader: a torn last line is dropped
  const CsvTable& table = data.csv;
  if (table.header.empty()) throw DatasetError(path + ": empty (no header line)");
  const DatasetColumns& col = data.columns;
  const std::vector<std::string>& header = table.header;
  Dataset d;
  d.path = path;
  d.has_data = col.data_on != kNoColumn && col.in_bytes != kNoColumn && col.out_bytes != kNoColumn;
  d.has_args = col.args != kNoColumn;

  std::vector<size_t> code_cols, expr_cols;
  std::set<std::string> seen;
  for (size_t c = col.features_begin; c < col.features_end; ++c) {
    if (!seen.insert(header[c]).second)
      throw DatasetError(path + ":1: column " + std::to_string(c + 1) + ": duplicate feature '" + header[c] + "'");
    if (ends_with(header[c], "_expr")) {
      expr_cols.push_back(c);
      d.expr_keys.push_back(header[c]);
    } else {
      code_cols.push_back(c);
      d.code_keys.push_back(header[c]);
    }
  }

  std::vector<Partial> parts;
  std::unordered_map<std::string, size_t> by_name;
  struct RawRow {
    size_t part, line;
    double cpu, gpu, time;
    bool valid;
    std::string why;
  };
  std::vector<RawRow> raw;
  std::set<double> cpu_levels, gpu_levels;
  std::set<std::string> other_platforms;
  DuplicateRowCheck duplicates;
  UnthrottledRows unthrottled;

  for (const CsvRow& csv_row : table.rows) {
    const std::vector<std::string>& fields = csv_row.fields;
    const size_t lineno = csv_row.line;
    DatasetRowReader r(table, csv_row);
    if (options.platform_id.empty()) {
      if (d.platform_id.empty()) d.platform_id = fields[col.platform_id];
      if (fields[col.platform_id] != d.platform_id) {
        other_platforms.insert(fields[col.platform_id]);
        continue;
      }
    } else {
      d.platform_id = options.platform_id;
      if (fields[col.platform_id] != options.platform_id) {
        other_platforms.insert(fields[col.platform_id]);
        continue;
      }
    }
    ++d.rows;
    const std::string& name = r.str(col.workload);
    if (name.empty()) r.fail(col.workload, "empty workload name");
    // Workload identity: kernel, set, launch and code features must agree across its rows.
    pred::LaunchShape l;
    const double wd = r.num(col.launch);
    if (wd != 1 && wd != 2 && wd != 3) r.fail(col.launch, "'" + r.str(col.launch) + "' is not 1, 2 or 3");
    l.work_dim = unsigned(wd);
    for (int k = 0; k < 3; ++k) {
      l.global[size_t(k)] = r.size(col.launch + 4 + size_t(k));
      l.local[size_t(k)] = r.size(col.launch + 7 + size_t(k));
    }
    if (double(l.global_size()) != r.num(col.launch + 1))
      r.fail(col.launch + 1, "differs from global_x*global_y*global_z");
    if (double(l.local_size()) != r.num(col.launch + 2)) r.fail(col.launch + 2, "differs from local_x*local_y*local_z");
    const DatasetData data = read_data(r, col);  // a dataset without the data block: host, bytes unknown
    l.in_bytes = data.in_bytes;
    l.out_bytes = data.out_bytes;
    l.data_on_gpu = data.on_gpu;
    l.data_pinned = data.pinned;
    d.has_pinned = d.has_pinned || data.pinned;
    std::vector<double> code;
    for (size_t c : code_cols) code.push_back(r.num(c, true));
    std::map<std::string, std::string> exprs;
    for (size_t k = 0; k < expr_cols.size(); ++k) exprs[d.expr_keys[k]] = r.str(expr_cols[k]);
    // A workload is a decision instance: its name and where its data was (the same workload with its data on the
    // host and on the GPU is two).
    const std::string key = name + '|' + data_on_name(data.on_gpu, data.pinned);
    auto it = by_name.find(key);
    if (it == by_name.end()) {
      Partial p;
      p.w.name = name;
      p.w.set = r.str(col.set);
      p.w.kernel = r.str(col.kernel);
      p.w.launch = l;
      p.w.code = code;
      p.w.exprs = exprs;
      p.w.args = data.args;
      p.w.line = lineno;
      it = by_name.emplace(key, parts.size()).first;
      parts.push_back(std::move(p));
    } else {
      const Workload& w = parts[it->second].w;
      const std::string first = " (line " + std::to_string(w.line) + ")";
      if (w.kernel != r.str(col.kernel)) r.fail(col.kernel, "differs from the workload's first row" + first);
      if (w.set != r.str(col.set)) r.fail(col.set, "differs from the workload's first row" + first);
      if (!(w.launch == l))
        r.fail(w.launch.in_bytes != l.in_bytes || w.launch.out_bytes != l.out_bytes ? col.in_bytes : col.launch,
               "launch shape or buffer bytes differ from the workload's first row" + first);
      if (w.args != data.args) r.fail(col.args, "arguments differ from the workload's first row" + first);
      for (size_t k = 0; k < code.size(); ++k)
        if (!(code[k] == w.code[k] || (std::isnan(code[k]) && std::isnan(w.code[k]))))
          r.fail(code_cols[k], "code feature differs from the workload's first row" + first);
    }
    const DatasetMeasurement m = read_measurement(r, col);
    duplicates.add(r, col, m);  // a configuration measured twice is refused
    unthrottled.add(r, m);
    const double cores = r.num(col.cpu_cores);
    if (cores < 0 || cores != std::floor(cores))
      r.fail(col.cpu_cores, "'" + r.str(col.cpu_cores) + "' is not a core count");
    d.cpu_units = std::max(d.cpu_units, int(cores));
    RawRow row;
    row.part = it->second;
    row.line = lineno;
    row.cpu = m.cpu_util;
    row.gpu = m.gpu_util;
    row.time = m.time_ms_median;
    row.valid = m.valid;
    row.why = m.why;
    cpu_levels.insert(row.cpu);
    gpu_levels.insert(row.gpu);
    raw.push_back(std::move(row));
  }
  // Used as measured (a kernel without a malleable form runs so at launch too), but said.
  if (const std::string w = unthrottled.warning(); !w.empty()) d.problems.push_back(w);
  if (table.torn_line)  // a sweep killed mid-line; dop sweep cuts it when resuming
    d.problems.push_back(path + ":" + std::to_string(table.torn_line) + ": torn last line (" +
                         std::to_string(table.torn_fields) + " fields), ignored");
  if (options.platform_id.empty() && !other_platforms.empty()) {
    std::string list = d.platform_id;
    for (const auto& p : other_platforms) list += ", " + p;
    throw DatasetError(path + ": rows of several platforms (" + list + "): choose one (--platform-id)");
  }
  if (d.rows == 0)
    throw DatasetError(path + ": no data rows" +
                       (options.platform_id.empty() ? std::string() : " of platform '" + options.platform_id + "'"));

  if (!options.features.empty()) {
    if (!d.code_keys.empty() || !d.expr_keys.empty())
      throw DatasetError(path + ": already has code features; --features joins them only into a dataset without");
    const CodeFeatureTable t = read_code_feature_table(options.features);
    const auto by_kernel = by_kernel_name(t);
    std::vector<size_t> num, ex;
    for (size_t i = 0; i < t.names.size(); ++i) {
      if (ends_with(t.names[i], "_expr")) {
        ex.push_back(i);
        d.expr_keys.push_back(t.names[i]);
      } else {
        num.push_back(i);
        d.code_keys.push_back(t.names[i]);
      }
    }
    for (auto& p : parts) {
      const auto it = by_kernel.find(p.w.kernel);
      if (it == by_kernel.end())
        throw DatasetError(path + ":" + std::to_string(p.w.line) + ": kernel '" + p.w.kernel + "' (workload '" +
                           p.w.name + "') is not in " + options.features);
      p.w.code.clear();
      for (size_t i : num) {
        const std::string& x = it->second->values[i];
        const auto v = x.empty() ? std::optional<double>(std::nan("")) : parse_number(x);
        if (!v)
          throw DatasetError(options.features + ": kernel '" + p.w.kernel + "': " + t.names[i] + " '" + x +
                             "' is not a number");
        p.w.code.push_back(*v);
      }
      for (size_t i : ex) p.w.exprs[t.names[i]] = it->second->values[i];
    }
  }
  d.cpu_levels.assign(cpu_levels.begin(), cpu_levels.end());
  d.gpu_levels.assign(gpu_levels.begin(), gpu_levels.end());
  pred::Model grid;
  grid.cpu_levels = d.cpu_levels;
  grid.gpu_levels = d.gpu_levels;
  d.configs = grid.configs();
  auto index_of = [&](double c, double g) {
    const size_t ic = size_t(std::find(d.cpu_levels.begin(), d.cpu_levels.end(), c) - d.cpu_levels.begin());
    const size_t ig = size_t(std::find(d.gpu_levels.begin(), d.gpu_levels.end(), g) - d.gpu_levels.begin());
    // configs() skips (0, 0), the first pair, when both level lists start at 0
    size_t k = ic * d.gpu_levels.size() + ig;
    if (d.cpu_levels[0] == 0 && d.gpu_levels[0] == 0) --k;
    return k;
  };
  const size_t C = d.configs.size();
  for (auto& p : parts) {
    p.w.time_ms.assign(C, std::nan(""));
    p.row_line.assign(C, 0);
    p.valid.assign(C, 0);
  }
  for (const RawRow& row : raw) {
    Partial& p = parts[row.part];
    const size_t k = index_of(row.cpu, row.gpu);  // each once: DuplicateRowCheck refused a repeat
    p.row_line[k] = row.line;
    if (!row.valid) {
      ++d.invalid_rows;
      d.problems.push_back(path + ":" + std::to_string(row.line) + ": invalid row (" + row.why + "), not used");
      continue;
    }
    p.valid[k] = 1;
    p.w.time_ms[k] = row.time;
  }
  for (auto& p : parts) {
    size_t missing = 0, invalid = 0;
    for (size_t k = 0; k < C; ++k) {
      if (!p.row_line[k])
        ++missing;
      else if (!p.valid[k])
        ++invalid;
    }
    // An invalid row (a failed or mismatching run) excludes the workload; configurations never measured (a sampled
    // sweep, dop sweep --configs) leave it partial: trained on, never in the metrics, which need the oracle.
    const std::string what =
        "workload '" + p.w.name + "' (data on " + data_on_name(p.w.launch.data_on_gpu, p.w.launch.data_pinned) + ")";
    if (invalid || C - missing < 2) {
      ++d.excluded_workloads;
      d.problems.push_back(path + ":" + std::to_string(p.w.line) + ": " + what +
                           " excluded: " + std::to_string(missing) + " configurations without a row, " +
                           std::to_string(invalid) + " invalid, of " + std::to_string(C));
      continue;
    }
    p.w.complete = missing == 0;
    if (!p.w.complete) ++d.partial_workloads;
    size_t best = C;
    for (size_t k = 0; k < C; ++k)
      if (p.row_line[k] && (best == C || p.w.time_ms[k] < p.w.time_ms[best])) best = k;
    p.w.best = best;
    d.workloads.push_back(std::move(p.w));
  }
  return d;
}

std::vector<size_t> all_workloads(const Dataset& data) {
  std::vector<size_t> v(data.workloads.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

std::vector<size_t> complete_workloads(const Dataset& data) {
  std::vector<size_t> v;
  for (size_t i = 0; i < data.workloads.size(); ++i)
    if (data.workloads[i].complete) v.push_back(i);
  return v;
}

std::vector<pred::Feature> default_features(const Dataset& data, bool derived) {
  std::vector<pred::Feature> out;
  std::set<std::string> builtin_names;
  for (const auto& b : pred::builtin_features()) builtin_names.insert(b.name);
  for (const auto& key : data.code_keys) {
    pred::Feature f;
    f.source = pred::Source::code;
    f.key = key;
    f.name = builtin_names.count(key) ? "code_" + key : key;  // the code feature work_dim vs the launch's
    const std::string e = key + "_expr";
    if (std::find(data.expr_keys.begin(), data.expr_keys.end(), e) != data.expr_keys.end()) f.expr_key = e;
    out.push_back(f);
  }
  static const char* launch[] = {"work_dim", "global_size", "local_size", "num_groups", "global_x",
                                 "global_y", "global_z",    "local_x",    "local_y",    "local_z"};
  static const char* derived_names[] = {"groups_per_gpu_unit", "gpu_waves", "cpu_cores",
                                        "groups_per_cpu_core", "cpu_waves", "gpu_items_per_unit"};
  auto add = [&](const char* name) {
    for (const auto& b : pred::builtin_features())
      if (b.name == name) out.push_back(b);
  };
  for (const char* n : launch) add(n);
  if (derived)
    for (const char* n : derived_names) add(n);
  if (data.has_data)  // where the data is and what the GPU must receive (docs/dataset.md's data block)
    for (const char* n : {"data_on_gpu", "in_bytes", "out_bytes", "gpu_recv_bytes"}) add(n);
  if (data.has_pinned) add("data_pinned");  // only where a row has its host data in page-locked memory
  add("cpu_util");
  add("gpu_util");
  return out;
}

}  // namespace dop::train
