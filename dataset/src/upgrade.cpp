// upgrade_dataset: a dataset swept before the data block (data_on, in_bytes, out_bytes, args), or before its args
// column, with what it lacks added, its measurements untouched: no re-measuring.
#include <fstream>
#include <set>

#include "dop/dataset.hpp"

namespace dop {

namespace {

// The rows' workloads that the source does not know, named (up to 10) in the error.
void refuse_unknown_workloads(const std::string& in, const DatasetTable& d, const DataBlockSource& source) {
  std::set<std::string> unknown;
  for (const auto& row : d.csv.rows) {
    const std::string& w = row.fields[d.columns.workload];
    if (!source.bytes.count(w) || !source.args.count(w)) unknown.insert(w);
  }
  if (unknown.empty()) return;
  std::string list;
  size_t n = 0;
  for (const auto& w : unknown)
    if (n++ < 10) list += (list.empty() ? "" : ", ") + w;
  if (unknown.size() > 10) list += ", ... (" + std::to_string(unknown.size()) + " in all)";
  throw DatasetError(in + ": rows of workloads that the given set does not have (other set, scale or size?): " + list);
}

}  // namespace

size_t upgrade_dataset(const std::string& in, const DataBlockSource& source, const std::string& out_path) {
  if (source.data_on != data_on_name(false) && source.data_on != data_on_name(true) && source.data_on != kDataOnPinned)
    throw std::invalid_argument("data_on '" + source.data_on + "' is not host, gpu or " + kDataOnPinned);
  const DatasetTable d = read_dataset(in);
  if (d.csv.header.empty()) throw DatasetError(in + ": empty (no header line)");
  const DatasetColumns& c = d.columns;
  if (c.args != kNoColumn)
    throw DatasetError(in + ":1: already has the data block (data_on, in_bytes, out_bytes, args)");
  // Either the whole block goes right after the launch block, or (a dataset upgraded before args existed) args goes
  // right after out_bytes; a partial block otherwise is no dataset dop wrote.
  const bool whole = c.data_on == kNoColumn && c.in_bytes == kNoColumn && c.out_bytes == kNoColumn;
  const size_t block = c.launch + dataset_launch_columns().size();
  if (!whole && (c.data_on != block || c.in_bytes != block + 1 || c.out_bytes != block + 2))
    throw DatasetError(in + ":1: the data block (data_on, in_bytes, out_bytes) is incomplete or out of dataset order");
  refuse_unknown_workloads(in, d, source);
  const size_t at = whole ? block : block + 3;
  const auto& cols = dataset_data_columns();
  std::vector<std::string> header = d.csv.header;
  header.insert(header.begin() + long(at), whole ? cols.begin() : cols.end() - 1, cols.end());
  std::ofstream o(out_path, std::ios::binary | std::ios::trunc);
  if (!o) throw std::runtime_error(out_path + ": cannot be written");
  o << csv_line(header);
  for (const auto& row : d.csv.rows) {
    const std::string& w = row.fields[c.workload];
    std::vector<std::string> added;
    if (whole) {
      const auto& b = source.bytes.at(w);
      added = {source.data_on, std::to_string(b.first), std::to_string(b.second)};
    }
    added.push_back(source.args.at(w));
    std::vector<std::string> f = row.fields;
    f.insert(f.begin() + long(at), added.begin(), added.end());
    o << csv_line(f);
  }
  if (!o) throw std::runtime_error(out_path + ": write failed");
  return d.csv.rows.size();
}

}  // namespace dop
