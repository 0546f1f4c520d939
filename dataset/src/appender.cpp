// DatasetAppender: how `dop sweep` writes its dataset, resumably: header on create, one row per line in a single
// write(), fdatasync per workload, a torn last line cut when resuming.
#include <fcntl.h>
#include <unistd.h>

#include <fstream>

#include "dop/dataset.hpp"

namespace dop {

DatasetAppender::DatasetAppender(const std::string& path, const std::vector<std::string>& columns) : path_(path) {
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0)
    throw std::invalid_argument(path + ": a sweep appends to a plain CSV (compress it when the sweep is done)");
  CsvTable existing;
  if (std::ifstream(path)) existing = read_csv_table(path, LastLine::cut);
  if (!existing.header.empty()) {
    if (existing.header != columns)
      throw std::runtime_error(path +
                               ": has other columns than this sweep writes (a different feature list or an "
                               "older format): write to a new file");
    const DatasetColumns c = locate_columns(existing);
    for (const auto& row : existing.rows) existing_.insert(c.row_key(row.fields));
  }
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(path + ": cannot open for appending");
  if (existing.header.empty()) {
    write_line(csv_line(columns));
    sync();
  }
}

DatasetAppender::~DatasetAppender() {
  if (fd_ >= 0) ::close(fd_);
}

void DatasetAppender::append(const std::vector<std::string>& row) { write_line(csv_line(row)); }

// Whole lines with single write() calls (retried only after a partial write), into the kernel's page cache.
void DatasetAppender::write_line(const std::string& line) {
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + off, line.size() - off);
    if (n < 0) throw std::runtime_error(path_ + ": write failed");
    off += size_t(n);
  }
}

void DatasetAppender::sync() { ::fdatasync(fd_); }

}  // namespace dop
