// The Python module dop._dop (python/dop/__init__.py wraps it): one registration function per concern.
#pragma once

#include <pybind11/pybind11.h>

namespace dop::python {

void bind_predictor(pybind11::module_& m);  // predictor.cpp: dop.Predictor, dop.Decision, dop.ModelError
void bind_dataset(pybind11::module_& m);    // dataset.cpp: sweep datasets and code-feature tables as columns
void bind_analysis(pybind11::module_& m);   // analysis.cpp: code features and training (analysis builds)

}  // namespace dop::python
