// The dataset module on its own (dop_dataset only, no OpenCL): the CSV helpers, the column schema, the appender a
// sweep resumes through (torn last line cut, other columns refused), the row reader (torn lines, malformed rows named
// by file and line, gzip), merge, and the code-feature table of `dop features --csv`.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <set>

#include "dop/dataset.hpp"
#include "support.hpp"

namespace {

std::string tmp(const std::string& f) { return std::string(DOP_BINARY_DIR) + "/dataset_test_" + f; }

std::string write_text(const std::string& name, const std::string& text) {
  const std::string path = tmp(name);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

// A row of dataset_columns({"mem"}) for workload `w` at configuration (cpu, gpu), valid, its data on `data_on`,
// its arguments `args`.
std::vector<std::string> row(const std::string& w, double cpu, double gpu, const std::string& time = "2.5",
                             const std::string& data_on = "host", const std::string& args = "n=1024") {
  std::vector<std::string> r = {"p", w, "spec", "k", "1"};  // head, feature mem
  for (const char* x : {"1", "1024", "64", "16", "1024", "1", "1", "64", "1", "1"}) r.push_back(x);       // launch
  for (const std::string& x : {data_on, std::string("8192"), std::string("4096"), args}) r.push_back(x);  // data
  for (const std::string& x :
       {dop::dataset_number(cpu), dop::dataset_number(gpu), std::string("4"), std::string("8"), std::string("1"), time,
        time, time, std::string("1"), std::string("8"), std::string("8"), std::string("1"), std::string("1"),
        std::string("0"), std::string("0"), std::string("0"), std::string("3"), std::string("1"), std::string()})
    r.push_back(x);
  return r;
}

const std::vector<std::string>& columns() {
  static const std::vector<std::string> c = dop::dataset_columns({"mem"});
  return c;
}

std::string dataset_text(const std::vector<std::vector<std::string>>& rows) {
  std::string text = dop::csv_line(columns());
  for (const auto& r : rows) text += dop::csv_line(r);
  return text;
}

}  // namespace

TEST_CASE("CSV fields survive escaping and splitting", "[dataset]") {
  const std::vector<std::string> fields = {"plain", "with,comma", "with \"quotes\"", "", "two\nlines"};
  const std::string line = dop::csv_line(fields);
  CHECK(line == "plain,\"with,comma\",\"with \"\"quotes\"\"\",,\"two lines\"\n");
  const auto back = dop::csv_split(line.substr(0, line.size() - 1));
  CHECK(back == std::vector<std::string>{"plain", "with,comma", "with \"quotes\"", "", "two lines"});
  CHECK(dop::csv_split("a,b\r") == std::vector<std::string>{"a", "b"});
  CHECK(dop::csv_split("") == std::vector<std::string>{""});
}

TEST_CASE("the schema names the columns in order and locates them in a header", "[dataset]") {
  const auto plain = dop::dataset_columns({});
  REQUIRE(plain.size() == 4 + 10 + 4 + 19);
  CHECK(plain[0] == "platform_id");
  CHECK(plain[3] == "kernel");
  CHECK(plain[4] == "work_dim");
  CHECK(plain.back() == "error");
  CHECK(dop::dataset_launch_columns().size() == 10);
  CHECK(plain[14] == "data_on");
  CHECK(dop::dataset_data_columns() == std::vector<std::string>{"data_on", "in_bytes", "out_bytes", "args"});
  CHECK(dop::dataset_number(0.125) == "0.125");
  CHECK(dop::dataset_number(1) == "1");

  const dop::CsvTable t = dop::read_csv_table(write_text("schema.csv", dataset_text({row("w", 0.5, 0.25)})));
  const dop::DatasetColumns c = dop::locate_columns(t);
  CHECK(c.kernel == 3);
  CHECK(c.features_begin == 4);
  CHECK(c.features_end == 5);
  CHECK(c.launch == 5);
  CHECK(t.header[c.cpu_util] == "cpu_util");
  CHECK(t.header[c.valid] == "valid");
  CHECK(t.header[c.data_on] == "data_on");
  CHECK(t.header[c.out_bytes] == "out_bytes");
  CHECK(c.args == c.out_bytes + 1);
  CHECK(c.row_key(t.rows.at(0).fields) == "p|w|host|0.5,0.25");
  CHECK(c.row_key(t.rows.at(0).fields) == dop::dataset_row_key("p", "w", "host", dop::dataset_number(0.5), "0.25"));

  // A missing column and a launch block out of order are named with the file.
  std::string text = dataset_text({});
  text.replace(text.find(",valid,"), 7, ",okay,");
  const std::string no_valid = write_text("no_valid.csv", text);
  CHECK_THROWS_WITH(dop::locate_columns(dop::read_csv_table(no_valid)),
                    Catch::Contains(no_valid + ":1: no column 'valid'"));
  text = dataset_text({});
  text.replace(text.find("work_dim,global_size"), 20, "global_size,work_dim");
  const std::string swapped = write_text("swapped.csv", text);
  CHECK_THROWS_WITH(dop::locate_columns(dop::read_csv_table(swapped)),
                    Catch::Contains(swapped + ":1: the launch columns"));
  // read_dataset checks the columns before any row: a file of another kind is refused as that.
  const std::string json = write_text("not_a_dataset.json", "{\n  \"name\": \"saxpy\", \"global\": [1024]\n}\n");
  CHECK_THROWS_WITH(dop::read_dataset(json), Catch::Contains(json + ":1: no column 'workload'"));
  const auto d = dop::read_dataset(write_text("dataset.csv", dataset_text({row("w", 1, 1)})));
  CHECK(d.csv.rows.size() == 1);
  CHECK(d.columns.valid == c.valid);
}

TEST_CASE("the row reader drops a torn last line and names a malformed row by file and line", "[dataset]") {
  const std::string good = dataset_text({row("a", 0, 1), row("b", 1, 0)});
  // Blank lines and a repeated header (concatenated files) are skipped; line numbers count them.
  const auto t = dop::read_csv_table(
      write_text("rows.csv", good + "\n" + dop::csv_line(columns()) + good.substr(good.find('\n') + 1)));
  REQUIRE(t.rows.size() == 4);
  CHECK(t.rows[0].line == 2);
  CHECK(t.rows[2].line == 6);
  CHECK(t.rows[2].fields[1] == "a");
  CHECK(t.torn_line == 0);

  // A writer killed mid-line: dropped, reported; a whole row without its newline is a row.
  const auto torn = dop::read_csv_table(write_text("torn.csv", good + "p,c,spec,k,1,1,10"));
  CHECK(torn.rows.size() == 2);
  CHECK(torn.torn_line == 4);
  CHECK(torn.torn_fields == 7);
  const std::string whole = good + dop::csv_line(row("c", 1, 1));
  CHECK(dop::read_csv_table(write_text("whole.csv", whole.substr(0, whole.size() - 1))).rows.size() == 3);

  // A short row before the last line is malformed.
  const std::string bad = write_text("bad.csv", good + "p,c,spec\n" + dop::csv_line(row("d", 1, 1)));
  CHECK_THROWS_WITH(dop::read_csv_table(bad), Catch::Contains(bad + ":4: 3 fields, the header has 38"));
  CHECK_THROWS_WITH(dop::read_csv_table(tmp("missing.csv")), Catch::Contains("missing.csv: cannot be read"));
  CHECK(dop::read_csv_table(write_text("empty.csv", "")).header.empty());
}

TEST_CASE("a gzip-compressed dataset reads as the plain one, a truncated one is refused", "[dataset]") {
  const std::string plain = write_text("gz.csv", dataset_text({row("a", 0, 1), row("b", 1, 0)}));
  REQUIRE(dop::test::run_command("gzip -c " + plain + " > " + plain + ".gz").rc == 0);
  REQUIRE(dop::test::run_command("head -c 40 " + plain + ".gz > " + tmp("cut.csv.gz")).rc == 0);
  try {
    CHECK(dop::read_text_file(plain + ".gz") == dop::read_text_file(plain));
  } catch (const dop::DatasetError& e) {  // a build without zlib says so
    CHECK_THAT(e.what(), Catch::Contains("built without zlib"));
    return;
  }
  CHECK(dop::read_csv_table(plain + ".gz").rows.size() == 2);
  CHECK_THROWS_WITH(dop::read_text_file(tmp("cut.csv.gz")),
                    Catch::Contains("cut.csv.gz: truncated gzip data") || Catch::Contains("cut.csv.gz: corrupt gzip"));
}

TEST_CASE("the appender writes the header once, resumes after a torn line and refuses other columns", "[dataset]") {
  const std::string path = tmp("append.csv");
  std::remove(path.c_str());
  {
    dop::DatasetAppender out(path, columns());
    CHECK(out.existing().empty());
    out.append(row("a", 0, 1));
    out.sync();
  }
  CHECK(dop::test::read_file(path) == dataset_text({row("a", 0, 1)}));
  // A killed writer left half a line: resuming cuts it from the file and knows the rows before it.
  { std::ofstream(path, std::ios::app) << "p,b,spec,k"; }
  {
    dop::DatasetAppender out(path, columns());
    CHECK(out.existing() == std::set<std::string>{"p|a|host|0,1"});
    out.append(row("b", 1, 0));
  }
  CHECK(dop::test::read_file(path) == dataset_text({row("a", 0, 1), row("b", 1, 0)}));
  // An empty file gets its header.
  const std::string empty = write_text("append_empty.csv", "");
  { dop::DatasetAppender out(empty, columns()); }
  CHECK(dop::test::read_file(empty) == dop::csv_line(columns()));

  CHECK_THROWS_WITH(dop::DatasetAppender(path, dop::dataset_columns({})),
                    Catch::Contains("append.csv: has other columns than this sweep writes"));
  CHECK_THROWS_AS(dop::DatasetAppender(path + ".gz", columns()), std::invalid_argument);
}

TEST_CASE("merge keeps every row once, the first seen, and refuses other columns", "[dataset]") {
  const std::string a = write_text("merge_a.csv", dataset_text({row("a", 0, 1, "1"), row("b", 0, 1)}));
  const std::string b = write_text("merge_b.csv", dataset_text({row("a", 0, 1, "9"), row("c", 0, 1)}) + "p,d,sp");
  const std::string none = write_text("merge_none.csv", "");
  const std::string out = tmp("merged.csv");
  CHECK(dop::merge_datasets({a, none, b, a}, out) == 3);
  CHECK(dop::test::read_file(out) == dataset_text({row("a", 0, 1, "1"), row("b", 0, 1), row("c", 0, 1)}));

  const std::string foreign = write_text("merge_foreign.csv", dop::csv_line(dop::dataset_columns({})));
  CHECK_THROWS_WITH(dop::merge_datasets({a, foreign}, out), Catch::Contains("merge_foreign.csv: its columns differ"));
  CHECK_THROWS_WITH(dop::merge_datasets({none}, out), Catch::Contains("every input dataset is empty"));
  CHECK_THROWS_AS(dop::merge_datasets({}, out), std::invalid_argument);
}

TEST_CASE("the code-feature table is keyed by kernel file name and kernel", "[dataset]") {
  const std::string header = "file,kernel,mem,bytes_expr,diagnostics\n";
  const std::string path =
      write_text("features.csv", header + "/src/k.cl,saxpy,1,n * 4,\"a, b\"\n" + header + "other/k.cl,gemm,2,,\n");
  const dop::CodeFeatureTable t = dop::read_code_feature_table(path);
  CHECK(t.names == std::vector<std::string>{"mem", "bytes_expr"});
  REQUIRE(t.entries.size() == 2);
  CHECK(t.entries[1].line == 4);
  CHECK(dop::code_feature_key("/src/k.cl", "saxpy") == "k.cl:saxpy");
  const auto* e = t.find(dop::code_feature_key("kernels/k.cl", "saxpy"));
  REQUIRE(e);
  CHECK(e->values == std::vector<std::string>{"1", "n * 4"});
  CHECK(t.find("k.cl:gemm")->values == std::vector<std::string>{"2", ""});
  CHECK(t.find("k.cl:nope") == nullptr);

  const std::string no_file = write_text("features_nofile.csv", "name,kernel,mem\n");
  CHECK_THROWS_WITH(dop::read_code_feature_table(no_file), Catch::Contains(no_file + ":1: no column 'file'"));
  CHECK_THROWS_WITH(dop::read_code_feature_table(write_text("features_empty.csv", "")),
                    Catch::Contains("features_empty.csv: empty"));
  const std::string short_row = write_text("features_short.csv", header + "k.cl,saxpy,1\nk.cl,gemm,2,,\n");
  CHECK_THROWS_WITH(dop::read_code_feature_table(short_row),
                    Catch::Contains(short_row + ":2: 3 fields, the header has 5"));
}

TEST_CASE("a row's measurement: a time that is no positive finite number is invalid, a repeat is refused",
          "[dataset]") {
  const std::string path = write_text("measured.csv", dataset_text({row("w", 1, 1, "inf"), row("w", 0.5, 1, "-0"),
                                                                    row("w", 0, 1), row("v", 0, 1), row("w", 0, 1)}));
  const dop::DatasetTable d = dop::read_dataset(path);
  REQUIRE(d.csv.rows.size() == 5);
  dop::DuplicateRowCheck duplicates;
  std::vector<dop::DatasetMeasurement> m;
  for (size_t i = 0; i < 4; ++i) {
    const dop::DatasetRowReader r(d.csv, d.csv.rows[i]);
    m.push_back(dop::read_measurement(r, d.columns));
    duplicates.add(r, d.columns, m.back());
  }
  CHECK_FALSE(m[0].valid);
  CHECK(m[0].why == "time_ms_median 'inf' is not a positive time");
  CHECK_FALSE(m[1].valid);
  CHECK(m[1].why == "time_ms_median '-0' is not a positive time");
  CHECK(m[2].valid);
  CHECK(m[2].cpu_util == 0);
  CHECK(m[2].time_ms_median == 2.5);
  CHECK(m[3].valid);  // another workload at the same configuration
  const dop::DatasetRowReader fifth(d.csv, d.csv.rows[4]);
  CHECK_THROWS_WITH(duplicates.add(fifth, d.columns, dop::read_measurement(fifth, d.columns)),
                    path + ":6: workload 'w' (data on host) at configuration (0, 1) again (first at line 4)");
}

namespace {

// The text of a dataset swept before the data block: `text` without data_on, in_bytes, out_bytes and args (`n` = 4),
// or before args alone (`from` = 3, `n` = 1).
std::string without_data_block(const std::string& text, long from = 0, long n = 4) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    auto f = dop::csv_split(text.substr(pos, nl - pos));
    f.erase(f.begin() + 15 + from, f.begin() + 15 + from + n);  // after head (4), mem (1), launch (10)
    out += dop::csv_line(f);
    pos = nl + 1;
  }
  return out;
}

}  // namespace

TEST_CASE("data_on is part of a row key, and a dataset without the data block reads as host data", "[dataset]") {
  // The same workload and configuration with its data on the host and on the GPU: two rows, no duplicate.
  const std::string both = write_text(
      "data_both.csv", dataset_text({row("w", 0, 1, "2", "host"), row("w", 0, 1, "1", "gpu"), row("w", 0, 1)}));
  const dop::DatasetTable d = dop::read_dataset(both);
  dop::DuplicateRowCheck duplicates;
  for (size_t i = 0; i < 2; ++i) {
    const dop::DatasetRowReader r(d.csv, d.csv.rows[i]);
    duplicates.add(r, d.columns, dop::read_measurement(r, d.columns));
    const dop::DatasetData data = dop::read_data(r, d.columns);
    CHECK(data.on_gpu == (i == 1));
    CHECK(data.in_bytes == 8192);
    CHECK(data.out_bytes == 4096);
  }
  const dop::DatasetRowReader third(d.csv, d.csv.rows[2]);  // host again
  CHECK_THROWS_WITH(duplicates.add(third, d.columns, dop::read_measurement(third, d.columns)),
                    both + ":4: workload 'w' (data on host) at configuration (0, 1) again (first at line 2)");
  CHECK(d.columns.row_key(d.csv.rows[0].fields) != d.columns.row_key(d.csv.rows[1].fields));
  // merge keeps both situations
  CHECK(dop::merge_datasets({both}, tmp("data_merged.csv")) == 2);

  // A dataset swept before the block: data_on reads as host, the bytes as unknown (0).
  const std::string old = write_text("data_old.csv", without_data_block(dataset_text({row("w", 0, 1)})));
  const dop::DatasetTable o = dop::read_dataset(old);
  CHECK(o.columns.data_on == dop::kNoColumn);
  const dop::DatasetData data = dop::read_data(dop::DatasetRowReader(o.csv, o.csv.rows[0]), o.columns);
  CHECK_FALSE(data.on_gpu);
  CHECK(data.in_bytes == 0);
  CHECK(o.columns.row_key(o.csv.rows[0].fields) == "p|w|host|0,1");

  // Host data in page-locked memory reads as such, a row of its own beside host data.
  const std::string pinned = write_text("data_pinned_rows.csv", dataset_text({row("w", 0, 1, "2", "pinned")}));
  const dop::DatasetTable p = dop::read_dataset(pinned);
  const dop::DatasetData pd = dop::read_data(dop::DatasetRowReader(p.csv, p.csv.rows[0]), p.columns);
  CHECK(pd.pinned);
  CHECK_FALSE(pd.on_gpu);
  CHECK(p.columns.row_key(p.csv.rows[0].fields) == "p|w|pinned|0,1");

  // A data_on that is none of them is refused with file, line and column.
  const std::string bad = write_text("data_bad.csv", dataset_text({row("w", 0, 1, "2", "disk")}));
  const dop::DatasetTable b = dop::read_dataset(bad);
  CHECK_THROWS_WITH(dop::read_data(dop::DatasetRowReader(b.csv, b.csv.rows[0]), b.columns),
                    bad + ":2: column 16 (data_on): 'disk' is not host, gpu or pinned");
}

TEST_CASE("upgrade adds the data block without touching the measurements, and refuses unknown workloads", "[dataset]") {
  const std::string fresh = dataset_text({row("a", 0, 1, "1", "gpu", "K=256;N=1024"), row("b", 1, 0, "3", "gpu", "")});
  const std::string old = write_text("upgrade_old.csv", without_data_block(fresh));
  dop::DataBlockSource src;
  src.data_on = "gpu";
  src.bytes = {{"a", {8192, 4096}}, {"b", {8192, 4096}}, {"unused", {1, 1}}};
  src.args = {{"a", "K=256;N=1024"}, {"b", ""}, {"unused", "n=1"}};
  const std::string out = tmp("upgrade_new.csv");
  CHECK(dop::upgrade_dataset(old, src, out) == 2);
  CHECK(dop::test::read_file(out) == fresh);  // what a fresh sweep writes
  // A dataset upgraded before args existed (the block without args) gets args alone, after out_bytes.
  const std::string no_args = write_text("upgrade_no_args.csv", without_data_block(fresh, 3, 1));
  CHECK(dop::read_dataset(no_args).columns.args == dop::kNoColumn);
  src.data_on = "host";  // not written again: the block's data_on stays as it was
  const std::string out2 = tmp("upgrade_args.csv");
  CHECK(dop::upgrade_dataset(no_args, src, out2) == 2);
  CHECK(dop::test::read_file(out2) == fresh);
  CHECK_THROWS_WITH(dop::upgrade_dataset(out, src, tmp("upgrade_twice.csv")),
                    Catch::Contains("already has the data block"));
  // Part of the block missing is no dataset dop wrote.
  const std::string partial = write_text("upgrade_partial.csv", without_data_block(fresh, 1, 3));
  CHECK_THROWS_WITH(dop::upgrade_dataset(partial, src, tmp("upgrade_partial_out.csv")),
                    Catch::Contains("upgrade_partial.csv:1: the data block") && Catch::Contains("incomplete"));
  src.bytes.erase("b");
  CHECK_THROWS_WITH(
      dop::upgrade_dataset(old, src, tmp("upgrade_unknown.csv")),
      Catch::Contains("upgrade_old.csv: rows of workloads that the given set does not have") && Catch::Contains(": b"));
}

TEST_CASE("args: integer scalar arguments as NAME=VALUE items, read back and refused when malformed", "[dataset]") {
  const std::map<std::string, int64_t> args = {{"N", 1024}, {"K", 256}, {"alpha_i", -3}};
  const std::string text = dop::dataset_args_text(args);
  CHECK(text == "K=256;N=1024;alpha_i=-3");  // name order
  CHECK(dop::parse_dataset_args(text) == args);
  CHECK(dop::dataset_args_text({}).empty());
  CHECK(dop::parse_dataset_args("").empty());
  CHECK(dop::parse_dataset_args("n=9223372036854775807").at("n") == INT64_MAX);
  for (const char* bad : {"K", "K=", "=3", "K=1.5", "K=12x", "K=1;", "1K=2", "K-1=2", "K= 2", "n=9223372036854775808"})
    CHECK_THROWS_WITH(dop::parse_dataset_args(bad), Catch::Contains("is not NAME=INTEGER"));
  CHECK_THROWS_WITH(dop::parse_dataset_args("K=1;K=2"), "argument 'K' given twice");

  // A row's args through the row reader; a malformed one is named by file, line and column.
  const std::string path = write_text(
      "args.csv", dataset_text({row("w", 0, 1, "2", "host", "K=256;N=1024"), row("w", 1, 0, "2", "host", "K=256;N")}));
  const dop::DatasetTable d = dop::read_dataset(path);
  const dop::DatasetData data = dop::read_data(dop::DatasetRowReader(d.csv, d.csv.rows[0]), d.columns);
  CHECK(data.args == std::map<std::string, int64_t>{{"K", 256}, {"N", 1024}});
  CHECK_THROWS_WITH(dop::read_data(dop::DatasetRowReader(d.csv, d.csv.rows[1]), d.columns),
                    path + ":3: column 19 (args): 'N' is not NAME=INTEGER (args are written K=256;N=1024)");
  // Without the column: no arguments, as before.
  const std::string old = write_text("args_old.csv", without_data_block(dataset_text({row("w", 0, 1)}), 3, 1));
  const dop::DatasetTable o = dop::read_dataset(old);
  CHECK(o.columns.args == dop::kNoColumn);
  CHECK(dop::read_data(dop::DatasetRowReader(o.csv, o.csv.rows[0]), o.columns).args.empty());
}

TEST_CASE("a sampled grid keeps the three corners, spreads the rest, and is the same for a name every time",
          "[dataset]") {
  std::vector<double> cpu, gpu;  // the default 5 x 9 grid without (0, 0), grid order
  for (double c : {0.0, 0.25, 0.5, 0.75, 1.0})
    for (int g = 0; g <= 8; ++g)
      if (c > 0 || g > 0) {
        cpu.push_back(c);
        gpu.push_back(g / 8.0);
      }
  REQUIRE(cpu.size() == 44);
  const auto a = dop::sample_configurations(cpu, gpu, "gemm_n512", 12);
  REQUIRE(a.size() == 12);
  CHECK(std::set<size_t>(a.begin(), a.end()).size() == 12);
  CHECK(std::is_sorted(a.begin(), a.end()));
  std::set<std::pair<double, double>> chosen, cpu_levels;
  for (size_t i : a) chosen.insert({cpu[i], gpu[i]});
  CHECK(chosen.count({1.0, 0.0}));
  CHECK(chosen.count({0.0, 1.0}));
  CHECK(chosen.count({1.0, 1.0}));
  std::set<double> levels;
  for (size_t i : a) levels.insert(cpu[i]);
  CHECK(levels.size() == 5);                                          // every CPU level
  CHECK(dop::sample_configurations(cpu, gpu, "gemm_n512", 12) == a);  // deterministic
  size_t differ = 0;
  for (const char* w : {"atax1", "bicg1", "mvt1", "syr2k", "fdtd"})
    differ += dop::sample_configurations(cpu, gpu, w, 12) != a;
  CHECK(differ >= 4);  // spread differently per workload
  CHECK(dop::sample_configurations(cpu, gpu, "x", 3).size() == 3);
  CHECK(dop::sample_configurations(cpu, gpu, "x", 0).size() == 44);
  CHECK(dop::sample_configurations(cpu, gpu, "x", 100).size() == 44);
}
