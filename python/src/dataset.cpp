// Sweep datasets (docs/dataset.md) and code-feature tables (`dop features --csv`) read by dop's own reader
// (dop/dataset.hpp: gzip, torn last lines, column checks) into columns: NumPy float arrays for numbers, lists of
// str for text. dop.read_dataset / dop.read_code_features make pandas DataFrames of them.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "dop/dataset.hpp"

namespace py = pybind11;

namespace dop::python {

namespace {

bool is_expr_column(const std::string& name) {
  const std::string suffix = "_expr";
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A numeric field: empty is missing (NaN); anything else that is not a number is an error naming file, line and
// column.
double number(const std::string& text, const std::string& path, size_t line, const std::string& column) {
  if (text.empty()) return std::nan("");
  const auto v = parse_number(text);
  if (!v)
    throw DatasetError(path + ":" + std::to_string(line) + ": column " + column + ": '" + text + "' is not a number");
  return *v;
}

// Columns of `rows` (each with `fields`, in header order): text columns as lists, the others as float arrays.
template <typename Rows, typename Fields>
py::dict columns(const std::string& path, const std::vector<std::string>& header, const std::set<size_t>& text,
                 const Rows& rows, Fields fields) {
  py::dict out;
  for (size_t c = 0; c < header.size(); ++c) {
    if (text.count(c)) {
      py::list values;
      for (const auto& r : rows) values.append(fields(r)[c]);
      out[py::str(header[c])] = values;
    } else {
      py::array_t<double> values(py::ssize_t(rows.size()));
      auto v = values.mutable_unchecked<1>();
      py::ssize_t i = 0;
      for (const auto& r : rows) v(i++) = number(fields(r)[c], path, r.line, header[c]);
      out[py::str(header[c])] = values;
    }
  }
  return out;
}

}  // namespace

void bind_dataset(py::module_& m) {
  py::register_exception<DatasetError>(m, "DatasetError", PyExc_ValueError);

  m.def(
      "_read_dataset",
      [](const std::string& path) {
        const DatasetTable t = read_dataset(path);
        const auto& c = t.columns;
        std::set<size_t> text{c.platform_id, c.workload, c.set, c.kernel, c.error};
        if (c.data_on != dop::kNoColumn) text.insert(c.data_on);  // host | gpu | pinned
        if (c.args != dop::kNoColumn) text.insert(c.args);        // K=256;N=1024
        for (size_t i = c.features_begin; i < c.features_end; ++i)
          if (is_expr_column(t.csv.header[i])) text.insert(i);
        return py::make_tuple(t.csv.header, columns(
                                                path, t.csv.header, text, t.csv.rows,
                                                [](const CsvRow& r) -> const auto& { return r.fields; }));
      },
      py::arg("path"), "A sweep dataset's header and its columns (numbers as float arrays, text as lists)");

  m.def(
      "_read_code_features",
      [](const std::string& path) {
        const CodeFeatureTable t = read_code_feature_table(path);
        std::vector<std::string> header{"file", "kernel"};
        header.insert(header.end(), t.names.begin(), t.names.end());
        std::set<size_t> text{0, 1};
        for (size_t i = 0; i < t.names.size(); ++i)
          if (is_expr_column(t.names[i]) || t.names[i] == "diagnostics") text.insert(i + 2);
        std::vector<std::vector<std::string>> rows;
        for (const auto& e : t.entries) {
          rows.push_back({e.file, e.kernel});
          rows.back().insert(rows.back().end(), e.values.begin(), e.values.end());
        }
        struct Row {
          size_t line;
          const std::vector<std::string>* fields;
        };
        std::vector<Row> lines;
        for (size_t i = 0; i < rows.size(); ++i) lines.push_back({t.entries[i].line, &rows[i]});
        return py::make_tuple(header,
                              columns(
                                  path, header, text, lines, [](const Row& r) -> const auto& { return *r.fields; }));
      },
      py::arg("path"), "A `dop features --csv` table's header and columns");
}

}  // namespace dop::python
