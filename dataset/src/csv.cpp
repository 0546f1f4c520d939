// CSV: the RFC 4180 helpers and the table reader every dataset reader shares (torn last lines, field counts).
#include <unistd.h>

#include <algorithm>

#include "dop/dataset.hpp"

namespace dop {

std::string csv_escape(const std::string& f) {
  if (f.find_first_of(",\"\n\r") == std::string::npos) return f;
  std::string o = "\"";
  for (char c : f) {
    if (c == '"') o += '"';
    o += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return o + "\"";
}

std::vector<std::string> csv_split(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(std::move(cur));
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(std::move(cur));
  return out;
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) line += (i ? "," : "") + csv_escape(fields[i]);
  return line + "\n";
}

size_t CsvTable::column(const std::string& name, const std::string& what) const {
  const auto it = std::find(header.begin(), header.end(), name);
  if (it == header.end()) throw DatasetError(path + ":1: no column '" + name + "': not " + what);
  return size_t(it - header.begin());
}

CsvTable read_csv_table(const std::string& path, LastLine last, const std::function<void(const CsvTable&)>& on_header) {
  CsvTable t;
  t.path = path;
  std::string all = read_text_file(path);
  // A sweep resuming appends after the last newline: whatever follows it is cut, from the file too.
  if (last == LastLine::cut && !all.empty() && all.back() != '\n') {
    const auto nl = all.find_last_of('\n');
    const size_t keep = nl == std::string::npos ? 0 : nl + 1;
    t.torn_line = size_t(std::count(all.begin(), all.end(), '\n')) + 1;
    t.torn_fields = csv_split(all.substr(keep)).size();
    all.resize(keep);
    if (::truncate(path.c_str(), static_cast<off_t>(all.size())) != 0)
      throw DatasetError(path + ": cannot truncate its torn last line");
  }
  size_t pos = 0, lineno = 0;
  while (pos < all.size()) {
    size_t nl = all.find('\n', pos);
    const bool unterminated = nl == std::string::npos;
    if (unterminated) nl = all.size();
    std::string line = all.substr(pos, nl - pos);
    pos = nl + 1;
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    auto fields = csv_split(line);
    if (t.header.empty()) {
      t.header = std::move(fields);
      if (on_header) on_header(t);
      continue;
    }
    if (fields == t.header) continue;  // concatenated files
    if (fields.size() != t.header.size()) {
      if (unterminated) {  // a writer killed mid-line
        t.torn_line = lineno;
        t.torn_fields = fields.size();
        break;
      }
      throw DatasetError(path + ":" + std::to_string(lineno) + ": " + std::to_string(fields.size()) +
                         " fields, the header has " + std::to_string(t.header.size()));
    }
    t.rows.push_back({lineno, std::move(line), std::move(fields)});
  }
  return t;
}

}  // namespace dop
