// Static code features of OpenCL C kernels (Dopia, PPoPP'22, Table 1, and more), extracted with Clang 15.
//
// This is the narrow public interface of features/: plain structs, no Clang types (the shared Clang front end is
// dop/frontend.hpp). Every feature is defined in docs/features.md; the counting rules there are what the tests check.
//
//   auto r = dop::features::analyze(source, "gemm.cl");
//   for (const auto& k : r.kernels) std::cout << k.name << " " << k.mem_continuous << "\n";
//   std::cout << dop::features::to_json(r, "gemm.cl");
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dop::features {

/// A message from the compiler or from the analysis, with its position (line/column 0 when unknown).
struct Diagnostic {
  enum class Severity { note, warning, error, fatal };
  Severity severity = Severity::error;
  std::string file;
  unsigned line = 0;
  unsigned column = 0;
  std::string message;
  /// "file:line:col: error: message", as compilers print it.
  std::string str() const;
};
const char* severity_name(Diagnostic::Severity s);

/// A kernel argument as declared, with what the kernel does to the memory it points to.
struct ArgInfo {
  std::string name;
  std::string type;  ///< as spelled by Clang, e.g. "__global float *"
  /// Of the pointee for pointers ("global", "constant", "local", "private"); "image" or "sampler" for those types;
  /// "private" for other scalars.
  std::string address_space;
  bool is_pointer = false;
  bool read = false;   ///< the kernel (or a helper it calls) loads through this pointer (or read_image*s it)
  bool write = false;  ///< the kernel stores through it (or write_image*s it); atomics read and write
  /// "read", "write", "read_write", or "none" (never dereferenced; also every scalar argument).
  std::string access() const;
};

/// Static trip count of a loop. The number of iterations is max(0, expr) for the launch-time values of the symbols
/// (kernel scalar arguments by name; launch sizes as global_size_0, local_size_0, num_groups_0, global_offset_0, ...).
struct TripCount {
  enum class Kind { constant, symbolic, unknown };
  Kind kind = Kind::unknown;
  int64_t value = 0;                 ///< when constant
  std::string expr;                  ///< when constant or symbolic: integer expression (dop/expr.hpp)
  std::vector<std::string> symbols;  ///< the names expr uses, sorted
  /// Trip count for the given symbol values; std::nullopt when unknown or a symbol is missing.
  std::optional<int64_t> evaluate(const std::map<std::string, int64_t>& values) const;
};
const char* trip_kind_name(TripCount::Kind k);

struct LoopInfo {
  unsigned line = 0;
  unsigned depth = 1;     ///< 1 for an outermost loop of the kernel (helper functions' loops nest in their call site)
  int parent = -1;        ///< index of the enclosing loop in KernelFeatures::loops, -1 if none
  std::string induction;  ///< the induction variable, empty if none was recognised
  TripCount trip;
  bool divergent = false;  ///< the trip count depends on the work-item id
};

/// Memory footprint (docs/features.md, "Memory footprint"): for every __global/__constant/__local pointer argument, the
/// symbolic byte offsets of all accesses through it, as sums of terms over named atoms, and a range expression per
/// atom, so that a runtime can bound by interval arithmetic the bytes that a range of work-items may touch.
struct FootprintTerm {
  int64_t coef = 0;
  std::vector<std::string> atoms;  ///< the product of these atoms (repeated for powers); empty: the constant coef
};
struct FootprintAccess {
  bool write = false;                ///< store (an atomic gives a read and a write access)
  int64_t bytes = 0;                 ///< size of the access (a whole vector for vloadN/vstoreN)
  std::vector<FootprintTerm> terms;  ///< byte offset from the argument's base pointer: the sum of the terms
  /// Some work-items may not perform it, or not at every value of its atoms: under a condition (if, switch, ?:,
  /// the right of && and ||) other than simple guards, in a loop that may exit early or whose trip count is not
  /// the same for every work-item, or after a return that may be taken (docs/features.md, "Memory footprint").
  bool may = false;
  /// Simple guards the access runs under: it runs for every work-item whose atom (a `get_global_id(d)`) is `<=`
  /// or `>=` the bound, a launch-time expression (`if (i < n)`: <= n-1).
  struct Guard {
    std::string atom, op, bound;
  };
  std::vector<Guard> guards;
};
struct ArgFootprint {
  std::string name;
  bool whole = false;  ///< the accesses cannot be bounded: assume the whole buffer is read and written
  std::string why;     ///< when whole: "file:line: reason"
  std::vector<FootprintAccess> accesses;  ///< when not whole (empty: never accessed)
};
struct Footprint {
  std::vector<ArgFootprint> args;  ///< in argument order, global, constant and local pointer arguments only
  /// Atom name -> [lo, hi] integer expressions (dop/expr.hpp syntax) over kernel scalar arguments,
  /// launch constants (global_size_d, local_size_d, num_groups_d, global_offset_d, work_dim) and the chunk's
  /// gid_lo_d/gid_hi_d, group_lo_d/group_hi_d. Every atom used in a term has one.
  std::map<std::string, std::pair<std::string, std::string>> ranges;
};

/// Features of one kernel. Field names are the stable keys of to_json/to_csv (see feature_keys()).
struct KernelFeatures {
  std::string name;
  std::string file;
  unsigned line = 0;

  // --- Dopia Table 1 (code features) -------------------------------------------------------------------------------
  int64_t mem_constant = 0;    ///< global-memory operations whose address does not change along the innermost loop
  int64_t mem_continuous = 0;  ///< ... changes by one element (the accessed size) per iteration / work-item
  int64_t mem_stride = 0;      ///< ... changes by another constant (or launch-time constant, e.g. a row length)
  int64_t mem_random = 0;      ///< ... depends on a loaded value or is not affine
  int64_t arith_int = 0;       ///< + - * / % (and ++ --, integer mad24/mul24/...) on integer data
  int64_t arith_float = 0;     ///< + - * / (and ++ --) and math builtins on floating-point data

  // --- Beyond Table 1 ------------------------------------------------------------------------------------------------
  int64_t mem_global_loads = 0;   ///< global (and __constant) loads; vloadN counts once
  int64_t mem_global_stores = 0;  ///< global stores; vstoreN counts once
  int64_t mem_global_atomics = 0;
  int64_t mem_constant_space = 0;  ///< of the global operations, those through __constant pointers
  int64_t mem_local_loads = 0;
  int64_t mem_local_stores = 0;
  int64_t mem_local_atomics = 0;
  int64_t mem_private_loads = 0;  ///< loads from private arrays/structs through subscripts or pointers
  int64_t mem_private_stores = 0;
  int64_t image_ops = 0;         ///< read_image* / write_image* calls
  int64_t arith_special = 0;     ///< float math builtins (sqrt, exp, sin, fma, dot, ...), also in arith_float
  int64_t arith_bitwise = 0;     ///< & | ^ ~ << >> on integers (not in arith_int)
  int64_t arith_vector = 0;      ///< arithmetic operations on vector types (also in arith_int/arith_float)
  int64_t vector_width_max = 1;  ///< widest vector type in arithmetic or memory operations (1: scalar only)
  int64_t loops = 0;
  int64_t loop_depth = 0;  ///< deepest loop nest
  int64_t loops_constant_trip = 0;
  int64_t loops_symbolic_trip = 0;
  int64_t loops_unknown_trip = 0;
  int64_t branches = 0;            ///< if, switch and ?: (source occurrences)
  int64_t branches_divergent = 0;  ///< ... whose condition depends on the work-item id
  int64_t barriers = 0;
  int64_t work_dim = 0;        ///< 1 + highest dimension passed to a work-item function (0 if none)
  int64_t args_read_only = 0;  ///< pointer arguments only loaded from
  int64_t args_write_only = 0;
  int64_t args_read_write = 0;
  int64_t calls_inlined = 0;  ///< helper-function calls whose bodies were analysed in place
  /// Estimated bytes of global memory a work-item moves: sum over global operations of the accessed size times the
  /// trip counts of the enclosing loops. Numeric when every trip count is a constant, otherwise see the expression.
  std::optional<double> global_bytes_per_item;
  std::string global_bytes_per_item_expr;  ///< same as an expression; unknown trip counts appear as loop<k>

  std::vector<ArgInfo> args;
  std::vector<LoopInfo> loop_list;
  bool complete = true;  ///< false when the kernel had compile errors or the analysis hit its time limit
  /// Per-argument memory footprint (in to_json as "footprint"; not a model feature, not in to_csv).
  Footprint footprint;

  /// The numeric features in feature_keys() order (null global_bytes_per_item as NaN).
  std::vector<std::pair<std::string, double>> values() const;
};

/// Stable, ordered feature keys: the six Table 1 features verbatim first, then the rest (as in KernelFeatures).
/// The last key, global_bytes_per_item_expr, is a string; all others are numbers.
const std::vector<std::string>& feature_keys();

struct Options {
  /// OpenCL build options as given to clBuildProgram: -D, -U, -I, -cl-std=, -cl-* math flags are honoured.
  std::string build_options;
  /// Analyse only this kernel (all kernels when empty).
  std::string kernel;
  /// Wall-clock limit per kernel for the analysis (and for the parse, of the whole file). 0 = none.
  unsigned time_limit_ms = 2000;
  /// When the source uses unknown type names or undeclared constants (e.g. DATA_TYPE, BLOCK_SIZE defined by build
  /// options elsewhere), parse again with `typedef float NAME;` / `enum { NAME = 16 };`; the constants stay named
  /// symbols in the features (trip count "BLOCK_SIZE"), and a warning says what was assumed.
  bool guess_unknown_types = true;
};

struct AnalysisResult {
  std::vector<KernelFeatures> kernels;
  std::vector<Diagnostic> diagnostics;  ///< compiler errors/fatals and analysis notes, in order
  bool has_errors() const;              ///< any error or fatal diagnostic
  /// The parse or a kernel's analysis hit Options::time_limit_ms: what was not reached is missing (a diagnostic
  /// says where), and the kernels' features are partial.
  bool timed_out = false;
};

/// Parses `source` (named `file_name` in diagnostics and for relative #include) and extracts the features of every
/// kernel. Never throws on bad input: problems become diagnostics and partial features (complete = false).
AnalysisResult analyze(std::string_view source, const std::string& file_name, const Options& options = {});

/// JSON: {"file", "kernels": [{"kernel", "file", "line", "complete", "features": {keys in order}, "args", "loops"}],
/// "diagnostics": [...]}.
std::string to_json(const AnalysisResult& result, const std::string& file_name, int indent = 2);
std::string to_json(const KernelFeatures& kernel, int indent = 2);
/// CSV: header "file,kernel,<feature keys>" and one row per kernel.
std::string csv_header();
std::string to_csv_row(const KernelFeatures& kernel);

}  // namespace dop::features
