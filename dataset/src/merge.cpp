// merge_datasets: shards of a sweep (or datasets of several machines) into one, each row once.
#include <fstream>
#include <set>

#include "dop/dataset.hpp"

namespace dop {

size_t merge_datasets(const std::vector<std::string>& inputs, const std::string& out_path) {
  if (inputs.empty()) throw std::invalid_argument("merge: no input datasets");
  std::vector<std::string> header;
  DatasetColumns cols;
  std::set<std::string> seen;
  std::string body;
  size_t rows = 0;
  for (const auto& in : inputs) {
    const CsvTable t = read_csv_table(in, LastLine::keep_whole, [&](const CsvTable& shard) {
      if (header.empty()) {
        header = shard.header;
        cols = locate_columns(shard);
      } else if (shard.header != header) {
        throw std::runtime_error(in + ": its columns differ from " + inputs.front() + "'s");
      }
    });
    if (t.header.empty()) continue;  // an empty shard
    for (const auto& row : t.rows)
      if (seen.insert(cols.row_key(row.fields)).second) {
        body += row.text + "\n";
        ++rows;
      }
  }
  if (header.empty()) throw std::runtime_error("merge: every input dataset is empty");
  std::ofstream o(out_path, std::ios::binary | std::ios::trunc);
  if (!o) throw std::runtime_error(out_path + ": cannot be written");
  o << csv_line(header) << body;
  if (!o) throw std::runtime_error(out_path + ": write failed");
  return rows;
}

}  // namespace dop
