// dop expressions: the integer size expressions `dop features` writes (TripCount::expr, global_bytes_per_item_expr,
// footprint ranges) and everyone who needs a size evaluates (the analysis, the predictor at launch, the runtime's
// footprints, the trainer). C++17 only, no other dependency.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace dop::expr {

/// Evaluates an integer expression of `dop features` syntax: integers, names (`s.n` for members), + - * / (C
/// integer division), unary minus, parentheses (nested at most 200 deep). Names are looked up in `values`; throws
/// std::invalid_argument for a syntax error, an unknown name, a division by zero or an overflow. The one evaluator
/// of these expressions: dop features uses it too, so that a size means the same in analysis and at launch.
int64_t evaluate(const std::string& expr, const std::map<std::string, int64_t>& values);

}  // namespace dop::expr
