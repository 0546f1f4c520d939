// The fields of a dataset row as every reader takes them: numbers, the measurement, rows measured twice.
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "dop/dataset.hpp"

namespace dop {

std::optional<double> parse_number(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || errno == ERANGE) return std::nullopt;
  return v;
}

std::string DatasetRowReader::where() const { return table_.path + ":" + std::to_string(row_.line); }

void DatasetRowReader::fail(size_t col, const std::string& what) const {
  throw DatasetError(where() + ": column " + std::to_string(col + 1) + " (" + table_.header[col] + "): " + what);
}

double DatasetRowReader::num(size_t col, bool allow_empty) const {
  const std::string& s = str(col);
  if (s.empty()) {
    if (allow_empty) return std::nan("");
    fail(col, "empty, a number is required");
  }
  const auto v = parse_number(s);
  if (!v || (std::isnan(*v) && !allow_empty)) fail(col, "'" + s + "' is not a number");
  return *v;
}

uint64_t DatasetRowReader::size(size_t col) const {
  const double v = num(col);
  if (!(v >= 1) || v != std::floor(v) || v > 9.0e15) fail(col, "'" + str(col) + "' is not a size >= 1");
  return uint64_t(v);
}

DatasetMeasurement read_measurement(const DatasetRowReader& r, const DatasetColumns& c) {
  DatasetMeasurement m;
  m.cpu_util = r.num(c.cpu_util);
  m.gpu_util = r.num(c.gpu_util);
  if (!(m.cpu_util >= 0 && m.cpu_util <= 1)) r.fail(c.cpu_util, "'" + r.str(c.cpu_util) + "' is not in [0, 1]");
  if (!(m.gpu_util >= 0 && m.gpu_util <= 1)) r.fail(c.gpu_util, "'" + r.str(c.gpu_util) + "' is not in [0, 1]");
  if (m.cpu_util == 0 && m.gpu_util == 0) r.fail(c.cpu_util, "configuration (0, 0) runs nothing");
  const std::string& v = r.str(c.valid);
  if (v != "0" && v != "1") r.fail(c.valid, "'" + v + "' is not 0 or 1");
  m.time_ms_median = r.num(c.time_ms_median, true);
  m.time_ms_min = r.num(c.time_ms_min, true);
  m.time_ms_max = r.num(c.time_ms_max, true);
  m.gpu_unthrottled = c.gpu_throttled != kNoColumn && m.gpu_util > 0 && m.gpu_util < 1 && r.str(c.gpu_throttled) == "0";
  const auto count = [&](size_t col) -> int64_t {
    if (col == kNoColumn || r.str(col).empty()) return -1;
    const double n = r.num(col);
    if (!(n >= 0) || n != std::floor(n) || n > 9.0e15) r.fail(col, "'" + r.str(col) + "' is not a work-group count");
    return int64_t(n);
  };
  if (v == "1") {  // a failed run's row may have no counts
    m.cpu_work_groups = count(c.cpu_work_groups);
    m.gpu_work_groups = count(c.gpu_work_groups);
  }
  m.valid = v == "1";
  if (!m.valid) {
    m.why = "valid = 0" + (r.str(c.error).empty() ? std::string() : ": " + r.str(c.error));
  } else if (!(m.time_ms_median > 0) || !std::isfinite(m.time_ms_median)) {
    m.valid = false;
    m.why = "time_ms_median '" + r.str(c.time_ms_median) + "' is not a positive time";
  }
  return m;
}

DatasetData read_data(const DatasetRowReader& r, const DatasetColumns& c) {
  DatasetData d;
  const std::string& on = c.data_on_of(r.row_fields());
  if (on != data_on_name(false) && on != data_on_name(true) && on != kDataOnPinned)
    r.fail(c.data_on, "'" + on + "' is not host, gpu or " + kDataOnPinned);
  d.on_gpu = on == data_on_name(true);
  d.pinned = on == kDataOnPinned;
  auto bytes = [&](size_t col) -> uint64_t {
    if (col == kNoColumn || r.str(col).empty()) return 0;
    const double v = r.num(col);
    if (!(v >= 0) || v != std::floor(v) || v > 9.0e15) r.fail(col, "'" + r.str(col) + "' is not a byte count");
    return uint64_t(v);
  };
  d.in_bytes = bytes(c.in_bytes);
  d.out_bytes = bytes(c.out_bytes);
  if (c.args != kNoColumn) {
    try {
      d.args = parse_dataset_args(r.str(c.args));
    } catch (const std::invalid_argument& e) {
      r.fail(c.args, e.what());
    }
  }
  return d;
}

void UnthrottledRows::add(const DatasetRowReader& r, const DatasetMeasurement& m) {
  if (m.valid && m.gpu_unthrottled && !count_++) first_ = r.where();
}

std::string UnthrottledRows::warning() const {
  if (!count_) return {};
  return first_ + ": " + std::to_string(count_) +
         " rows at GPU levels below 1 ran the whole GPU (gpu_throttled = 0, the first here): the sweep had no "
         "malleable form of their kernels, so they measure the whole GPU, not their level";
}

void DuplicateRowCheck::add(const DatasetRowReader& r, const DatasetColumns& c, const DatasetMeasurement& m) {
  const std::string key = dataset_row_key(r.str(c.platform_id), r.str(c.workload), c.data_on_of(r.row_fields()),
                                          dataset_number(m.cpu_util), dataset_number(m.gpu_util));
  const auto [it, first] = first_line_.emplace(key, r.line());
  if (!first)
    throw DatasetError(r.where() + ": workload '" + r.str(c.workload) + "' (data on " + c.data_on_of(r.row_fields()) +
                       ") at configuration (" + dataset_number(m.cpu_util) + ", " + dataset_number(m.gpu_util) +
                       ") again (first at line " + std::to_string(it->second) + ")");
}

}  // namespace dop
