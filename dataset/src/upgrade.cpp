// upgrade_dataset: a dataset swept before the data block (data_on, in_bytes, out_bytes) with the block added, its
// measurements untouched: no re-measuring.
#include <fstream>
#include <set>

#include "dop/dataset.hpp"

namespace dop {

size_t upgrade_dataset(const std::string& in, const DataBlockSource& source, const std::string& out_path) {
  if (source.data_on != data_on_name(false) && source.data_on != data_on_name(true))
    throw std::invalid_argument("data_on '" + source.data_on + "' is not host or gpu");
  const DatasetTable d = read_dataset(in);
  if (d.csv.header.empty()) throw DatasetError(in + ": empty (no header line)");
  const DatasetColumns& c = d.columns;
  if (c.data_on != kNoColumn || c.in_bytes != kNoColumn || c.out_bytes != kNoColumn)
    throw DatasetError(in + ":1: already has the data block (data_on, in_bytes, out_bytes)");
  const size_t at = c.launch + dataset_launch_columns().size();  // the block goes right after the launch block
  std::set<std::string> unknown;
  for (const auto& row : d.csv.rows)
    if (!source.bytes.count(row.fields[c.workload])) unknown.insert(row.fields[c.workload]);
  if (!unknown.empty()) {
    std::string list;
    size_t n = 0;
    for (const auto& w : unknown)
      if (n++ < 10) list += (list.empty() ? "" : ", ") + w;
    if (unknown.size() > 10) list += ", ... (" + std::to_string(unknown.size()) + " in all)";
    throw DatasetError(in +
                       ": rows of workloads that the given set does not have (other set, scale or size?): " + list);
  }
  std::vector<std::string> header = d.csv.header;
  header.insert(header.begin() + long(at), dataset_data_columns().begin(), dataset_data_columns().end());
  std::ofstream o(out_path, std::ios::binary | std::ios::trunc);
  if (!o) throw std::runtime_error(out_path + ": cannot be written");
  o << csv_line(header);
  for (const auto& row : d.csv.rows) {
    const auto& b = source.bytes.at(row.fields[c.workload]);
    std::vector<std::string> f = row.fields;
    f.insert(f.begin() + long(at), {source.data_on, std::to_string(b.first), std::to_string(b.second)});
    o << csv_line(f);
  }
  if (!o) throw std::runtime_error(out_path + ": write failed");
  return d.csv.rows.size();
}

}  // namespace dop
