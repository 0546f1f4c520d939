// The sweep dataset loader (docs/dataset.md): strict about malformed input, explicit about invalid measurements.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

#include "dop/sweep.hpp"
#include "dop/trainer.hpp"

namespace dop::train {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct RowReader {
  const std::string& path;
  const std::vector<std::string>& header;
  size_t line = 0;
  const std::vector<std::string>* fields = nullptr;

  [[noreturn]] void fail(size_t col, const std::string& m) const {
    throw DatasetError(path + ":" + std::to_string(line) + ": column " + std::to_string(col + 1) + " (" +
                       header[col] + "): " + m);
  }
  const std::string& str(size_t col) const { return (*fields)[col]; }
  // A number; empty is NaN when `allow_empty`.
  double num(size_t col, bool allow_empty = false) const {
    const std::string& s = (*fields)[col];
    if (s.empty()) {
      if (allow_empty) return std::nan("");
      fail(col, "empty, a number is required");
    }
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || *end != '\0' || errno == ERANGE) fail(col, "'" + s + "' is not a number");
    if (std::isnan(v) && !allow_empty) fail(col, "'" + s + "' is not a number");
    return v;
  }
  uint64_t size(size_t col) const {
    const double v = num(col);
    if (!(v >= 1) || v != std::floor(v) || v > 9.0e15) fail(col, "'" + str(col) + "' is not a size >= 1");
    return uint64_t(v);
  }
};

struct Partial {
  Workload w;
  std::vector<size_t> row_line;  // per configuration: line of its row (0: none)
  std::vector<uint8_t> valid;
};

// The file's text (gunzipped when compressed: DATA.csv.gz), or a DatasetError naming it.
std::string read_text(const std::string& path) {
  try {
    return read_text_file(path);
  } catch (const std::runtime_error& e) {
    throw DatasetError(e.what());
  }
}

}  // namespace

FeatureTable load_feature_table(const std::string& path) {
  std::istringstream f(read_text(path));
  FeatureTable t;
  std::vector<std::string> header;
  std::map<std::string, size_t> first_line;
  std::string line;
  size_t ikernel = 0, lineno = 0;
  std::vector<size_t> cols;
  while (std::getline(f, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const auto fields = csv_split(line);  // the sweep's own CSV reader
    if (header.empty()) {
      header = fields;
      const auto ik = std::find(header.begin(), header.end(), "kernel");
      if (ik == header.end() || std::find(header.begin(), header.end(), "file") == header.end())
        throw DatasetError(path + ":1: needs columns 'file' and 'kernel' (dop features --csv)");
      ikernel = size_t(ik - header.begin());
      for (size_t i = 0; i < header.size(); ++i)
        if (header[i] != "file" && header[i] != "kernel" && header[i] != "diagnostics") {
          cols.push_back(i);
          t.keys.push_back(header[i]);
        }
      continue;
    }
    if (fields == header) continue;  // concatenated outputs
    if (fields.size() != header.size())
      throw DatasetError(path + ":" + std::to_string(lineno) + ": " + std::to_string(fields.size()) +
                         " fields, the header has " + std::to_string(header.size()));
    std::vector<std::string> v;
    for (size_t i : cols) v.push_back(fields[i]);
    const std::string& k = fields[ikernel];
    const auto it = t.by_kernel.find(k);
    if (it != t.by_kernel.end() && it->second != v)
      throw DatasetError(path + ":" + std::to_string(lineno) + ": kernel '" + k + "' again with other features (first at "
                         "line " + std::to_string(first_line[k]) + "): kernels are joined by name");
    if (it == t.by_kernel.end()) first_line[k] = lineno;
    t.by_kernel[k] = v;
  }
  if (header.empty()) throw DatasetError(path + ": empty (no header line)");
  return t;
}

pred::CodeFeatures Workload::code_features(const std::vector<std::string>& code_keys) const {
  pred::CodeFeatures f;
  for (size_t i = 0; i < code_keys.size() && i < code.size(); ++i) f.values[code_keys[i]] = code[i];
  f.exprs = exprs;
  return f;
}

Dataset load_dataset(const std::string& path, const LoadOptions& options) {
  std::string all = read_text(path);
  Dataset d;
  d.path = path;

  std::vector<std::string> header;
  auto col = [&](const char* name) -> size_t {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end())
      throw DatasetError(path + ":1: no column '" + std::string(name) +
                         "': not a dop sweep dataset (docs/dataset.md)");
    return size_t(it - header.begin());
  };
  size_t i_platform = 0, i_workload = 0, i_set = 0, i_kernel = 0, i_launch = 0, i_cpu = 0, i_gpu = 0, i_cores = 0,
         i_time = 0, i_valid = 0, i_error = 0;
  std::vector<size_t> code_cols, expr_cols;

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

  size_t pos = 0, lineno = 0;
  while (pos < all.size()) {
    size_t nl = all.find('\n', pos);
    const bool torn = nl == std::string::npos;
    if (torn) nl = all.size();
    std::string line = all.substr(pos, nl - pos);
    pos = nl + 1;
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const auto fields = csv_split(line);  // the sweep's own CSV reader
    if (header.empty()) {
      header = fields;
      i_platform = col("platform_id");
      i_workload = col("workload");
      i_set = col("set");
      i_kernel = col("kernel");
      // The launch block starts at the work_dim that precedes global_size (a code feature may be named work_dim).
      const size_t i_gs = col("global_size");
      if (i_gs == 0 || header[i_gs - 1] != "work_dim" || i_gs + 9 > header.size())
        throw DatasetError(path + ":1: the launch columns (work_dim, global_size, ...) are not in dataset order");
      i_launch = i_gs - 1;
      static const char* launch_names[] = {"work_dim", "global_size", "local_size", "num_groups", "global_x",
                                           "global_y", "global_z",    "local_x",    "local_y",    "local_z"};
      for (size_t k = 0; k < 10; ++k)
        if (i_launch + k >= header.size() || header[i_launch + k] != launch_names[k])
          throw DatasetError(path + ":1: column " + std::to_string(i_launch + k + 1) + " should be '" +
                             launch_names[k] + "' (docs/dataset.md)");
      if (i_kernel >= i_launch) throw DatasetError(path + ":1: 'kernel' must come before the launch columns");
      i_cpu = col("cpu_util");
      i_gpu = col("gpu_util");
      i_cores = col("cpu_cores");
      i_time = col("time_ms_median");
      i_valid = col("valid");
      i_error = col("error");
      std::set<std::string> seen;
      for (size_t c = i_kernel + 1; c < i_launch; ++c) {
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
      continue;
    }
    if (fields.size() != header.size()) {
      if (torn) {  // a sweep killed mid-line; dop sweep cuts it when resuming
        d.problems.push_back(path + ":" + std::to_string(lineno) + ": torn last line (" +
                             std::to_string(fields.size()) + " fields), ignored");
        break;
      }
      throw DatasetError(path + ":" + std::to_string(lineno) + ": " + std::to_string(fields.size()) +
                         " fields, the header has " + std::to_string(header.size()));
    }
    RowReader r{path, header, lineno, &fields};
    if (options.platform_id.empty()) {
      if (d.platform_id.empty()) d.platform_id = fields[i_platform];
      if (fields[i_platform] != d.platform_id) {
        other_platforms.insert(fields[i_platform]);
        continue;
      }
    } else {
      d.platform_id = options.platform_id;
      if (fields[i_platform] != options.platform_id) {
        other_platforms.insert(fields[i_platform]);
        continue;
      }
    }
    ++d.rows;
    const std::string& name = r.str(i_workload);
    if (name.empty()) r.fail(i_workload, "empty workload name");
    // Workload identity: kernel, set, launch and code features must agree across its rows.
    pred::LaunchShape l;
    const double wd = r.num(i_launch);
    if (wd != 1 && wd != 2 && wd != 3) r.fail(i_launch, "'" + r.str(i_launch) + "' is not 1, 2 or 3");
    l.work_dim = unsigned(wd);
    for (int k = 0; k < 3; ++k) {
      l.global[size_t(k)] = r.size(i_launch + 4 + size_t(k));
      l.local[size_t(k)] = r.size(i_launch + 7 + size_t(k));
    }
    if (double(l.global_size()) != r.num(i_launch + 1)) r.fail(i_launch + 1, "differs from global_x*global_y*global_z");
    if (double(l.local_size()) != r.num(i_launch + 2)) r.fail(i_launch + 2, "differs from local_x*local_y*local_z");
    std::vector<double> code;
    for (size_t c : code_cols) code.push_back(r.num(c, true));
    std::map<std::string, std::string> exprs;
    for (size_t k = 0; k < expr_cols.size(); ++k) exprs[d.expr_keys[k]] = r.str(expr_cols[k]);
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      Partial p;
      p.w.name = name;
      p.w.set = r.str(i_set);
      p.w.kernel = r.str(i_kernel);
      p.w.launch = l;
      p.w.code = code;
      p.w.exprs = exprs;
      p.w.line = lineno;
      it = by_name.emplace(name, parts.size()).first;
      parts.push_back(std::move(p));
    } else {
      const Workload& w = parts[it->second].w;
      const std::string first = " (line " + std::to_string(w.line) + ")";
      if (w.kernel != r.str(i_kernel)) r.fail(i_kernel, "differs from the workload's first row" + first);
      if (w.set != r.str(i_set)) r.fail(i_set, "differs from the workload's first row" + first);
      if (!(w.launch == l)) r.fail(i_launch, "launch shape differs from the workload's first row" + first);
      for (size_t k = 0; k < code.size(); ++k)
        if (!(code[k] == w.code[k] || (std::isnan(code[k]) && std::isnan(w.code[k]))))
          r.fail(code_cols[k], "code feature differs from the workload's first row" + first);
    }
    RawRow row;
    row.part = it->second;
    row.line = lineno;
    row.cpu = r.num(i_cpu);
    row.gpu = r.num(i_gpu);
    if (!(row.cpu >= 0 && row.cpu <= 1)) r.fail(i_cpu, "'" + r.str(i_cpu) + "' is not in [0, 1]");
    if (!(row.gpu >= 0 && row.gpu <= 1)) r.fail(i_gpu, "'" + r.str(i_gpu) + "' is not in [0, 1]");
    if (row.cpu == 0 && row.gpu == 0) r.fail(i_cpu, "configuration (0, 0) runs nothing");
    const double cores = r.num(i_cores);
    if (cores < 0 || cores != std::floor(cores)) r.fail(i_cores, "'" + r.str(i_cores) + "' is not a core count");
    d.cpu_units = std::max(d.cpu_units, int(cores));
    const std::string& v = r.str(i_valid);
    if (v != "0" && v != "1") r.fail(i_valid, "'" + v + "' is not 0 or 1");
    row.valid = v == "1";
    row.time = r.num(i_time, true);
    if (!row.valid) {
      row.why = "valid = 0" + (r.str(i_error).empty() ? std::string() : ": " + r.str(i_error));
    } else if (!(row.time > 0) || !std::isfinite(row.time)) {
      row.valid = false;
      row.why = "time_ms_median '" + r.str(i_time) + "' is not a positive time";
    }
    cpu_levels.insert(row.cpu);
    gpu_levels.insert(row.gpu);
    raw.push_back(std::move(row));
  }
  if (header.empty()) throw DatasetError(path + ": empty (no header line)");
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
    const FeatureTable t = load_feature_table(options.features);
    std::vector<size_t> num, ex;
    for (size_t i = 0; i < t.keys.size(); ++i) {
      if (ends_with(t.keys[i], "_expr")) {
        ex.push_back(i);
        d.expr_keys.push_back(t.keys[i]);
      } else {
        num.push_back(i);
        d.code_keys.push_back(t.keys[i]);
      }
    }
    for (auto& p : parts) {
      const auto it = t.by_kernel.find(p.w.kernel);
      if (it == t.by_kernel.end())
        throw DatasetError(path + ":" + std::to_string(p.w.line) + ": kernel '" + p.w.kernel + "' (workload '" +
                           p.w.name + "') is not in " + options.features);
      p.w.code.clear();
      for (size_t i : num) {
        const std::string& x = it->second[i];
        char* end = nullptr;
        const double v = x.empty() ? std::nan("") : std::strtod(x.c_str(), &end);
        if (!x.empty() && (end == x.c_str() || *end))
          throw DatasetError(options.features + ": kernel '" + p.w.kernel + "': " + t.keys[i] + " '" + x +
                             "' is not a number");
        p.w.code.push_back(v);
      }
      for (size_t i : ex) p.w.exprs[t.keys[i]] = it->second[i];
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
    const size_t k = index_of(row.cpu, row.gpu);
    if (p.row_line[k])
      throw DatasetError(path + ":" + std::to_string(row.line) + ": workload '" + p.w.name + "' at configuration (" +
                         std::to_string(row.cpu).substr(0, 5) + ", " + std::to_string(row.gpu).substr(0, 5) +
                         ") again (first at line " + std::to_string(p.row_line[k]) + ")");
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
      if (!p.row_line[k]) ++missing;
      else if (!p.valid[k]) ++invalid;
    }
    if (missing || invalid) {
      ++d.excluded_workloads;
      d.problems.push_back(path + ":" + std::to_string(p.w.line) + ": workload '" + p.w.name + "' excluded: " +
                           std::to_string(missing) + " configurations without a row, " + std::to_string(invalid) +
                           " invalid, of " + std::to_string(C));
      continue;
    }
    size_t best = 0;
    for (size_t k = 1; k < C; ++k)
      if (p.w.time_ms[k] < p.w.time_ms[best]) best = k;
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
  add("cpu_util");
  add("gpu_util");
  return out;
}

}  // namespace dop::train
