// The code-feature table: `dop features --csv` output, which a sweep joins into its rows and the trainer into a
// dataset swept without them.
#include "dop/dataset.hpp"

namespace dop {

std::string code_feature_key(const std::string& kernel_file, const std::string& kernel_name) {
  const auto slash = kernel_file.find_last_of('/');
  return (slash == std::string::npos ? kernel_file : kernel_file.substr(slash + 1)) + ":" + kernel_name;
}

const CodeFeatureTable::Entry* CodeFeatureTable::find(const std::string& key) const {
  const auto it = by_key.find(key);
  return it == by_key.end() ? nullptr : &entries[it->second];
}

CodeFeatureTable read_code_feature_table(const std::string& path) {
  const CsvTable csv = read_csv_table(path);
  if (csv.header.empty()) throw DatasetError(path + ": empty (no header line)");
  const char* what = "a code-feature table (dop features --csv)";
  const size_t ifile = csv.column("file", what), ikernel = csv.column("kernel", what);
  CodeFeatureTable t;
  t.path = path;
  std::vector<size_t> cols;
  for (size_t i = 0; i < csv.header.size(); ++i)
    if (i != ifile && i != ikernel && csv.header[i] != "diagnostics") {
      cols.push_back(i);
      t.names.push_back(csv.header[i]);
    }
  for (const auto& row : csv.rows) {
    CodeFeatureTable::Entry e{row.fields[ifile], row.fields[ikernel], row.line, {}};
    for (size_t i : cols) e.values.push_back(row.fields[i]);
    t.by_key[code_feature_key(e.file, e.kernel)] = t.entries.size();
    t.entries.push_back(std::move(e));
  }
  return t;
}

}  // namespace dop
