// The analysis tier from Python (DOP_PYTHON_ANALYSIS): static code features of OpenCL C (dop/features.hpp) and
// training (dop/trainer.hpp, what `dop train` runs). In a runtime-tier build neither is compiled in and
// dop.HAVE_ANALYSIS is False.
#include <pybind11/stl.h>

#include <map>
#include <string>

#include "bindings.hpp"

#if DOP_PYTHON_ANALYSIS
#include "dop/features.hpp"
#include "dop/trainer.hpp"
#endif

namespace py = pybind11;

namespace dop::python {

void bind_analysis(py::module_& m) {
#if DOP_PYTHON_ANALYSIS
  m.attr("HAVE_ANALYSIS") = true;

  m.def(
      "_features_json",
      [](const std::string& source, const std::string& file_name, const std::string& kernel,
         const std::string& build_options) {
        features::Options options;
        options.kernel = kernel;
        options.build_options = build_options;
        py::gil_scoped_release release;
        const auto result = features::analyze(source, file_name, options);
        return features::to_json(result, file_name, -1);
      },
      py::arg("source"), py::arg("file_name"), py::arg("kernel"), py::arg("build_options"),
      "`dop features --json` of an OpenCL C source (its kernels, features and diagnostics)");

  m.def(
      "_train",
      [](const std::string& dataset, const std::string& type, const std::string& platform_id,
         const std::string& features, const std::map<std::string, std::string>& params, uint64_t seed, int gpu_units) {
        train::LoadOptions load;
        load.platform_id = platform_id;
        load.features = features;
        train::TrainOptions options;
        options.type = type;
        options.params = params;
        options.seed = seed;
        options.gpu_units = gpu_units;
        py::gil_scoped_release release;
        const auto data = train::load_dataset(dataset, load);
        return train::train(data, train::all_workloads(data), options).to_json();
      },
      py::arg("dataset"), py::arg("type"), py::arg("platform_id"), py::arg("features"), py::arg("params"),
      py::arg("seed"), py::arg("gpu_units"), "`dop train`: a model trained on every workload of a dataset, as JSON");
#else
  m.attr("HAVE_ANALYSIS") = false;
#endif
}

}  // namespace dop::python
