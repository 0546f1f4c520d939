// dop datasets as files (docs/dataset.md): the sweep dataset's column schema, the appender `dop sweep` writes
// through (resumable after a crash or kill -9), the row reader every dataset reader shares (the sweep resuming,
// merge, the trainer, `dop report`), the code-feature table of `dop features --csv`, merge, and the CSV and file
// helpers under them. C++17 only (gzip through zlib where the build found it): no OpenCL, no runtime.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace dop {

/// A dataset or table that cannot be used; the message names the file, and its line where there is one.
class DatasetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------------------------------------------
// CSV and files
// ---------------------------------------------------------------------------------------------------------------

/// Minimal RFC 4180 CSV helpers shared by the dataset readers. csv_escape quotes a field that needs it (and turns
/// newlines into spaces: a row is one line); csv_split splits one line, dropping unquoted carriage returns.
std::string csv_escape(const std::string& field);
std::vector<std::string> csv_split(const std::string& line);
/// One CSV line of `fields`, each escaped, with its newline.
std::string csv_line(const std::vector<std::string>& fields);

/// A text file's contents, gunzipped when it is gzip-compressed (datasets may be stored as DATA.csv.gz). Throws
/// DatasetError naming the file: unreadable, corrupt gzip, or gzip in a build without zlib.
std::string read_text_file(const std::string& path);

/// One data line of a CSV table.
struct CsvRow {
  size_t line = 0;                  ///< its line number in the file, from 1
  std::string text;                 ///< the line as written, without its newline
  std::vector<std::string> fields;  ///< as many as the header has
};

/// A CSV table as read: its header (the first line that is not blank; empty for an empty file) and its data rows.
struct CsvTable {
  std::string path;
  std::vector<std::string> header;
  std::vector<CsvRow> rows;
  /// The torn last line (the file ends inside it: a writer killed mid-line), which is not among `rows`: its line
  /// number and field count; 0 when there is none.
  size_t torn_line = 0, torn_fields = 0;
  /// The index of column `name`; throws DatasetError "PATH:1: no column 'NAME': not WHAT".
  size_t column(const std::string& name, const std::string& what) const;
};

/// What the reader does with a last line that has no newline.
enum class LastLine {
  keep_whole,  ///< a row when it has the header's field count (a file written by hand), else torn and dropped
  cut,         ///< torn, always: dropped and cut from the file (a sweep resuming appends the next row after it)
};

/// Reads a CSV table, plain or gzip-compressed. Blank lines and repeats of the header (files concatenated) are
/// skipped; a row with another field count than the header's throws DatasetError "PATH:LINE: N fields, the header
/// has M", except a torn last line (`last`). A missing file is an error (DatasetError naming it). `on_header`, when
/// given, sees the table as soon as its header is read, before any row: a column check there is what a file of
/// another kind is refused with.
CsvTable read_csv_table(const std::string& path, LastLine last = LastLine::keep_whole,
                        const std::function<void(const CsvTable&)>& on_header = {});

// ---------------------------------------------------------------------------------------------------------------
// The sweep dataset's schema (docs/dataset.md)
// ---------------------------------------------------------------------------------------------------------------

/// The dataset's column names, in order, for a given feature list: platform_id, workload, set, kernel, the code
/// features, the launch block, the data block, then the configuration and what was measured at it.
std::vector<std::string> dataset_columns(const std::vector<std::string>& feature_names);
/// The launch block: work_dim, global_size, local_size, num_groups, global_x/y/z, local_x/y/z.
const std::vector<std::string>& dataset_launch_columns();

/// The data block: data_on ("host" | "gpu": where the inputs were when the timed region began), in_bytes (bytes of
/// the buffers the kernel reads: read and read_write arguments), out_bytes (of the buffers it writes: write and
/// read_write arguments), args (the kernel's integer scalar arguments: dataset_args_text). A dataset without it
/// (swept before) reads as host data with unknown bytes; one without args as a launch without argument values.
const std::vector<std::string>& dataset_data_columns();
/// The `args` column's text of integer scalar arguments by name: "K=256;N=1024" (name order; empty for none).
std::string dataset_args_text(const std::map<std::string, int64_t>& args);
/// Parses it back; throws std::invalid_argument naming the item that is not NAME=INTEGER (a C identifier, a decimal
/// int64) or a name given twice.
std::map<std::string, int64_t> parse_dataset_args(const std::string& text);
/// data_on's value: "gpu" for data on the GPU (a sweep with --memory resident), else "host".
const char* data_on_name(bool on_gpu);
/// data_on's value for host data in page-locked memory (a sweep with --memory pinned): a third place of the data
/// (the models' data_pinned input).
inline constexpr const char* kDataOnPinned = "pinned";
/// data_on's value: "gpu", "pinned" (host data in page-locked memory) or "host".
inline const char* data_on_name(bool on_gpu, bool pinned) {
  return on_gpu ? data_on_name(true) : pinned ? kDataOnPinned : data_on_name(false);
}

/// A number as the sweep writes it (printf's %.6g: "0.125", "1", "1.5e+07").
std::string dataset_number(double value);
/// A row's identity, which a resumed sweep skips and merge keeps once: "PLATFORM|WORKLOAD|DATA_ON|CPU,GPU", the
/// configuration as written. A workload swept with its data on the host and on the GPU has two rows per
/// configuration, which are no duplicates.
std::string dataset_row_key(const std::string& platform_id, const std::string& workload, const std::string& data_on,
                            const std::string& cpu_util, const std::string& gpu_util);

/// An optional column a header lacks.
inline constexpr size_t kNoColumn = size_t(-1);

/// Where the schema's columns are in a dataset's header: the ones its readers use.
struct DatasetColumns {
  size_t platform_id = 0, workload = 0, set = 0, kernel = 0;
  size_t features_begin = 0, features_end = 0;  ///< the code features: the columns between kernel and work_dim
  size_t launch = 0;                            ///< work_dim; launch + k holds dataset_launch_columns()[k]
  size_t data_on = kNoColumn, in_bytes = kNoColumn, out_bytes = kNoColumn;  ///< the data block, when present
  size_t args = kNoColumn;  ///< the kernel's integer scalar arguments (dataset_args_text), when present
  size_t cpu_util = 0, gpu_util = 0, cpu_cores = 0;
  size_t time_ms_median = 0, time_ms_min = 0, time_ms_max = 0, valid = 0, error = 0;
  /// Optional: gpu_throttled; the engine's work-groups per device (cpu_work_groups, gpu_work_groups).
  size_t gpu_throttled = kNoColumn, cpu_work_groups = kNoColumn, gpu_work_groups = kNoColumn;
  /// dataset_row_key of a row's fields.
  std::string row_key(const std::vector<std::string>& fields) const;
  /// A row's data_on: "host" where the column is missing or empty.
  const std::string& data_on_of(const std::vector<std::string>& fields) const;
};
/// Locates them in a table's header. Throws DatasetError naming the file for a missing column ("PATH:1: no column
/// 'NAME': not a dop sweep dataset ...") and for a launch block out of dataset order.
DatasetColumns locate_columns(const CsvTable& table);

/// A sweep dataset as read: its table and where the schema's columns are in it.
struct DatasetTable {
  CsvTable csv;
  DatasetColumns columns;
};
/// Reads a dataset (read_csv_table), locating its columns as soon as the header is read. An empty file gives an
/// empty header and no rows.
DatasetTable read_dataset(const std::string& path);

/// A whole field as a number (strtod: the whole text, no overflow; inf and nan are numbers); nullopt for anything
/// else, the empty field included. Every reader of dop's tables parses numbers with it.
std::optional<double> parse_number(const std::string& text);

/// The fields of one row as its readers take them; every refusal is a DatasetError "PATH:LINE: column N (NAME):
/// WHAT".
class DatasetRowReader {
 public:
  DatasetRowReader(const CsvTable& table, const CsvRow& row) : table_(table), row_(row) {}
  [[noreturn]] void fail(size_t col, const std::string& what) const;
  const std::string& str(size_t col) const { return row_.fields[col]; }
  /// A number (strtod, the whole field; inf is one); an empty field is NaN when `allow_empty`, else refused.
  double num(size_t col, bool allow_empty = false) const;
  /// An integer in [1, 9e15].
  uint64_t size(size_t col) const;
  size_t line() const { return row_.line; }
  const std::vector<std::string>& row_fields() const { return row_.fields; }
  std::string where() const;  ///< "PATH:LINE"

 private:
  const CsvTable& table_;
  const CsvRow& row_;
};

/// A row's configuration and what was measured at it, as every reader of datasets takes them (the trainer, `dop
/// report`).
struct DatasetMeasurement {
  double cpu_util = 0, gpu_util = 0;
  double time_ms_median = 0, time_ms_min = 0, time_ms_max = 0;  ///< NaN where empty
  /// valid = 1 and a positive, finite median time; otherwise `why` says what is wrong (the sweep's error, or the
  /// time), and the row is not used.
  bool valid = false;
  std::string why;
  /// A GPU level strictly between 0 and 1 that ran the whole GPU (gpu_throttled = 0: the sweep had no malleable form
  /// of the kernel): the row measured the whole GPU, not its level.
  bool gpu_unthrottled = false;
  /// The work-groups each device ran, as the engine distributed them (-1: the dataset has no such column).
  int64_t cpu_work_groups = -1, gpu_work_groups = -1;
};
/// Reads it. Refuses (DatasetError naming file, line and column) what no sweep writes: a utilisation that is not a
/// number in [0, 1], configuration (0, 0), valid other than 0 or 1, times that are not numbers.
DatasetMeasurement read_measurement(const DatasetRowReader& row, const DatasetColumns& columns);

/// Where a row's data was and how many bytes its buffers hold (the data block).
struct DatasetData {
  bool on_gpu = false;                   ///< data_on = gpu
  bool pinned = false;                   ///< data_on = pinned: host data in page-locked memory
  uint64_t in_bytes = 0, out_bytes = 0;  ///< 0: unknown (a dataset without the columns)
  std::map<std::string, int64_t> args;   ///< the integer scalar arguments; none where the column is missing
};
/// Reads it: a missing data_on is host, missing bytes 0, missing args none. Refuses (DatasetError naming file, line
/// and column) a data_on other than host, gpu or pinned, bytes that are not a count and args that do not parse.
DatasetData read_data(const DatasetRowReader& row, const DatasetColumns& columns);

/// Refuses a row measured twice: the same platform, workload, data location and configuration as an earlier row of
/// the table.
class DuplicateRowCheck {
 public:
  /// Throws DatasetError "PATH:LINE: workload 'W' (data on D) at configuration (C, G) again (first at line N)".
  void add(const DatasetRowReader& row, const DatasetColumns& columns, const DatasetMeasurement& m);

 private:
  std::map<std::string, size_t> first_line_;
};

/// Counts a dataset's valid rows of a GPU level below 1 that ran the whole GPU (DatasetMeasurement::gpu_unthrottled),
/// which its readers use as measured and name in one warning.
class UnthrottledRows {
 public:
  void add(const DatasetRowReader& row, const DatasetMeasurement& m);
  /// "" when there were none; else "PATH:LINE: N rows at GPU levels below 1 ran the whole GPU (...)", LINE the first.
  std::string warning() const;

 private:
  size_t count_ = 0;
  std::string first_;
};

// ---------------------------------------------------------------------------------------------------------------
// Writing, merging
// ---------------------------------------------------------------------------------------------------------------

/// Appends rows to a sweep dataset: each row one line written with a single write() (a killed process loses
/// nothing written), flushed to disk by sync() (which the sweep calls after each workload's rows).
class DatasetAppender {
 public:
  /// Opens `path` for rows of `columns`: creates it with its header when missing or empty; otherwise resumes it:
  /// cuts a torn last line a killed writer left, and throws std::runtime_error if its header is not `columns`. A
  /// gzip path (.gz) is refused with std::invalid_argument: a sweep appends to a plain CSV.
  DatasetAppender(const std::string& path, const std::vector<std::string>& columns);
  ~DatasetAppender();
  DatasetAppender(const DatasetAppender&) = delete;
  DatasetAppender& operator=(const DatasetAppender&) = delete;

  /// The keys (dataset_row_key) of the rows the file held when it was opened: what a resumed sweep skips.
  const std::set<std::string>& existing() const { return existing_; }
  /// Appends one row. A row written is in the kernel's page cache: a killed process loses nothing.
  void append(const std::vector<std::string>& row);
  /// fdatasync: the rows written also survive a crash of the machine.
  void sync();

 private:
  void write_line(const std::string& line);
  std::string path_;
  int fd_ = -1;
  std::set<std::string> existing_;
};

/// The configurations a training sweep measures of one workload when it measures `n` of the grid's (dop sweep
/// --configs N): indices into the grid's configurations (`cpu[i]`, `gpu[i]`, grid order), sorted. Always CPU only
/// (max, 0), GPU only (0, max) and all (max, max); the others cut in grid order into n - 3 equal strata, one from
/// each at an offset drawn from a hash of the workload's name: deterministic per workload, every CPU level covered.
/// n = 0 or n >= the grid: all of them.
std::vector<size_t> sample_configurations(const std::vector<double>& cpu, const std::vector<double>& gpu,
                                          const std::string& workload, size_t n);

/// Merges datasets with identical columns into `out`: every (platform, workload, data_on, configuration) row once (the
/// first seen wins; torn last lines are dropped). Throws naming the file whose columns differ. Returns the number of
/// rows written.
size_t merge_datasets(const std::vector<std::string>& inputs, const std::string& out);

/// What an upgrade adds to a dataset swept before the data block: where the data was, and each workload's buffer
/// bytes and integer scalar arguments (from its spec: dop sweep upgrade collects the set's workloads).
struct DataBlockSource {
  std::string data_on = "host";  ///< "host" or "gpu": the memory mode the dataset was swept in
  std::map<std::string, std::pair<uint64_t, uint64_t>> bytes;  ///< workload -> (in_bytes, out_bytes)
  std::map<std::string, std::string> args;                     ///< workload -> its args text (dataset_args_text)
};
/// Writes `in` with the data block (data_on, in_bytes, out_bytes, args) after its launch block, or, when it has the
/// block but not args (upgraded before args existed), with args after out_bytes; every row's other fields as they
/// were (plain CSV; the caller compresses). Throws DatasetError naming the file: it already has args, a partial or
/// misplaced block, it is empty, or rows of workloads the source does not know (named, up to 10). Returns the rows
/// written.
size_t upgrade_dataset(const std::string& in, const DataBlockSource& source, const std::string& out);

// ---------------------------------------------------------------------------------------------------------------
// Code features (`dop features --csv`)
// ---------------------------------------------------------------------------------------------------------------

/// Static code features per kernel: the table `dop features --csv` writes (columns file, kernel, the features, and
/// diagnostics, which is no feature). Outputs of several runs may be concatenated: repeated headers are skipped.
struct CodeFeatureTable {
  struct Entry {
    std::string file, kernel;         ///< the kernel file as listed, the kernel function
    size_t line = 0;                  ///< its line in the table
    std::vector<std::string> values;  ///< in `names` order, as text (empty: missing)
  };
  std::string path;
  std::vector<std::string> names;  ///< the feature columns, in file order
  std::vector<Entry> entries;      ///< in file order
  /// code_feature_key -> index in `entries` (the last listed wins).
  std::map<std::string, size_t> by_key;
  /// The entry of code_feature_key `key`, or nullptr.
  const Entry* find(const std::string& key) const;
};

/// "<kernel file name without its folders>:<kernel name>": how a sweep joins code features to its workloads.
std::string code_feature_key(const std::string& kernel_file, const std::string& kernel_name);

/// Reads the table. Throws DatasetError naming the file (and line) when it cannot be read, is empty, lacks the
/// column 'file' or 'kernel', or has a row with another field count than its header.
CodeFeatureTable read_code_feature_table(const std::string& path);

}  // namespace dop
