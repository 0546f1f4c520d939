// dop._dop: the C++ core of the Python package (docs/embedding.md, "Python").
#include "bindings.hpp"

PYBIND11_MODULE(_dop, m) {
  m.doc() = "dop: degree-of-parallelism predictor, datasets and (in an analysis build) code features and training";
  dop::python::bind_predictor(m);
  dop::python::bind_dataset(m);
  dop::python::bind_analysis(m);
}
