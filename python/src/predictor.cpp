// dop.Predictor over dop::pred::Predictor (dop/predictor.hpp): a model file, the code features it needs, the best
// configuration of a launch and the model's output for every configuration.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "dop/predictor.hpp"

namespace py = pybind11;

namespace dop::python {

namespace {

// A launch size from Python: an int, or a sequence of 1-3 ints, as LaunchShape::parse reads "X[,Y[,Z]]" (which
// checks the sizes and names the problem).
std::string size_text(const py::handle& size, const char* what) {
  std::vector<long long> dims;
  if (py::isinstance<py::int_>(size)) {
    dims.push_back(size.cast<long long>());
  } else if (py::isinstance<py::sequence>(size) && !py::isinstance<py::str>(size)) {
    for (const auto& d : size.cast<py::sequence>()) {
      if (!py::isinstance<py::int_>(d)) throw py::type_error(std::string(what) + ": sizes must be integers");
      dims.push_back(d.cast<long long>());
    }
  } else {
    throw py::type_error(std::string(what) + ": an int or a sequence of 1 to 3 ints");
  }
  std::string text;
  for (const long long d : dims) {
    if (d < 1) throw py::value_error(std::string(what) + ": sizes must be >= 1, got " + std::to_string(d));
    text += (text.empty() ? "" : ",") + std::to_string(d);
  }
  return text;
}

pred::LaunchShape launch_shape(const py::handle& global_size, const py::handle& local_size) {
  return pred::LaunchShape::parse(size_text(global_size, "global_size"), size_text(local_size, "local_size"));
}

// Code features by key, as dop.features() and `dop features --json` give them: numbers (None or NaN: missing) and
// integer expressions (strings, keys ending in _expr).
pred::CodeFeatures code_features(const py::dict& features) {
  pred::CodeFeatures code;
  for (const auto& [k, v] : features) {
    const std::string key = py::str(k);
    if (py::isinstance<py::str>(v)) {
      code.exprs[key] = v.cast<std::string>();
    } else if (v.is_none()) {
      code.values[key] = std::nan("");
    } else if (py::isinstance<py::bool_>(v) ||
               !(py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v) || py::hasattr(v, "__float__"))) {
      throw py::type_error("feature '" + key + "': a number, None or an expression string, got " +
                           std::string(py::str(py::type::of(v))));
    } else {
      code.values[key] = v.cast<double>();
    }
  }
  return code;
}

pred::ArgValues arg_values(const py::object& args) {
  pred::ArgValues values;
  if (args.is_none()) return values;
  for (const auto& [k, v] : args.cast<py::dict>()) values[py::str(k)] = v.cast<int64_t>();
  return values;
}

// One launch's inputs from Python's arguments: what decide() and scores() both take.
struct Query {
  pred::CodeFeatures code;
  pred::LaunchShape launch;
  pred::ArgValues args;
};
Query query(const py::dict& features, const py::handle& global_size, const py::handle& local_size,
            const py::object& args) {
  return {code_features(features), launch_shape(global_size, local_size), arg_values(args)};
}

pred::Predictor load(const std::string& path, const py::object& platform_id) {
  pred::PredictorOptions options;
  if (!platform_id.is_none()) options.platform_id = platform_id.cast<std::string>();
  return pred::Predictor::load(path, options);
}

}  // namespace

void bind_predictor(py::module_& m) {
  py::register_exception<pred::ModelError>(m, "ModelError", PyExc_ValueError);

  py::class_<pred::Decision>(m, "Decision", "The configuration a model picked for one launch")
      .def_property_readonly(
          "cpu_util", [](const pred::Decision& d) { return d.config.cpu; }, "share of the CPU cores, in [0, 1]")
      .def_property_readonly(
          "gpu_util", [](const pred::Decision& d) { return d.config.gpu; }, "share of the GPU, in [0, 1] (eighths)")
      .def_readonly("predicted", &pred::Decision::predicted,
                    "the model's output for it: normalised performance, or a ranking score")
      .def_readonly("index", &pred::Decision::index, "its position in Predictor.configs")
      .def_readonly("cached", &pred::Decision::cached, "the decision came from the memo")
      .def("__repr__", [](const pred::Decision& d) {
        return "Decision(cpu_util=" + py::repr(py::float_(d.config.cpu)).cast<std::string>() +
               ", gpu_util=" + py::repr(py::float_(d.config.gpu)).cast<std::string>() +
               ", predicted=" + py::repr(py::float_(d.predicted)).cast<std::string>() + ")";
      });

  py::class_<pred::Predictor>(m, "Predictor", "A dop-model/1 file (docs/models.md), evaluated as dop does at launch")
      .def(py::init(&load), py::arg("path"), py::arg("platform_id") = py::none(),
           "Loads a model; with platform_id, a model trained for another platform is refused (ModelError)")
      .def_property_readonly(
          "code_features", [](const pred::Predictor& p) { return p.model().code_keys(); },
          "the code features the model needs, by key (as dop.features() gives them)")
      .def_property_readonly("platform_id", [](const pred::Predictor& p) { return p.model().platform.id; })
      .def_property_readonly(
          "type", [](const pred::Predictor& p) { return p.model().type; }, "dt, rf, gbt, rank or linear")
      .def_property_readonly(
          "output", [](const pred::Predictor& p) { return p.model().output; },
          "normalised_performance, or score (ranking)")
      .def_property_readonly(
          "configs",
          [](const pred::Predictor& p) {
            std::vector<std::pair<double, double>> out;
            for (const auto& c : p.model().configs()) out.emplace_back(c.cpu, c.gpu);
            return out;
          },
          "the grid's (cpu_util, gpu_util) pairs, in the order of scores() and Decision.index")
      .def(
          "decide",
          [](const pred::Predictor& p, const py::dict& features, const py::handle& global_size,
             const py::handle& local_size, const py::object& args) {
            const Query q = query(features, global_size, local_size, args);
            py::gil_scoped_release release;
            return p.decide(q.code, q.launch, q.args);
          },
          py::arg("features"), py::arg("global_size"), py::arg("local_size"), py::arg("args") = py::none(),
          "The best configuration of a launch: code features by key, the NDRange's global and local sizes (an int "
          "or 1-3 ints), the kernel's integer scalar arguments by name (for the features' size expressions)")
      .def(
          "scores",
          [](const pred::Predictor& p, const py::dict& features, const py::handle& global_size,
             const py::handle& local_size, const py::object& args) {
            const Query q = query(features, global_size, local_size, args);
            std::vector<double> s;
            {
              py::gil_scoped_release release;
              s = p.scores(q.code, q.launch, q.args);
            }
            return py::array_t<double>(py::ssize_t(s.size()), s.data());
          },
          py::arg("features"), py::arg("global_size"), py::arg("local_size"), py::arg("args") = py::none(),
          "The model's output for every configuration (NumPy array in the order of configs)");
}

}  // namespace dop::python
