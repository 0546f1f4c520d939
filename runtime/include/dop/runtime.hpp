// dop runtime: runs one kernel across a CPU and a GPU at a chosen degree of parallelism, with dynamic work
// distribution (Dopia Algorithm 1, adaptive chunks). Runtime tier: OpenCL only.
// The umbrella header of the engine's APIs: configurations (dop/config.hpp), memory modes (dop/memory_mode.hpp),
// footprints (dop/footprint.hpp), the executor (dop/executor.hpp), the program cache (dop/program_cache.hpp), the range
// form (dop/range_form.hpp), and a kernel's forms from bundles or the analysis tier (dop/kernel_forms.hpp).
#pragma once

#include "dop/cl.hpp"
#include "dop/config.hpp"
#include "dop/executor.hpp"
#include "dop/footprint.hpp"
#include "dop/kernel_forms.hpp"
#include "dop/memory_mode.hpp"
#include "dop/predictor.hpp"
#include "dop/program_cache.hpp"
#include "dop/range_form.hpp"
#include "dop/spec.hpp"
